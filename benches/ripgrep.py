"""ripgrep as a bench peer: its own search time for ``rg -c`` on a file, median of 7 runs.

``rg --stats`` reports "seconds spent searching", which leaves out process start and
argument parsing; the figure still includes reading the file (from the page cache).
``rg -c`` counts matching lines and prints the count; it formats no lines.
"""

from __future__ import annotations

import re
import shutil
import statistics
import subprocess
import time
from collections.abc import Callable
from pathlib import Path

RUNS = 7
_SEARCH_TIME = re.compile(rb"^([0-9.]+) seconds spent searching$", re.MULTILINE)


def available() -> bool:
    return shutil.which("rg") is not None


def run_once(path: Path, pattern: str) -> tuple[float, int]:
    """The search time (seconds) of one ``rg -c --stats pattern path``, and its count."""
    # Exit status 1 means no match; the statistics are printed all the same.
    done = subprocess.run(["rg", "-c", "--stats", "--", pattern, str(path)], capture_output=True, check=False)
    if done.returncode not in (0, 1):
        raise RuntimeError(done.stderr.decode(errors="replace"))
    found = _SEARCH_TIME.search(done.stdout)
    if found is None:
        raise RuntimeError(f"no search time in rg --stats output: {done.stdout[-300:]!r}")
    first = done.stdout.split(b"\n", 1)[0].strip()
    return float(found.group(1)), int(first) if done.returncode == 0 and first.isdigit() else 0


def search_time(path: Path, pattern: str, runs: int = RUNS) -> tuple[float, int]:
    """Median of ``runs`` search times (seconds) of ``rg -c --stats pattern path``, and the count."""
    results = [run_once(path, pattern) for _ in range(runs)]
    return statistics.median(t for t, _ in results), results[-1][1]


def paired(path: Path, pattern: str, ours: Callable[[], object], runs: int = RUNS) -> tuple[float, float]:
    """Medians (seconds) of ``runs`` rounds of one ``ours()`` call and one rg search each.

    On a machine shared with other work the load changes within seconds; rounds that
    alternate the two sides put both under the same load, unlike two separate series.
    """
    mine: list[float] = []
    theirs: list[float] = []
    for _ in range(runs):
        start = time.perf_counter()
        ours()
        mine.append(time.perf_counter() - start)
        theirs.append(run_once(path, pattern)[0])
    return statistics.median(mine), statistics.median(theirs)
