"""The 10 MB JSON tool call, ours against the reference, in pairs of fresh processes.

A tool's result is always a fresh object, and a long-lived benchmark process favours whoever
caches best; so each member runs in a process of its own, and the processes alternate
(reference, ours, reference, ours, ...) so that both see the same phases of the machine.

Each child loads the API-records document (``json_shapes``, 10,000,000 bytes compact) with
``json.loads`` before every round, runs the plugin's tool-call hook on it (default options,
in-memory storage, inside a real Agent) and reports the median of its rounds and the growth of
its resident high-water mark during the first round. The parent prints every pair and the
medians: speed is the reference's time over ours, memory is our growth over the bytes stored.

Run: ``python benches/tool_call_pairs.py [--pairs 5] [--rounds 3] [--json OUT]``
(machine otherwise idle).
"""

from __future__ import annotations

import argparse
import statistics

from hook_rounds import add_rounds, api_document, child
from process_bench import parse_args, write_figures

_CHILD = r"""
import sys
sys.path.insert(0, sys.argv[3])
from bench_plugin import _agent, _call, _plugin
from hook_rounds import timed_rounds

member, path, rounds = sys.argv[1], sys.argv[2], int(sys.argv[4])
plugin = _plugin(member)
agent = _agent(plugin)
_call(plugin, agent, [{"json": {"warm": "up " * 50_000}}])  # lazy imports and first-use caches
timed_rounds(path, rounds, lambda content: _call(plugin, agent, content), offloaded=True)
"""


def _child(member: str, path: str, rounds: int) -> dict[str, object]:
    return child(_CHILD, member, path, rounds)


def _options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--pairs", type=int, default=5)
    add_rounds(parser)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(__doc__, argv, _options)
    with api_document() as path:
        pairs = []
        for i in range(args.pairs):
            reference = _child("reference", path, args.rounds)
            ours = _child("native", path, args.rounds)
            ratio = float(reference["median"]) / float(ours["median"])  # type: ignore[arg-type]
            memory = int(ours["growth"]) / int(ours["stored"])  # type: ignore[call-overload]
            pairs.append({"reference": reference, "ours": ours, "ratio": ratio, "ours_peak_over_stored": memory})
            print(
                f"pair {i + 1}: reference {float(reference['median']) * 1e3:.0f} ms, "  # type: ignore[arg-type]
                f"ours {float(ours['median']) * 1e3:.1f} ms, {ratio:.1f}x; "  # type: ignore[arg-type]
                f"our peak growth {memory:.2f}x the stored bytes",
                flush=True,
            )
    summary = {
        "pairs": pairs,
        "median_ratio": statistics.median(p["ratio"] for p in pairs),
        "median_ours_peak_over_stored": statistics.median(p["ours_peak_over_stored"] for p in pairs),
        "max_ours_peak_over_stored": max(p["ours_peak_over_stored"] for p in pairs),
    }
    print(
        f"median {summary['median_ratio']:.1f}x the reference over {len(pairs)} pairs; "
        f"our peak growth {summary['median_ours_peak_over_stored']:.2f}x the stored bytes "
        f"(at most {summary['max_ours_peak_over_stored']:.2f}x)"
    )
    write_figures(args.json, summary)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
