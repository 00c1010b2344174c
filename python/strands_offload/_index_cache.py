"""A small cache of line indexes, so repeated greps and pages of one stored original skip re-indexing.

Both retrieval tools keep one: the offloader's (``retrieve_offloaded_content``) and the context
manager's (``retrieve_context``). An entry is keyed by reference and remembers the stored bytes
it was built from; it is reused only when the bytes fetched now are the very same (the same
object, or equal content, at the same start), so content rewritten under a reused reference is
never served stale.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable
from typing import Generic, TypeVar

__all__ = ["IndexCache"]

V = TypeVar("V")

_MAX_ENTRIES = 8
_MAX_BYTES = 256 * 1024 * 1024


class IndexCache(Generic[V]):
    """Least-recently-used map from reference to what was built from its stored bytes.

    Safe to share between threads. At most ``max_entries`` entries are kept, and the stored
    bytes they remember add up to at most ``max_bytes``; an original larger than that is indexed
    each time and not kept.

    Args:
        max_entries: How many references to remember.
        max_bytes: Bound on the total size of the remembered stored bytes.
    """

    def __init__(self, max_entries: int = _MAX_ENTRIES, max_bytes: int = _MAX_BYTES) -> None:
        self._entries: OrderedDict[str, tuple[bytes, int, V]] = OrderedDict()
        self._max_entries = max_entries
        self._max_bytes = max_bytes
        self._bytes = 0
        self._lock = threading.Lock()

    def get(self, reference: str, source: bytes, build: Callable[[], V], *, start: int = 0) -> V:
        """What ``build`` makes of ``source``, built once per distinct stored object of ``reference``.

        Args:
            reference: The key the content is stored under.
            source: The stored bytes as the backend returned them.
            build: Makes the value from ``source``; called without the lock held. An exception
                it raises propagates and nothing is cached.
            start: Where the content starts in ``source`` (past a frame header); part of what
                must match for a cached value to be reused.
        """
        with self._lock:
            hit = self._entries.get(reference)
            if hit is not None and hit[1] == start and (hit[0] is source or hit[0] == source):
                # Backends that hand back the stored object itself make this an identity check;
                # the others cost one comparison of the bytes, still cheaper than re-indexing.
                self._entries.move_to_end(reference)
                return hit[2]
        value = build()
        with self._lock:
            self._drop(reference)
            if len(source) <= self._max_bytes:
                self._entries[reference] = (source, start, value)
                self._bytes += len(source)
                while len(self._entries) > self._max_entries or self._bytes > self._max_bytes:
                    self._drop(next(iter(self._entries)))
        return value

    def forget(self, reference: str) -> None:
        """Drop the entry of ``reference`` (its content is being replaced or deleted)."""
        with self._lock:
            self._drop(reference)

    def _drop(self, reference: str) -> None:
        entry = self._entries.pop(reference, None)
        if entry is not None:
            self._bytes -= len(entry[0])
