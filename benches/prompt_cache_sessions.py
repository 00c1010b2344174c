"""What each context policy costs in billed input, with a simulated provider prompt cache.

The sessions, policies and figures are :mod:`strands_offload.bench.cache_sessions` (also the
prompt-cache table of ``strands-offload bench``); this script prints them per session and can
write them as JSON.

Run: ``python benches/prompt_cache_sessions.py [--shape api|chat|coding ...] [--json OUT]`` (about a minute).
"""

from __future__ import annotations

import argparse
import json
from dataclasses import asdict
from typing import Any

from strands_offload.bench.cache_sessions import POLICIES, SHAPES, run, table


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", help="write the figures to this file")
    parser.add_argument("--shape", choices=sorted(SHAPES), action="append")
    args = parser.parse_args()
    report: dict[str, dict[str, Any]] = {}
    for shape in args.shape or list(SHAPES):
        report[shape] = {policy: run(shape, policy) for policy in POLICIES}
        print(f"\n{shape}\n{table({shape: report[shape]})}")
    if args.json:
        with open(args.json, "w") as out:
            json.dump({shape: {p: asdict(f) for p, f in rows.items()} for shape, rows in report.items()}, out, indent=2)


if __name__ == "__main__":
    main()
