"""A provider's prompt cache, simulated: the billing double the cache-aware options are measured with.

Requests are the ones strands' own ``BedrockModel`` and ``AnthropicModel`` build (their clients are
stubbed, see :mod:`.stub_clients`), so cache points sit exactly where the SDK puts them. A request
is read as the providers document it: one sequence of blocks (tools, then system, then message
content), with cache points between blocks. Like the providers, the cache:

- stores an entry for the prefix ending at each cache point of a request, when that prefix holds
  at least the minimum cacheable tokens;
- serves the longest live entry the request's prefix matches, looking back from each cache point
  over at most ``lookback`` block boundaries;
- refreshes the lifetime of the entry it serves; entries written or read expire ``ttl`` after;
- bills the served prefix as a cache read, the content from there to the last cache point as a
  cache write, the rest as uncached input.

Its clock is :class:`SimClock`, advanced by the bench or the test. It bills; it does not answer:
the conversation is the real pipeline's, the answers come from a scripted responder.
"""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

# The providers' prices and lifetimes: one table, shared with the context manager's own planning.
from ..context_manager.cache_prices import READ_PRICE, WRITE_PRICES, ttl_seconds

__all__ = [
    "BilledCall",
    "PromptCache",
    "SimClock",
    "Unit",
    "anthropic_units",
    "bedrock_units",
    "chars_over_four",
]


class SimClock:
    """Simulated seconds; callable, so it can stand where the real clock would (``ContextManager(clock=...)``)."""

    def __init__(self, start: float = 0.0) -> None:
        self.now = start

    def __call__(self) -> float:
        """The simulated time, in seconds."""
        return self.now

    def advance(self, seconds: float) -> None:
        """Move the clock forward (never back)."""
        if seconds < 0:
            raise ValueError(f"a clock does not go back ({seconds} s)")
        self.now += seconds


def chars_over_four(text: str) -> int:
    """The fixed token counter: a quarter of the characters of a block's canonical JSON, rounded up."""
    return math.ceil(len(text) / 4)


@dataclass(frozen=True)
class Unit:
    """One block of a request in cache order: its canonical text and, after it, a cache point or not."""

    key: str
    point_ttl: float | None = None  # seconds, when a cache point follows this block


def _canonical(section: str, role: str | None, first: bool, block: Any) -> str:
    return json.dumps([section, role, first, block], sort_keys=True, ensure_ascii=False, default=repr)


def _mark_point(units: list[Unit], ttl: float) -> None:
    """A cache point after the last unit (one before any block marks nothing: no content to cache)."""
    if units:
        units[-1] = Unit(units[-1].key, ttl)


def bedrock_units(request: dict[str, Any]) -> list[Unit]:
    """A Converse request as cache units: ``cachePoint`` entries mark the block before them."""
    units: list[Unit] = []
    for tool in request.get("toolConfig", {}).get("tools", []):
        if "cachePoint" in tool:
            _mark_point(units, ttl_seconds(tool["cachePoint"].get("ttl")))
        else:
            units.append(Unit(_canonical("tools", None, False, tool)))
    for block in request.get("system", []):
        if "cachePoint" in block:
            _mark_point(units, ttl_seconds(block["cachePoint"].get("ttl")))
        else:
            units.append(Unit(_canonical("system", None, False, block)))
    for message in request.get("messages", []):
        first = True
        for block in message["content"]:
            if "cachePoint" in block:
                _mark_point(units, ttl_seconds(block["cachePoint"].get("ttl")))
                continue
            units.append(Unit(_canonical("messages", message["role"], first, block)))
            first = False
    return units


def _anthropic_unit(section: str, role: str | None, first: bool, block: Any) -> Unit:
    if isinstance(block, dict) and "cache_control" in block:
        plain = {key: value for key, value in block.items() if key != "cache_control"}
        return Unit(_canonical(section, role, first, plain), ttl_seconds(block["cache_control"].get("ttl")))
    return Unit(_canonical(section, role, first, block))


def anthropic_units(request: dict[str, Any]) -> list[Unit]:
    """A Messages API request as cache units: a block's ``cache_control`` puts a point after it."""
    units = [_anthropic_unit("tools", None, False, tool) for tool in request.get("tools", [])]
    system = request.get("system", [])
    if isinstance(system, str):
        system = [{"type": "text", "text": system}] if system else []
    units.extend(_anthropic_unit("system", None, False, block) for block in system)
    for message in request.get("messages", []):
        content = message["content"]
        if isinstance(content, str):
            content = [{"type": "text", "text": content}]
        units.extend(
            _anthropic_unit("messages", message["role"], index == 0, block) for index, block in enumerate(content)
        )
    return units


@dataclass
class BilledCall:
    """What one request was billed: input split three ways, and the answer's output tokens.

    ``hour_write`` is the part of ``cache_write`` written under one-hour cache points.
    """

    input_tokens: int
    cache_read: int
    cache_write: int
    hour_write: int = 0
    output_tokens: int = 0
    time: float = 0.0
    label: str = ""

    @property
    def billed(self) -> float:
        """Input in token equivalents: uncached x1, cache write x1.25 (x2 for one hour), read x0.1."""
        five_minutes = self.cache_write - self.hour_write
        return (
            self.input_tokens
            + WRITE_PRICES[300.0] * five_minutes
            + WRITE_PRICES[3600.0] * self.hour_write
            + READ_PRICE * self.cache_read
        )

    @property
    def prompt_tokens(self) -> int:
        """Every input token the request carried, cached or not."""
        return self.input_tokens + self.cache_read + self.cache_write


@dataclass
class _Entry:
    tokens: int
    ttl: float
    expires: float


@dataclass
class PromptCache:
    """The cache and its bill; see the module docstring for the rules.

    Args:
        clock: The simulated clock.
        min_tokens: The smallest prefix the provider caches (1,024 for most Claude models).
        lookback: Block boundaries examined backwards from each cache point (20, as documented).
        count: Tokens of one unit's canonical text.
    """

    clock: SimClock
    min_tokens: int = 1024
    lookback: int = 20
    count: Callable[[str], int] = chars_over_four
    calls: list[BilledCall] = field(default_factory=list)
    _entries: dict[bytes, _Entry] = field(default_factory=dict)

    def bill(self, units: Sequence[Unit], *, output_tokens: int = 0, label: str = "") -> BilledCall:
        """Bill one request, updating the cache as the provider would."""
        now = self.clock()
        self._entries = {key: entry for key, entry in self._entries.items() if entry.expires > now}
        digest = hashlib.sha256()
        hashes: list[bytes] = []
        totals: list[int] = []
        running = 0
        for unit in units:
            encoded = unit.key.encode()
            digest.update(len(encoded).to_bytes(8, "little"))
            digest.update(encoded)
            hashes.append(digest.copy().digest())
            running += self.count(unit.key)
            totals.append(running)
        points = [index for index, unit in enumerate(units) if unit.point_ttl is not None]
        hit = -1
        for point in points:
            for index in range(point, max(-1, point - self.lookback - 1), -1):
                if index > hit and hashes[index] in self._entries:
                    hit = index
                    break
        read = totals[hit] if hit >= 0 else 0
        if hit >= 0:
            entry = self._entries[hashes[hit]]
            entry.expires = now + entry.ttl
        # Written: each segment from the last entry (read or written) to a new one, at that point's lifetime.
        write = hour_write = 0
        covered = read
        for point in points:
            ttl = units[point].point_ttl
            assert ttl is not None
            if point > hit and totals[point] >= self.min_tokens:
                self._entries[hashes[point]] = _Entry(totals[point], ttl, now + ttl)
                segment = totals[point] - covered
                write += segment
                hour_write += segment if ttl > 300.0 else 0
                covered = totals[point]
        call = BilledCall(running - read - write, read, write, hour_write, output_tokens, now, label)
        self.calls.append(call)
        return call

    def live_entries(self) -> int:
        """Entries not yet expired."""
        now = self.clock()
        return sum(1 for entry in self._entries.values() if entry.expires > now)

    def billed(self, label: str | None = None) -> float:
        """Token equivalents billed so far (for calls with ``label`` only, when given)."""
        return sum(call.billed for call in self.calls if label is None or call.label == label)
