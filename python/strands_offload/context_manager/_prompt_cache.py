"""What the manager knows of the provider's prompt cache: the state behind ``cache_aware`` and ``cache_aligned``.

With a ``cache_config``, the SDK's Bedrock and Anthropic models end each request's cached prefix at
the last user message (one cache point there). So every request the agent sends leaves a cache
entry covering the messages up to its last user message, alive for the configured lifetime (five
minutes, or an hour) after it was written or last read. A :class:`CacheView` keeps, per agent, the
entries still alive and whether the conversation still starts with them: the same message objects
holding the same block objects (our strategies replace blocks, never edit them in place).

The clock counts the time the system spends suspended, as the provider's cache lifetime does
(``CLOCK_BOOTTIME`` where the platform has it, else wall time that never goes back); simulations
swap it with :func:`set_clock`.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from .. import _seam
from .._ledger import PerAgent
from .._native import has_cache_point
from ._edits import caching_by_config, model_config

__all__ = ["READ_PRICE", "WRITE_PRICES", "CacheView", "cache_view", "caching", "lifetime", "set_clock", "ttl_seconds"]

#: Token equivalents the providers bill for a cached token read, and for one written, by lifetime (seconds).
READ_PRICE = 0.1
WRITE_PRICES = {300.0: 1.25, 3600.0: 2.0}
_TTL_SECONDS = {"5m": 300.0, "1h": 3600.0}


def _forward_wall_clock() -> Callable[[], float]:
    """Wall time that never goes back: a step back of the system clock reads as no time passing."""
    last = float("-inf")
    lock = threading.Lock()

    def clock() -> float:
        nonlocal last
        now = time.time()
        with lock:
            last = max(last, now)
            return last

    return clock


def _suspend_counting_clock() -> Callable[[], float]:
    """Seconds that go on while the system is suspended (``time.monotonic`` stops, a cache entry ages on)."""
    boottime = getattr(time, "CLOCK_BOOTTIME", None)
    if boottime is not None:
        try:
            time.clock_gettime(boottime)
        except OSError:
            pass  # declared, but refused by this kernel
        else:

            def clock() -> float:
                return time.clock_gettime(boottime)

            return clock
    return _forward_wall_clock()


_clock: Callable[[], float] = _suspend_counting_clock()


def set_clock(clock: Callable[[], float]) -> Callable[[], float]:
    """Read time from ``clock`` from now on; returns the clock it replaces."""
    global _clock
    previous, _clock = _clock, clock
    return previous


def _cache_config(model: Any) -> Any:
    config = model_config(model)
    return config.get("cache_config") if config is not None else None


def ttl_seconds(ttl: Any) -> float:
    """Seconds a cache entry lives unread under a cache point's ``ttl``: an hour for ``"1h"``, else five minutes."""
    return _TTL_SECONDS.get(str(ttl), 300.0) if ttl else 300.0


def lifetime(model: Any) -> float:
    """Seconds a cache entry of ``model``'s requests lives unread (its ``cache_config.ttl``)."""
    return ttl_seconds(getattr(_cache_config(model), "ttl", None))


def write_price(model: Any) -> float:
    """Token equivalents of a written token under ``model``'s lifetime."""
    return WRITE_PRICES[lifetime(model)]


def caching(model: Any, messages: Sequence[Any]) -> bool:
    """Whether ``model`` has prompt caching configured (by config, or a ``cachePoint`` block)."""
    return caching_by_config(model) or has_cache_point(list(messages))


def places_message_points(model: Any) -> bool:
    """Whether the model puts a cache point at each request's last user message.

    That is a ``cache_config`` it acts on: Bedrock's ``"auto"`` places none for a model without
    automatic caching.
    """
    return _cache_config(model) is not None and _seam.places_cache_points(model) is not False


def _last_user(messages: Sequence[Any]) -> int:
    return next((i for i in range(len(messages) - 1, -1, -1) if messages[i]["role"] == "user"), -1)


@dataclass
class _Entry:
    """A cached prefix: the messages up to a request's last user message, with their blocks then."""

    messages: list[Any]
    blocks: list[list[Any]]
    used: float  # when it was written or last read

    def starts(self, messages: Sequence[Any]) -> bool:
        """Whether ``messages`` still begin with this prefix, unedited."""
        if len(messages) < len(self.messages):
            return False
        for then, blocks, now in zip(self.messages, self.blocks, messages, strict=False):
            content = now["content"]
            if (
                now is not then
                or len(content) != len(blocks)
                or any(a is not b for a, b in zip(content, blocks, strict=True))
            ):
                return False
        return True


@dataclass
class CacheView:
    """The live cache entries of one agent's requests, and the bookkeeping of the current pipeline run."""

    ttl: float = 300.0
    entries: list[_Entry] = field(default_factory=list)
    last_call: float | None = None
    sent_tokens: int | None = None
    growth: list[int] = field(default_factory=list)
    #: This run edited a cached prefix (the cache is paid for again: pending edits may as well apply).
    broken: bool = False
    #: Strategies that left edits of the cached prefix pending during this run.
    deferred: list[Any] = field(default_factory=list)

    def _live(self) -> list[_Entry]:
        now = _clock()
        self.entries = [entry for entry in self.entries if now - entry.used < self.ttl]
        return self.entries

    def begin_run(self, tokens: int | None) -> None:
        """A pipeline run starts with the conversation at ``tokens``: note the growth since the last request."""
        self.broken = False
        self.deferred = []
        if tokens is not None and self.sent_tokens is not None and tokens >= self.sent_tokens:
            self.growth.append(tokens - self.sent_tokens)

    def sent(self, messages: Sequence[Any], tokens: int | None, *, places_points: bool) -> None:
        """A request with ``messages`` goes out: it reads the longest entry it starts with and writes its own."""
        now = _clock()
        # An entry the conversation no longer starts with can never be read again.
        matching = self.entries = [entry for entry in self._live() if entry.starts(messages)]
        if matching:
            max(matching, key=lambda entry: len(entry.messages)).used = now
        end = _last_user(messages) if places_points else -1
        if end >= 0:
            prefix = list(messages[: end + 1])
            known = next((entry for entry in matching if len(entry.messages) == len(prefix)), None)
            if known is None:
                self.entries.append(_Entry(prefix, [list(m["content"]) for m in prefix], now))
        self.last_call = now
        self.sent_tokens = tokens

    def cold(self) -> bool:
        """Whether the lifetime passed since the last request (nothing of ours is cached any more)."""
        return self.last_call is None or _clock() - self.last_call >= self.ttl

    def live_points(self, messages: Sequence[Any]) -> list[int]:
        """Indexes of the messages that end a live entry ``messages`` still start with, ascending."""
        return sorted({len(entry.messages) - 1 for entry in self._live() if entry.starts(messages)})

    def cached_end(self, messages: Sequence[Any]) -> int:
        """The index of the last message inside the cached prefix (-1: nothing cached)."""
        points = self.live_points(messages)
        return points[-1] if points else -1

    def growth_per_call(self) -> float | None:
        """Mean tokens the conversation grew by between two requests (``None`` before two requests)."""
        return sum(self.growth) / len(self.growth) if self.growth else None


_VIEWS = PerAgent()


def cache_view(agent: Any) -> CacheView:
    """The agent's view (made on first use, with the lifetime of its model's cache)."""
    view: CacheView | None = _VIEWS.get(agent)
    if view is None:
        view = CacheView(ttl=lifetime(agent.model))
        _VIEWS.set(agent, view)
    return view


def known_view(agent: Any) -> CacheView | None:
    """The agent's view when the manager keeps one (a strategy of it uses a cache option), else ``None``."""
    view: CacheView | None = _VIEWS.get(agent)
    return view
