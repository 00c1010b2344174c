"""Turn a pytest-benchmark JSON report into the README's table of speed ratios.

Usage: ``python benches/ratios.py BENCH.json`` after
``pytest benches --benchmark-group-by=group --benchmark-json=BENCH.json``.
Each row is one group: the reference member's median time divided by each other
member's median time (above 1 means we are faster). Groups that also hold a peer
(the fastest tool we know for the job: an ``orjson`` member, or a ``peer`` and
``peer_median`` in ``extra_info``, such as ripgrep's own search time) get a second
table: our median over the peer's (at most 1 means we are as fast).
``python benches/ratios.py --peers BENCH.json`` prints that table alone. Groups whose
member timed its counterpart in alternate rounds (``extra_info["paired"]``, see
``paired.py``) get one more row, "(alternate rounds)", from those rounds.
"""

from __future__ import annotations

import json
import math
import re
import sys
from collections import defaultdict

# Peers: the fastest tools we know for a job, measured beside us (not the reference).
PEERS = ("orjson", "tiktoken", "ripgrep")
_MEMBERS = (
    "reference",
    "native",
    "native-cached",
    "native-cold",
    "native-str",
    "native-cl100k",
    "bpe-openai",
    *PEERS,
)


def _member(name: str) -> str:
    """The member a benchmark stands for: the leading parameter id, or the name's last word."""
    inside = re.search(r"\[(.*)\]$", name)
    text = inside.group(1) if inside else name.rsplit("_", 1)[-1]
    parts = text.split("-")
    for size in range(len(parts), 0, -1):
        candidate = "-".join(parts[:size])
        if candidate in _MEMBERS:
            return candidate
    return parts[0]


def _paired(report: dict[str, object]) -> dict[str, tuple[str, float, float]]:
    """Per group: the counterpart timed in alternate rounds with our member (``paired.py``),
    its median and ours."""
    found: dict[str, tuple[str, float, float]] = {}
    for bench in report["benchmarks"]:  # type: ignore[attr-defined]
        paired = bench.get("extra_info", {}).get("paired")
        if paired:
            found[bench["group"]] = (str(paired["member"]), float(paired["median"]), bench["stats"]["median"])
    return found


def table(report: dict[str, object]) -> str:
    groups: dict[str, dict[str, float]] = defaultdict(dict)
    for bench in report["benchmarks"]:  # type: ignore[attr-defined]
        member = str(bench.get("extra_info", {}).get("member") or _member(bench["name"]))
        groups[bench["group"]][member] = bench["stats"]["median"]
    paired = {g: p for g, p in _paired(report).items() if p[0] == "reference"}
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
        if group in paired:
            _, theirs, ours = paired[group]
            rows.append(
                f"| {group} (alternate rounds) | {theirs * 1000:.2f} ms | {ours * 1000:.3f} ms | {theirs / ours:.1f}x |"
            )
    return "\n".join(rows)


def peer_table(report: dict[str, object]) -> str:
    """One row per group timed against a peer: our median over the peer's (at most 1: as fast)."""
    medians: dict[str, dict[str, float]] = defaultdict(dict)
    outside: dict[str, tuple[str, float]] = {}
    for bench in report["benchmarks"]:  # type: ignore[attr-defined]
        extra = bench.get("extra_info", {})
        member = str(extra.get("member") or _member(bench["name"]))
        medians[bench["group"]][member] = bench["stats"]["median"]
        if "peer_median" in extra:  # a peer timed outside pytest-benchmark, beside our member
            outside[bench["group"]] = (str(extra["peer"]), float(extra["peer_median"]))
    paired = {g: p for g, p in _paired(report).items() if p[0] in PEERS}
    rows = ["| operation | ours (median) | peer (median) | ours / peer |", "|---|---|---|---|"]
    for group in sorted(medians):
        members = medians[group]
        peers = [(p, members[p]) for p in PEERS if p in members and p != "native"]
        if group in outside:
            peers.append(outside[group])
            members.setdefault("native", next(iter(members.values())))
        ours = members.get("native")
        for peer, theirs in peers:
            if ours is not None:
                rows.append(f"| {group} | {ours * 1000:.3f} ms | {peer} {theirs * 1000:.3f} ms | {ours / theirs:.2f} |")
        if group in paired:
            peer, theirs, mine = paired[group]
            rows.append(
                f"| {group} (alternate rounds) | {mine * 1000:.3f} ms | {peer} {theirs * 1000:.3f} ms"
                f" | {mine / theirs:.2f} |"
            )
    return "\n".join(rows)


def chart(report: dict[str, object], groups: list[str], width: int = 40) -> str:
    """A text bar chart of the native member's ratio for ``groups``, on a log10 scale."""
    medians: dict[str, dict[str, float]] = defaultdict(dict)
    for bench in report["benchmarks"]:  # type: ignore[attr-defined]
        medians[bench["group"]][_member(bench["name"])] = bench["stats"]["median"]
    ratios = {g: medians[g]["reference"] / medians[g]["native"] for g in groups if "native" in medians[g]}
    top = max(math.log10(r) for r in ratios.values())
    label_width = max(len(g) for g in ratios)
    lines = []
    for group, ratio in ratios.items():
        bar = "#" * max(1, round(width * max(math.log10(ratio), 0) / top))
        lines.append(f"{group.ljust(label_width)} {bar} {ratio:,.1f}x")
    return "\n".join(lines)


if __name__ == "__main__":
    if sys.argv[1] == "--peers":
        with open(sys.argv[2], encoding="utf-8") as handle:
            print(peer_table(json.load(handle)))
        sys.exit()
    with open(sys.argv[1], encoding="utf-8") as handle:
        data = json.load(handle)
    print(table(data))
    peers = peer_table(data)
    if peers.count("\n") > 1:
        print()
        print(peers)
    if len(sys.argv) > 2:
        print()
        print(chart(data, sys.argv[2].split(",")))
