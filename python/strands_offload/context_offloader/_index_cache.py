"""A small cache of native line indexes, so repeated greps and pages skip re-indexing.

An entry is reused only when the stored bytes are the very same (identity, or
equal content), so content rewritten under a reused key is never served stale.
"""

from __future__ import annotations

import threading
from collections import OrderedDict

from .. import _native
from ._backend import StoredBlob

_MAX_ENTRIES = 8
_MAX_BYTES = 256 * 1024 * 1024


class IndexCache:
    """Least-recently-used map from reference to ``(bytes, TextIndex)``."""

    def __init__(self, max_entries: int = _MAX_ENTRIES, max_bytes: int = _MAX_BYTES) -> None:
        self._entries: OrderedDict[str, tuple[StoredBlob, _native.TextIndex]] = OrderedDict()
        self._max_entries = max_entries
        self._max_bytes = max_bytes
        self._bytes = 0
        self._lock = threading.Lock()

    def get(self, reference: str, blob: StoredBlob) -> _native.TextIndex:
        """The index of the blob's content, built once per distinct stored object of ``reference``.

        Raises:
            UnicodeDecodeError: When the content is not valid UTF-8.
        """
        with self._lock:
            hit = self._entries.get(reference)
            if hit is not None and _same(hit[0], blob):
                self._entries.move_to_end(reference)
                return hit[1]
        index = _native.TextIndex(blob.raw, blob.offset)
        data = blob.raw
        with self._lock:
            self._drop(reference)
            if len(data) <= self._max_bytes:
                self._entries[reference] = (blob, index)
                self._bytes += len(data)
                while len(self._entries) > self._max_entries or self._bytes > self._max_bytes:
                    oldest = next(iter(self._entries))
                    self._drop(oldest)
        return index

    def forget(self, reference: str) -> None:
        """Drop the entry of ``reference`` (its content is being replaced or deleted)."""
        with self._lock:
            self._drop(reference)

    def _drop(self, reference: str) -> None:
        entry = self._entries.pop(reference, None)
        if entry is not None:
            self._bytes -= len(entry[0].raw)


def _same(cached: StoredBlob, fresh: StoredBlob) -> bool:
    # Backends that hand back the stored object itself make this an identity check;
    # the others cost one comparison of the bytes, still cheaper than re-indexing.
    if cached.raw is fresh.raw:
        return True
    return cached.offset == fresh.offset and cached.content_type == fresh.content_type and cached.raw == fresh.raw
