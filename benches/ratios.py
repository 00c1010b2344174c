"""Turn a pytest-benchmark JSON report into the README's table of speed ratios.

Usage: ``python benches/ratios.py BENCH.json`` after
``pytest benches --benchmark-group-by=group --benchmark-json=BENCH.json``.
Each row is one group: the reference member's median time divided by each other
member's median time (above 1 means we are faster).
"""

from __future__ import annotations

import json
import re
import sys
from collections import defaultdict


def _member(name: str) -> str:
    match = re.search(r"\[(.*)\]$", name)
    params = match.group(1).split("-") if match else [name]
    known = ("reference", "native", "native-cached", "native-cold", "native-str", "native-cl100k", "bpe-openai")
    joined = match.group(1) if match else name
    for candidate in sorted(known, key=len, reverse=True):
        if candidate in joined.split("-") or joined.startswith(candidate) or f"-{candidate}" in joined:
            return candidate
    return params[0]


def table(report: dict[str, object]) -> str:
    groups: dict[str, dict[str, float]] = defaultdict(dict)
    for bench in report["benchmarks"]:  # type: ignore[attr-defined]
        member = str(bench.get("extra_info", {}).get("member") or _member(bench["name"]))
        groups[bench["group"]][member] = bench["stats"]["median"]
    rows = ["| operation | reference (median) | ours (median) | ratio |", "|---|---|---|---|"]
    for group in sorted(groups):
        members = groups[group]
        reference = members.get("reference")
        if reference is None:
            continue
        for member, seconds in sorted(members.items()):
            if member == "reference":
                continue
            label = group if member == "native" else f"{group} ({member})"
            rows.append(
                f"| {label} | {reference * 1000:.2f} ms | {seconds * 1000:.3f} ms | {reference / seconds:.1f}x |"
            )
    return "\n".join(rows)


if __name__ == "__main__":
    with open(sys.argv[1], encoding="utf-8") as handle:
        print(table(json.load(handle)))
