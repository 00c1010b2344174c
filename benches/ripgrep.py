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
from pathlib import Path

RUNS = 7
_SEARCH_TIME = re.compile(rb"^([0-9.]+) seconds spent searching$", re.MULTILINE)


def available() -> bool:
    return shutil.which("rg") is not None


def search_time(path: Path, pattern: str, runs: int = RUNS) -> tuple[float, int]:
    """Median of ``runs`` search times (seconds) of ``rg -c --stats pattern path``, and the count."""
    times: list[float] = []
    count = 0
    for _ in range(runs):
        # Exit status 1 means no match; the statistics are printed all the same.
        done = subprocess.run(["rg", "-c", "--stats", "--", pattern, str(path)], capture_output=True, check=False)
        if done.returncode not in (0, 1):
            raise RuntimeError(done.stderr.decode(errors="replace"))
        found = _SEARCH_TIME.search(done.stdout)
        if found is None:
            raise RuntimeError(f"no search time in rg --stats output: {done.stdout[-300:]!r}")
        times.append(float(found.group(1)))
        first = done.stdout.split(b"\n", 1)[0].strip()
        count = int(first) if done.returncode == 0 and first.isdigit() else 0
    return statistics.median(times), count
