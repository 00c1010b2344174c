"""Protocols a search strategy implements to plug into the storage backends."""

from __future__ import annotations

from typing import Any, Literal, Protocol

from typing_extensions import TypeVar

from ..storage import Storage, StorageSearchResult

__all__ = ["S", "SandboxSafeSearchStrategy", "SearchStrategy"]

S = TypeVar("S", bound=Storage, default=Storage, contravariant=True)


class SearchStrategy(Protocol[S]):
    """How a backend indexes and searches its entries.

    Backends call ``index`` after each successful write and forward ``search`` to the strategy.
    ``key`` is relative to the storage instance passed in. Namespaced copies of a backend share the
    parent's strategy, so one relative key may denote different entries; a strategy that keeps its
    own index must key it by where the entry really lives (for example ``base_dir`` plus the key).
    ``S`` narrows the backends a strategy accepts (for instance ones exposing ``base_dir``).
    """

    async def index(self, storage: S, key: str, data: bytes, **kwargs: Any) -> None:
        """Record one written entry (strategies that scan at search time do nothing)."""
        ...

    async def search(self, storage: S, query: str, **kwargs: Any) -> list[StorageSearchResult]:
        """Return entries of ``storage`` matching ``query``, best first."""
        ...


class SandboxSafeSearchStrategy(Protocol[S]):
    """A strategy that only goes through the storage API, so it also works inside a sandbox.

    Such strategies declare ``requires_host_fs = False``; strategies that keep files on the host
    (like the SQLite BM25 index) declare ``True`` and are refused by sandboxed storage.
    """

    requires_host_fs: Literal[False]

    async def index(self, storage: S, key: str, data: bytes, **kwargs: Any) -> None:
        """Record one written entry."""
        ...

    async def search(self, storage: S, query: str, **kwargs: Any) -> list[StorageSearchResult]:
        """Return entries of ``storage`` matching ``query``, best first."""
        ...
