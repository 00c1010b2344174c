"""Per-agent bookkeeping of what the offloader stored: when each entry was last used.

Entries in unified storage are deleted ``evict_after_cycles`` agent cycles after they were last
stored or retrieved. The record of cycles lives as long as its agent (weak keys), as does each
agent's handle table; the table's stored copy outlives both (see ``_handles``).
"""

from __future__ import annotations

import weakref
from collections.abc import Callable, Iterable
from typing import Any, Generic, TypeVar

_T = TypeVar("_T")


class UseRecord:
    """Reference -> cycle of last use, per agent."""

    def __init__(self) -> None:
        self._cycles: weakref.WeakKeyDictionary[Any, dict[str, int]] = weakref.WeakKeyDictionary()

    def touch(self, agent: Any, reference: str, cycle: int) -> None:
        """Record that ``agent`` stored or read ``reference`` in ``cycle``."""
        self._cycles.setdefault(agent, {})[reference] = cycle

    def stale(self, agent: Any, cycle: int, keep_cycles: int) -> list[str]:
        """References of ``agent`` last used before ``cycle - keep_cycles``, oldest record first."""
        tracked = self._cycles.get(agent)
        if not tracked:
            return []
        oldest_kept = cycle - keep_cycles
        return [reference for reference, used in tracked.items() if used < oldest_kept]

    def forget(self, agent: Any, references: Iterable[str]) -> None:
        """Stop tracking ``references`` (they were deleted)."""
        tracked = self._cycles.get(agent)
        if tracked is not None:
            for reference in references:
                tracked.pop(reference, None)


class PerAgent(Generic[_T]):
    """One lazily built value per agent, dropped with the agent."""

    def __init__(self, build: Callable[[Any], _T]) -> None:
        self._build = build
        self._values: weakref.WeakKeyDictionary[Any, _T] = weakref.WeakKeyDictionary()

    def get(self, agent: Any) -> _T:
        """The value for ``agent``, built on first use."""
        value = self._values.get(agent)
        if value is None:
            value = self._build(agent)
            self._values[agent] = value
        return value

    def __contains__(self, agent: object) -> bool:
        return agent in self._values
