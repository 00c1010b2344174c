"""Storage kept in a process-local dictionary."""

from __future__ import annotations

import builtins
import copy
import threading
from typing import TYPE_CHECKING, Any

from ._keys import normalize_key, normalize_prefix, scope_prefix
from .search.keyword import KeywordSearchStrategy
from .storage import _EPHEMERAL, _NAMESPACED, StorageSearchResult, index_written

if TYPE_CHECKING:
    from .search.types import SearchStrategy

__all__ = ["InMemoryStorage"]


class InMemoryStorage:
    """Keys and bytes in a dictionary: for tests and short-lived processes.

    Nothing survives the process and nothing is evicted. Thread-safe. Carries the SDK's
    "ephemeral" marker, so the SDK knows data stashed here is not durable.

    Args:
        search_strategy: Optional strategy; when set, every write is indexed with it and
            ``search`` uses it instead of the keyword scan.
    """

    _ephemeral = _EPHEMERAL

    def __init__(self, *, search_strategy: SearchStrategy[InMemoryStorage] | None = None) -> None:
        self._search_strategy = search_strategy
        self._prefix = ""
        # Shared by every namespace() copy; each copy only sees the keys under its own _prefix.
        self._lock = threading.Lock()
        self._store: dict[str, bytes] = {}

    @property
    def search_strategy(self) -> SearchStrategy[InMemoryStorage] | None:
        """The strategy given at construction (``None``: ``search`` scans with keyword overlap)."""
        return self._search_strategy

    async def write(self, key: str, data: bytes) -> None:
        """Store a copy of ``data`` under ``key`` (replacing any value), then index it.

        Raises:
            StorageError: For an invalid key, or if indexing fails (the value stays written).
        """
        canonical = normalize_key(key)
        value = bytes(data)
        with self._lock:
            self._store[self._prefix + canonical] = value
        await index_written(self._search_strategy, self, key, canonical, value)

    async def read(self, key: str) -> bytes | None:
        """Return the bytes under ``key`` or ``None``.

        Raises:
            StorageError: For an invalid key.
        """
        full_key = self._prefix + normalize_key(key)
        with self._lock:
            return self._store.get(full_key)

    async def delete(self, key: str) -> None:
        """Remove ``key`` if present.

        Raises:
            StorageError: For an invalid key.
        """
        full_key = self._prefix + normalize_key(key)
        with self._lock:
            self._store.pop(full_key, None)

    async def list(self, query: str = "") -> builtins.list[str]:
        """Return the keys starting with ``query``, relative to this instance, sorted.

        Raises:
            StorageError: For an invalid prefix.
        """
        wanted = self._prefix + normalize_prefix(query)
        cut = len(self._prefix)
        with self._lock:
            matching = [full_key[cut:] for full_key in self._store if full_key.startswith(wanted)]
        matching.sort()
        return matching

    async def search(self, query: str) -> builtins.list[StorageSearchResult]:
        """Rank entries against ``query`` with the configured strategy, else keyword overlap."""
        strategy: Any = self._search_strategy if self._search_strategy is not None else KeywordSearchStrategy()
        results: builtins.list[StorageSearchResult] = await strategy.search(self, query)
        return results

    def namespace(self, prefix: str) -> InMemoryStorage:
        """Return a copy scoped to ``prefix`` that shares entries, lock and strategy.

        The copy (same class, same attributes) lists, searches and scores only its own keys,
        relative to the prefix. An empty prefix gives a copy with this instance's scope.
        """
        scoped = copy.copy(self)
        scoped._prefix = scope_prefix(self._prefix, prefix)
        scoped._namespaced = _NAMESPACED  # type: ignore[attr-defined]
        return scoped

    def clear(self) -> None:
        """Remove every entry this instance can see (all of them for an unscoped instance)."""
        scope = self._prefix
        with self._lock:
            if scope:
                for full_key in [k for k in self._store if k.startswith(scope)]:
                    del self._store[full_key]
            else:
                self._store.clear()

    def _index_location(self) -> str:
        """Identify where this instance's entries live, for strategies that keep their own index."""
        return f"memory:{id(self._store)}:{self._prefix}"
