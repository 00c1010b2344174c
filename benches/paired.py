"""Rounds that alternate a counterpart with our member, for ratios the machine's phases do not skew.

This machine's CPU speed changes in phases of seconds to minutes that slow every job alike. Two
members benched one after the other can fall in different phases, so their ratio moves by a third
from run to run. Here each timed round of ours is preceded by one round of the counterpart (the
reference or a peer), timed the same way in the ``setup`` of ``benchmark.pedantic``, which
pytest-benchmark leaves out of our timing. Both medians then come from the same stretch of time.
The counterpart's median goes into ``extra_info["paired"]``; ``ratios.py`` prints a row for it
beside the separate-series one.
"""

from __future__ import annotations

import gc
import statistics
import time
from collections.abc import Callable
from typing import Any


class Paired:
    """Times ``run(prepare())`` once per call; ``prepare`` (untimed) builds its fresh input."""

    def __init__(self, member: str, prepare: Callable[[], Any], run: Callable[[Any], object]) -> None:
        self.member = member
        self.prepare = prepare
        self.run = run
        self.seconds: list[float] = []

    def round(self) -> None:
        argument = self.prepare()
        gc.collect(0)  # as before our timed call: the input's building is not the counterpart's
        start = time.perf_counter()
        self.run(argument)
        self.seconds.append(time.perf_counter() - start)
        del argument

    def record(self, benchmark: Any, rounds: int) -> None:
        """Keeps the median of the last ``rounds`` (the warm-up round is left out) in ``extra_info``."""
        if benchmark.stats is None:  # --benchmark-disable: nothing was timed
            return
        kept = self.seconds[-rounds:]
        benchmark.extra_info["paired"] = {"member": self.member, "median": statistics.median(kept), "rounds": len(kept)}
