"""``json_dumps`` against orjson on the six 10 MB shapes, each shape in processes of its own.

In one long benchmark process the ratio of a shape moved by more than the 1.2 bar depending on
which shapes ran before it (the allocator's state: where the freshly loaded objects land). So here
every process runs one shape only: it reads the shape's compact text, and each round loads it with
``json.loads`` twice, one fresh object for orjson and one for ours, the two timed in alternate order
round by round (``paired.py``'s idea, inside one process). A process reports the median of its
per-round ratios (ours over orjson) and of each member's times; the parent runs ``--processes``
of them per shape, shapes interleaved, and prints the medians over processes.

Run: ``python benches/json_shape_processes.py [--processes 5] [--rounds 7] [--json OUT]``
(machine otherwise idle; orjson from the test extra).
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys

from json_shapes import SHAPES
from process_bench import parse_args, shape_files, write_figures

LAYOUTS = {"compact": None, "indent2": 2}

_CHILD = r"""
import gc, json, statistics, sys, time
import orjson
from strands_offload._native import json_dumps

path, rounds = sys.argv[1], int(sys.argv[2])
with open(path, encoding="utf-8") as f:
    text = f.read()
figures = {}
for layout, indent in (("compact", None), ("indent2", 2)):
    option = orjson.OPT_INDENT_2 if indent else 0
    members = {
        "orjson": lambda value: orjson.dumps(value, option=option),
        "ours": lambda value: json_dumps(value, indent=indent),
    }
    seconds = {"orjson": [], "ours": []}
    for i in range(rounds + 1):  # the first round warms up
        order = ("orjson", "ours") if i % 2 else ("ours", "orjson")
        for member in order:
            value = json.loads(text)
            gc.collect()
            start = time.perf_counter()
            members[member](value)
            elapsed = time.perf_counter() - start
            del value
            if i:
                seconds[member].append(elapsed)
    ratios = [o / p for o, p in zip(seconds["ours"], seconds["orjson"])]
    figures[layout] = {
        "ratio": statistics.median(ratios),
        "ours": statistics.median(seconds["ours"]),
        "orjson": statistics.median(seconds["orjson"]),
    }
print(json.dumps(figures))
"""


def _child(path: str, rounds: int) -> dict[str, dict[str, float]]:
    out = subprocess.run(
        [sys.executable, "-c", _CHILD, path, str(rounds)], check=True, capture_output=True, text=True
    ).stdout
    figures: dict[str, dict[str, float]] = json.loads(out.strip().splitlines()[-1])
    return figures


def _options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--processes", type=int, default=5, help="processes per shape")
    parser.add_argument("--rounds", type=int, default=7, help="timed rounds per member, layout and process")
    parser.add_argument("--shapes", nargs="*", help="a subset of the shapes (default: all six)")


def main(argv: list[str] | None = None) -> int:
    args = parse_args(__doc__, argv, _options)
    shapes = args.shapes or list(SHAPES)
    with shape_files(shapes) as paths:
        runs: dict[str, list[dict[str, dict[str, float]]]] = {shape: [] for shape in shapes}
        for i in range(args.processes):
            for shape in shapes if i % 2 == 0 else reversed(shapes):
                runs[shape].append(_child(paths[shape], args.rounds))

    summary: dict[str, dict[str, dict[str, object]]] = {}
    for shape in shapes:
        summary[shape] = {}
        cells = []
        for layout in LAYOUTS:
            ratios = [run[layout]["ratio"] for run in runs[shape]]
            ratio = statistics.median(ratios)
            ours = statistics.median(run[layout]["ours"] for run in runs[shape])
            peer = statistics.median(run[layout]["orjson"] for run in runs[shape])
            summary[shape][layout] = {"ratio": ratio, "ratios": ratios, "ours": ours, "orjson": peer}
            by_process = " ".join(f"{r:.2f}" for r in ratios)
            cells.append(
                f"{layout} {ratio:.2f} (ours {ours * 1e3:.1f} ms, orjson {peer * 1e3:.1f} ms; by process {by_process})"
            )
        print(f"{shape}: " + "; ".join(cells), flush=True)
    write_figures(args.json, summary)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
