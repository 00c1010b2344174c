"""What the manager knows of the provider's prompt cache: the state behind ``cache_aware`` and ``cache_aligned``.

With a ``cache_config``, the SDK's Bedrock and Anthropic models end each request's cached prefix at
the last user message (one cache point there). So every request the agent sends leaves a cache
entry covering the messages up to its last user message, alive for the configured lifetime (five
minutes, or an hour) after it was written or last read. A :class:`CacheView` keeps, per agent, the
entries still alive and whether the conversation still starts with them: the same message objects
holding the same objects down to the strings (see :class:`CacheView`).

The clock counts the time the system spends suspended, as the provider's cache lifetime does
(``CLOCK_BOOTTIME`` where the platform has it, else wall time that never goes back); simulations
give theirs as ``ContextManager(clock=...)``.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from .. import _seam
from ._edits import model_config, prompt_cached

__all__ = [
    "READ_PRICE",
    "WRITE_PRICES",
    "CacheView",
    "caching",
    "known_view",
    "lifetime",
    "suspend_counting_clock",
    "ttl_seconds",
]

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


def suspend_counting_clock() -> Callable[[], float]:
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
    return prompt_cached(model, messages)


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
    """A cached prefix: the messages up to index ``end`` (a request's last user message) as that request sent them."""

    end: int
    used: float  # when it was written or last read


class CacheView:
    """The live cache entries of one agent's requests (the manager keeps one per agent).

    Which entries the conversation still starts with is not checked block by block: every entry
    the view keeps is a prefix of the last request (a request drops the entries it does not start
    with), and the agent's :class:`~._run.Changes` say how many leading messages are unchanged since
    that request (the run's identity pass, which sees a change that did not come through the
    pipeline too, and the journal of the run's own edits). An entry is still readable when it ends
    before them.

    Args:
        ttl: Seconds an entry lives unread.
        clock: Seconds that go on while the system is suspended (the manager's ``clock=``).
        changes: The agent's change log (``_run.Changes``).
    """

    def __init__(self, ttl: float, clock: Callable[[], float], changes: Any) -> None:
        self.ttl = ttl
        self.clock = clock
        self.changes = changes
        self.entries: list[_Entry] = []
        self.last_call: float | None = None
        self.sent_tokens: int | None = None
        self.growth: list[int] = []
        self._sent_epoch = 0
        self._oldest = float("inf")  # no entry was used earlier than this (a bound: reads only raise it)

    @property
    def unchanged(self) -> int:
        """How many leading messages are still as the last request sent them."""
        return int(self.changes.stable_since(self._sent_epoch))

    def _live(self) -> list[_Entry]:
        entries = self.entries
        if entries and self.clock() - self._oldest >= self.ttl:
            now = self.clock()
            entries = self.entries = [entry for entry in entries if now - entry.used < self.ttl]
            self._oldest = min((entry.used for entry in entries), default=float("inf"))
        return entries

    def begin_run(self, tokens: int | None) -> None:
        """A pipeline run starts with the conversation's messages at ``tokens``: note the growth."""
        if tokens is not None and self.sent_tokens is not None and tokens >= self.sent_tokens:
            self.growth.append(tokens - self.sent_tokens)

    def sent(self, messages: list[Any], tokens: int | None, *, places_points: bool) -> None:
        """A request with ``messages`` goes out: it reads the longest entry it starts with and writes its own."""
        now = self.clock()
        unchanged = self.unchanged
        # An entry the conversation no longer starts with can never be read again.
        matching = self.entries = [entry for entry in self._live() if entry.end < unchanged]
        if matching:
            max(matching, key=lambda entry: entry.end).used = now
        end = _last_user(messages) if places_points else -1
        if end >= 0 and not any(entry.end == end for entry in matching):
            self.entries.append(_Entry(end, now))
            if len(self.entries) > 1 and self.entries[-2].end > end:
                self.entries.sort(key=lambda entry: entry.end)  # kept in the order of their ends
        self._oldest = min((entry.used for entry in self.entries), default=float("inf"))
        self._sent_epoch = self.changes.epoch()
        self.last_call = now
        self.sent_tokens = tokens

    def cold(self) -> bool:
        """Whether the lifetime passed since the last request (nothing of ours is cached any more)."""
        return self.last_call is None or self.clock() - self.last_call >= self.ttl

    def live_points(self, messages: Sequence[Any] | None = None) -> list[int]:
        """Indexes of the messages that end a live entry the conversation still starts with, ascending."""
        unchanged = self.unchanged
        return sorted({entry.end for entry in self._live() if entry.end < unchanged})

    def cached_end(self, messages: Sequence[Any] | None = None) -> int:
        """The index of the last message inside the cached prefix (-1: nothing cached)."""
        unchanged = self.unchanged
        for entry in reversed(self._live()):  # in the order of their ends: the first that fits is the last
            if entry.end < unchanged:
                return entry.end
        return -1

    def growth_per_call(self) -> float | None:
        """Mean tokens the conversation grew by between two requests (``None`` before two requests)."""
        return sum(self.growth) / len(self.growth) if self.growth else None


def known_view(agent: Any) -> CacheView | None:
    """The agent's view when its context manager keeps one (a strategy of it uses a cache option), else ``None``."""
    views = getattr(getattr(agent, "context_manager", None), "cache_view_of", None)
    view: CacheView | None = views(agent) if callable(views) else None
    return view
