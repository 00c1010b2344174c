"""Measure what a process pays before strands-offload answers: import time and first calls.

Each figure is the median over fresh interpreter processes (default 7), so caches of a previous
run cannot help: ``import strands_offload`` (wall time inside the process), then the first
``count_tokens`` call of each encoding (which builds that encoding's tables). Run it with the
interpreter whose installed strands-offload you want to measure::

    python tools/measure_startup.py [--runs 7]
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys

_PROBE = r"""
import json, time
t0 = time.perf_counter()
import strands_offload
t1 = time.perf_counter()
out = {"import": t1 - t0}
for encoding in ("cl100k_base", "o200k_base"):
    t = time.perf_counter()
    strands_offload.count_tokens("The quick brown fox jumps over the lazy dog.", encoding)
    out[encoding] = time.perf_counter() - t
    t = time.perf_counter()
    strands_offload.count_tokens("The quick brown fox jumps over the lazy dog.", encoding)
    out[encoding + " again"] = time.perf_counter() - t
print(json.dumps(out))
"""


def main() -> None:
    """Print the median of each figure in milliseconds."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runs", type=int, default=7)
    runs = parser.parse_args().runs
    samples: dict[str, list[float]] = {}
    for _ in range(runs):
        done = subprocess.run([sys.executable, "-c", _PROBE], check=True, capture_output=True, text=True)
        for name, seconds in json.loads(done.stdout).items():
            samples.setdefault(name, []).append(seconds * 1000)
    for name, values in samples.items():
        print(f"{name:22s} {statistics.median(values):8.2f} ms  (median of {runs})")


if __name__ == "__main__":
    main()
