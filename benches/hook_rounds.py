"""What the process-pair benches of the 10 MB JSON tool call share: the child's timed rounds, the
parent's call of one child, its ``--rounds`` option and the document on disk (``tool_call_pairs.py``,
``hook_dump_pairs.py``).

A child loads the document afresh with ``json.loads`` before every round, restarts the resident
high-water mark, times one call, and reports the median of its rounds and the high-water growth of
the first round beside the bytes stored (the document's ``indent=2`` text).
"""

from __future__ import annotations

import argparse
import gc
import json
import statistics
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from process_bench import shape_files

HERE = Path(__file__).parent


def high_water_mark() -> int:
    """This process's resident high-water mark in bytes (``VmHWM``)."""
    with open("/proc/self/status") as status:
        line = next(line for line in status if line.startswith("VmHWM:"))
    return int(line.split()[1]) * 1024


def timed_rounds(path: str, rounds: int, run: Callable[[list[dict[str, Any]]], Any], offloaded: bool) -> None:
    """Time ``run`` on a fresh ``[{"json": document}]`` per round and print the figures as JSON.

    ``offloaded``: each result must be the plugin's offload notice (a hook, not a bare dump).
    """
    with open(path, encoding="utf-8") as f:
        text = f.read()
    seconds: list[float] = []
    growth = stored = None
    for _ in range(rounds):
        content = [{"json": json.loads(text)}]
        gc.collect()
        with open("/proc/self/clear_refs", "w") as refs:
            refs.write("5")  # the high-water mark restarts from the current resident size
        before = high_water_mark()
        start = time.perf_counter()
        result = run(content)
        seconds.append(time.perf_counter() - start)
        if growth is None:
            growth = high_water_mark() - before
            stored = len(json.dumps(content[0]["json"], indent=2).encode())
        if offloaded:
            notice = result["content"][0]["text"]
            assert notice.startswith("[Offloaded: 1 blocks, ~"), notice[:80]
        del content, result
    print(json.dumps({"median": statistics.median(seconds), "seconds": seconds, "growth": growth, "stored": stored}))


def child(script: str, member: str, path: str, rounds: int) -> dict[str, Any]:
    """Run ``script`` in a fresh interpreter for ``member`` and return the figures it printed."""
    out = subprocess.run(
        [sys.executable, "-c", script, member, path, str(HERE), str(rounds)],
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    figures: dict[str, Any] = json.loads(out.strip().splitlines()[-1])
    return figures


def add_rounds(parser: argparse.ArgumentParser) -> None:
    """The ``--rounds`` option: how many rounds each child times."""
    parser.add_argument("--rounds", type=int, default=3, help="rounds per process (each on a fresh document)")


@contextmanager
def api_document() -> Iterator[str]:
    """The path of the API-records document (``json_shapes``' ``api``, compact) the children load."""
    with shape_files(["api"]) as files:
        yield files["api"]
