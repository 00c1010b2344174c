"""The cache view's clock counts suspended time: CLOCK_BOOTTIME where it exists, else wall time that never goes back."""

from __future__ import annotations

import sys
import time
from collections.abc import Iterator
from typing import Any

import pytest
from strands_offload.context_manager import ContextManager, _prompt_cache


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="CLOCK_BOOTTIME is Linux's")
def test_the_default_clock_reads_clock_boottime_on_linux(monkeypatch: pytest.MonkeyPatch) -> None:
    clock = ContextManager()._clock  # a manager's clock when none is given
    before = time.clock_gettime(time.CLOCK_BOOTTIME)
    now = clock()
    after = time.clock_gettime(time.CLOCK_BOOTTIME)
    assert before <= now <= after

    read: list[int] = []
    real = time.clock_gettime

    def recording(clock_id: int) -> float:
        read.append(clock_id)
        return real(clock_id)

    monkeypatch.setattr(time, "clock_gettime", recording)
    clock()
    assert read == [time.CLOCK_BOOTTIME]  # not CLOCK_MONOTONIC, which stops during a suspend


def _wall_times(monkeypatch: pytest.MonkeyPatch, values: list[float]) -> None:
    feed: Iterator[float] = iter(values)
    monkeypatch.setattr(time, "time", lambda: next(feed))


def test_the_fallback_never_goes_back_when_the_wall_clock_does(monkeypatch: pytest.MonkeyPatch) -> None:
    clock = _prompt_cache._forward_wall_clock()
    _wall_times(monkeypatch, [100.0, 105.0, 90.0, 95.0, 104.0, 110.0, 50.0, 111.5])
    readings = [clock() for _ in range(8)]
    assert readings == [100.0, 105.0, 105.0, 105.0, 105.0, 110.0, 110.0, 111.5]
    assert all(a <= b for a, b in zip(readings, readings[1:], strict=False))


@pytest.mark.parametrize("how", ["missing", "refused"])
def test_without_clock_boottime_the_wall_clock_is_read(monkeypatch: pytest.MonkeyPatch, how: str) -> None:
    if how == "missing":
        monkeypatch.delattr(time, "CLOCK_BOOTTIME", raising=False)
    else:

        def refused(clock_id: Any) -> float:
            raise OSError(22, "Invalid argument")

        monkeypatch.setattr(time, "CLOCK_BOOTTIME", 7, raising=False)
        monkeypatch.setattr(time, "clock_gettime", refused)
    clock = _prompt_cache.suspend_counting_clock()
    _wall_times(monkeypatch, [1_000.0, 999.0, 1_300.0])
    assert [clock(), clock(), clock()] == [1_000.0, 1_000.0, 1_300.0]
