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
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).parent

_CHILD = r"""
import asyncio, gc, json, statistics, sys, time
sys.path.insert(0, sys.argv[3])
from bench_plugin import _agent, _call, _plugin

member, path, rounds = sys.argv[1], sys.argv[2], int(sys.argv[4])
with open(path, encoding="utf-8") as f:
    text = f.read()

def high_water_mark():
    with open("/proc/self/status") as status:
        line = next(line for line in status if line.startswith("VmHWM:"))
    return int(line.split()[1]) * 1024

plugin = _plugin(member)
agent = _agent(plugin)
_call(plugin, agent, [{"json": {"warm": "up " * 50_000}}])  # lazy imports and first-use caches
seconds, growth, stored = [], None, None
for i in range(rounds):
    content = [{"json": json.loads(text)}]
    gc.collect()
    with open("/proc/self/clear_refs", "w") as refs:
        refs.write("5")  # the high-water mark restarts from the current resident size
    before = high_water_mark()
    start = time.perf_counter()
    result = _call(plugin, agent, content)
    seconds.append(time.perf_counter() - start)
    if growth is None:
        growth = high_water_mark() - before
        stored = len(json.dumps(content[0]["json"], indent=2).encode())
    assert result["content"][0]["text"].startswith("[Offloaded: 1 blocks, ~"), result["content"][0]["text"][:80]
    del content, result
print(json.dumps({"median": statistics.median(seconds), "seconds": seconds, "growth": growth, "stored": stored}))
"""


def _child(member: str, path: str, rounds: int) -> dict[str, object]:
    out = subprocess.run(
        [sys.executable, "-c", _CHILD, member, path, str(HERE), str(rounds)],
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    figures: dict[str, object] = json.loads(out.strip().splitlines()[-1])
    return figures


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pairs", type=int, default=5)
    parser.add_argument("--rounds", type=int, default=3, help="rounds per process (each on a fresh document)")
    parser.add_argument("--json", help="write the figures here")
    args = parser.parse_args(argv)

    sys.path.insert(0, str(HERE))
    from json_shapes import build_shape

    with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False, encoding="utf-8") as f:
        json.dump(build_shape("api"), f)
        path = f.name
    try:
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
    finally:
        os.unlink(path)
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
    if args.json:
        Path(args.json).write_text(json.dumps(summary, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
