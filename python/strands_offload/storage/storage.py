"""The unified ``Storage`` protocol, its search result type and the generic namespaced view.

Interoperability with strands: the SDK recognises "already namespaced" and "ephemeral" storage by
comparing two sentinel objects by identity. This module uses the SDK's own sentinels (taken from
``strands.storage.storage`` through ``strands_offload._seam``) so the SDK's ``Agent(storage=...)``,
context manager, session manager and memory stores treat these backends exactly like their built-in
ones. ``StorageSearchResult`` is the SDK's own dataclass for the same reason: results compare equal
across both packages and code that builds or inspects them keeps working. Errors are the SDK's ``StorageError``.
"""

from __future__ import annotations

import builtins
from typing import Any, Protocol, runtime_checkable

from strands.storage.storage import StorageSearchResult
from strands.types.exceptions import StorageError
from typing_extensions import TypeVar

from .. import _seam
from ._keys import normalize_key, normalize_prefix

__all__ = ["ListQuery", "SearchQuery", "Storage", "StorageError", "StorageSearchResult"]

ListQuery = TypeVar("ListQuery", default=str, contravariant=True)
SearchQuery = TypeVar("SearchQuery", default=str, contravariant=True)

#: Markers carried by storage already scoped to a namespace, and by storage whose data does not
#: outlive the process: the SDK's own objects, taken through the seam module.
_NAMESPACED, _EPHEMERAL = _seam.storage_markers()


def is_namespaced(storage: object) -> bool:
    """Whether ``storage`` is already scoped to a namespace (it carries the SDK's marker)."""
    return getattr(storage, "_namespaced", None) is _NAMESPACED


def is_ephemeral(storage: object) -> bool:
    """Whether what ``storage`` holds is lost with the process (it carries the SDK's marker)."""
    return getattr(storage, "_ephemeral", None) is _EPHEMERAL


# Same names as the reference's private helpers, so code importing them by path keeps working.
_normalize_key = normalize_key
_normalize_prefix = normalize_prefix


@runtime_checkable
class Storage(Protocol[ListQuery, SearchQuery]):
    """Byte values under string keys: the interface every backend implements.

    Values round-trip unchanged. ``list`` returns full keys that start with the given prefix in
    ascending order (``""`` lists everything) and ``search`` returns matches best first. Failures
    other than a missing key raise ``StorageError``. The shipped backends treat ``/`` as a
    separator; a custom backend may use any key scheme.

    A class that subclasses this protocol explicitly inherits a keyword-search ``search``.
    """

    async def write(self, key: str, data: bytes) -> None:
        """Store ``data`` under ``key``, replacing any previous value."""
        ...

    async def read(self, key: str) -> bytes | None:
        """Return the bytes stored under ``key``, or ``None`` when there are none."""
        ...

    async def delete(self, key: str) -> None:
        """Remove ``key``; removing a missing key does nothing."""
        ...

    async def list(self, query: ListQuery) -> builtins.list[str]:
        """Return every key starting with ``query``, sorted ascending."""
        ...

    async def search(self, query: SearchQuery) -> builtins.list[StorageSearchResult]:
        """Rank stored entries against ``query``, best first (keyword overlap by default)."""
        from .search.keyword import KeywordSearchStrategy

        return await KeywordSearchStrategy().search(self, query)  # type: ignore[arg-type]


class _NamespacedStorage:
    """A view of another storage in which every key gets a fixed prefix.

    Used for storage that has no ``namespace()`` of its own. Views nest: ``namespace()`` on a view
    returns a view of the same inner storage with both prefixes.
    """

    _namespaced = _NAMESPACED

    def __init__(self, storage: Any, prefix: str) -> None:
        self._storage = storage
        inner = normalize_prefix(prefix).rstrip("/")
        self._prefix = f"{inner}/" if inner else ""
        if is_ephemeral(storage):
            self._ephemeral = _EPHEMERAL

    @property
    def inner(self) -> Any:
        """The storage this view prefixes the keys of."""
        return self._storage

    async def write(self, key: str, data: bytes) -> None:
        """Write ``data`` under the prefixed key."""
        await self._storage.write(self._prefix + key, data)

    async def read(self, key: str) -> bytes | None:
        """Read the prefixed key."""
        value: bytes | None = await self._storage.read(self._prefix + key)
        return value

    async def delete(self, key: str) -> None:
        """Delete the prefixed key."""
        await self._storage.delete(self._prefix + key)

    async def list(self, query: str = "") -> builtins.list[str]:
        """List keys under the prefix, returned without it."""
        cut = len(self._prefix)
        keys: builtins.list[str] = await self._storage.list(self._prefix + query)
        return [key[cut:] for key in keys]

    async def search(self, query: str) -> builtins.list[StorageSearchResult]:
        """Search the inner storage and keep the hits under the prefix, returned without it."""
        cut = len(self._prefix)
        hits: builtins.list[StorageSearchResult] = await self._storage.search(query)
        return [
            StorageSearchResult(key=hit.key[cut:], score=hit.score, data=hit.data)
            for hit in hits
            if hit.key.startswith(self._prefix)
        ]

    def namespace(self, prefix: str) -> _NamespacedStorage:
        """Return a view nested one level deeper."""
        return _NamespacedStorage(self._storage, self._prefix + prefix)

    def for_sandbox(self, sandbox: object) -> _NamespacedStorage:
        """Bind the inner storage to ``sandbox`` (when it supports that) and keep the prefix."""
        binder = getattr(self._storage, "for_sandbox", None)
        if binder is None:
            return self
        return _NamespacedStorage(binder(sandbox), self._prefix.rstrip("/"))


async def index_written(strategy: Any, storage: Any, key: str, canonical: str, data: bytes) -> None:
    """Hand a completed write to ``strategy`` (if any); failures become ``StorageError``.

    The value stays written when indexing fails; the error says so and names the caller's key.
    """
    if strategy is None:
        return
    try:
        await strategy.index(storage, canonical, data)
    except Exception as error:
        raise StorageError(f"Wrote '{key}' but indexing failed") from error


def _resolve_namespace(storage: Any, prefix: str) -> Any:
    """Scope ``storage`` to ``prefix`` unless it is already scoped.

    Storage carrying the namespaced marker is returned as is; storage with a ``namespace()``
    method scopes itself; anything else is wrapped in a generic view.
    """
    if is_namespaced(storage):
        return storage
    scoper = getattr(storage, "namespace", None)
    if scoper is not None:
        return scoper(prefix)
    return _NamespacedStorage(storage, prefix)
