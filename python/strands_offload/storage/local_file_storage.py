"""Storage as files under a directory, on the host or through a strands sandbox."""

from __future__ import annotations

import asyncio
import builtins
import collections
import logging
import os
import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any, overload

from strands.types.exceptions import StorageError

from . import _hostfs
from ._atomic import INTERNAL_PREFIX
from ._hostfs import MAX_KEY_DEPTH
from ._keys import normalize_key, normalize_prefix
from .search.keyword import KeywordSearchStrategy
from .storage import _NAMESPACED, StorageSearchResult, index_written

if TYPE_CHECKING:
    from strands.sandbox.base import Sandbox

    from .search.types import SandboxSafeSearchStrategy, SearchStrategy

__all__ = ["MAX_KEY_DEPTH", "LocalFileStorage"]

logger = logging.getLogger(__name__)


_ABSENT = (FileNotFoundError, NotADirectoryError)
# Non-durable host writes of at least this many bytes also run in a worker thread.
_THREAD_WRITES_FROM = 256 * 1024
_HOST_ONLY = "requires host filesystem access and"


def _needs_host(strategy: object) -> bool:
    return bool(getattr(strategy, "requires_host_fs", False))


def _strategy_name(strategy: object) -> str:
    return type(strategy).__name__


@contextmanager
def _failures_as(message: str) -> Iterator[None]:
    """Turn any failure other than a ``StorageError`` into ``StorageError(message)``, chained."""
    try:
        yield
    except Exception as error:
        if isinstance(error, StorageError):
            raise
        raise StorageError(message) from error


_DEFAULT_BASE_DIR = "./.strands/"


class LocalFileStorage:
    """One file per key below ``base_dir``; ``/`` in keys makes subdirectories.

    On the host, writes are atomic and durable: the bytes go to a temp file in the target's
    directory, are flushed to disk and renamed over the target, so a crash leaves the old value or
    the new one. The same holds through the SDK's default host "sandbox". Through any other sandbox
    the write is one ``sandbox.write_file`` call, as atomic as that sandbox makes it, and sandboxed
    writes are never indexed (the host is not touched).

    Keys are validated (no ``..`` segment, backslash or NUL) and ``write`` refuses keys nested
    deeper than :data:`MAX_KEY_DEPTH` levels (a namespace's levels count). On the host (the SDK's
    default host sandbox included) every path below ``base_dir`` is opened one directory at a time,
    relative to its parent's descriptor, without following symlinks, so no read, write, delete or
    listing can leave ``base_dir`` even while another process swaps links under it: a symlink on
    the way to a key, or at the key when reading, fails the operation with ``StorageError``, and
    listings skip symlinks. (The reference follows symlinks.) A namespace is walked from the
    storage it was made from, so a symlink planted at its directory is refused too. A symlink at
    the key itself is replaced by ``write`` and removed by ``delete`` (its target is never touched),
    as in the reference. The first write into a directory removes the temp files that writers
    killed mid-write left there (our naming only, untouched for an hour).

    Args:
        base_dir: Root directory (normalised with ``os.path.normpath``).
        sandbox: Route file operations through this sandbox.
        search_strategy: Strategy for indexing writes and answering ``search``; with a sandbox it
            must not require the host filesystem.
        durable: Keyword-only extension; ``False`` skips the ``fsync`` of each new file before it
            replaces the old one (still atomic against process crashes and kills, and as fast as
            the reference, but after a power loss a recent write may come back empty).

    Raises:
        ValueError: If a sandbox is combined with a strategy that needs the host filesystem.
    """

    @overload
    def __init__(
        self,
        base_dir: str = ...,
        *,
        search_strategy: SandboxSafeSearchStrategy[LocalFileStorage] | None = ...,
        sandbox: Sandbox,
        durable: bool = ...,
    ) -> None: ...

    @overload
    def __init__(
        self,
        base_dir: str = ...,
        *,
        durable: bool = ...,
        search_strategy: SearchStrategy[LocalFileStorage] | None = ...,
    ) -> None: ...

    def __init__(
        self,
        base_dir: str = _DEFAULT_BASE_DIR,
        *,
        search_strategy: Any = None,
        sandbox: Sandbox | None = None,
        durable: bool = True,
    ) -> None:
        if sandbox is not None and _needs_host(search_strategy):
            raise ValueError(f"{_strategy_name(search_strategy)} {_HOST_ONLY} cannot be used with a sandbox")
        self._search_strategy = search_strategy
        self._sandbox = sandbox
        self._host = _hostfs.on_host(sandbox)
        self._durable = durable
        self._base_dir = os.path.normpath(base_dir)
        # Host operations walk from ``_root`` through the namespace levels ``_scope`` (never by the
        # joined path, which a planted symlink could redirect).
        self._root = self._base_dir
        self._scope: tuple[str, ...] = ()
        # Directories (device, inode) already swept of abandoned temp files, shared by namespaces.
        self._swept: set[tuple[int, int]] = set()

    @property
    def base_dir(self) -> str:
        """The directory holding this storage's files."""
        return self._base_dir

    @property
    def search_strategy(self) -> Any:
        """The strategy given at construction (``None``: ``search`` scans with keyword overlap)."""
        return self._search_strategy

    def for_sandbox(self, sandbox: Sandbox) -> LocalFileStorage:
        """Return this storage bound to ``sandbox`` (``self`` if already bound to that object).

        A strategy that needs the host filesystem is dropped with a ``UserWarning`` (search then
        falls back to the keyword scan). The namespaced marker is kept.
        """
        if sandbox is self._sandbox:
            return self
        kept = self._search_strategy
        if _needs_host(kept):
            message = (
                f"{_strategy_name(kept)} {_HOST_ONLY} is not compatible with sandboxed storage"
                " — dropping search strategy, falling back to keyword search"
            )
            warnings.warn(message, stacklevel=2)
            kept = None
        rebound = LocalFileStorage(self._base_dir, sandbox=sandbox, search_strategy=kept, durable=self._durable)
        rebound._adopt_location(self)
        marker = getattr(self, "_namespaced", None)
        if marker is _NAMESPACED:
            rebound._namespaced = marker  # type: ignore[attr-defined]
        return rebound

    # -- paths --------------------------------------------------------------------------------

    def _adopt_location(self, other: LocalFileStorage, scope: tuple[str, ...] = ()) -> None:
        """Walk from ``other``'s root, through its levels and then ``scope`` (namespaces, rebinding)."""
        self._root = other._root
        self._scope = other._scope + scope
        self._swept = other._swept

    def _segments(self, canonical: str) -> builtins.list[str]:
        """The path segments of a canonical key below the root, namespace levels first."""
        return [*self._scope, *canonical.split("/")]

    def _path(self, canonical: str) -> str:
        """Map a canonical key to the path handed to the sandbox."""
        return os.path.join(self._base_dir, canonical)

    def _remote(self) -> Sandbox | None:
        """The sandbox to go through, or ``None`` when operations run directly on the host."""
        return None if self._host else self._sandbox

    # -- operations ---------------------------------------------------------------------------

    async def write(self, key: str, data: bytes) -> None:
        """Store ``data`` as the file for ``key``, replacing it atomically on the host.

        Raises:
            StorageError: For an invalid or escaping key, a key nested deeper than
                :data:`MAX_KEY_DEPTH` levels, if the write fails (``Failed to write``), or if
                indexing fails after the write.
        """
        canonical = normalize_key(key)
        segments = self._segments(canonical)
        depth = _hostfs.key_depth(segments)
        if depth > MAX_KEY_DEPTH:
            raise StorageError(
                f"Invalid storage key '{key}': it is nested {depth} levels deep, more than the limit of {MAX_KEY_DEPTH}"
            )
        remote = self._remote()
        with _failures_as(f"Failed to write '{key}'"):
            if remote is None:
                durable, root, swept = self._durable, self._root, self._swept
                if durable or len(data) >= _THREAD_WRITES_FROM:
                    # fsync and large copies take milliseconds: keep the event loop free meanwhile.
                    await asyncio.to_thread(_hostfs.write, root, segments, key, data, durable=durable, swept=swept)
                else:
                    _hostfs.write(root, segments, key, data, durable=False, swept=swept)
            else:
                await remote.write_file(self._path(canonical), bytes(data))
        if self._sandbox is None:
            # Sandboxed writes (including the host default sandbox) are never indexed.
            await index_written(self._search_strategy, self, key, canonical, data)

    async def read(self, key: str) -> bytes | None:
        """Return the file's bytes, or ``None`` when it does not exist.

        Raises:
            StorageError: For an invalid or escaping key, or a failed read (e.g. a directory).
        """
        canonical = normalize_key(key)
        remote = self._remote()
        content: bytes | None = None
        with _failures_as(f"Failed to read '{key}'"):
            try:
                if remote is None:
                    content = _hostfs.read(self._root, self._segments(canonical), key)
                else:
                    content = await remote.read_file(self._path(canonical))
            except _ABSENT:
                content = None
        return content

    async def delete(self, key: str) -> None:
        """Remove the file for ``key``; a missing file is not an error.

        Raises:
            StorageError: For an invalid or escaping key, or a failed removal.
        """
        canonical = normalize_key(key)
        remote = self._remote()
        with _failures_as(f"Failed to delete '{key}'"):
            try:
                if remote is None:
                    _hostfs.delete(self._root, self._segments(canonical), key)
                else:
                    await remote.remove_file(self._path(canonical))
            except _ABSENT:
                pass

    async def list(self, query: str = "") -> builtins.list[str]:
        """Return the keys starting with ``query``, sorted; internal ``.__strands_*`` files are skipped.

        On the host, symlinks are not listed. Entries nested deeper than :data:`MAX_KEY_DEPTH`
        levels (written by other programs) are left out with one warning per listing; every other
        entry is still listed.

        Raises:
            StorageError: For an invalid prefix or a failed directory walk.
        """
        prefix = normalize_prefix(query)
        with _failures_as(f"Failed to list keys with prefix '{query}'"):
            if self._host:
                found, skipped = _hostfs.list_keys(self._root, self._scope, prefix)
            else:
                found, skipped = await self._walk_sandbox()
        if skipped:
            logger.warning(
                "base_dir=<%s>, limit=<%d>, skipped=<%d> | entries nested deeper than the key depth limit not listed",
                self._base_dir,
                MAX_KEY_DEPTH,
                skipped,
            )
        return sorted(key for key in found if key.startswith(prefix))

    async def search(self, query: str) -> builtins.list[StorageSearchResult]:
        """Rank entries against ``query`` with the configured strategy, else keyword overlap."""
        strategy: Any = self._search_strategy if self._search_strategy is not None else KeywordSearchStrategy()
        results: builtins.list[StorageSearchResult] = await strategy.search(self, query)
        return results

    def namespace(self, prefix: str) -> LocalFileStorage:
        """Return a ``LocalFileStorage`` rooted at the prefix's subdirectory, marked namespaced.

        It keeps the sandbox and strategy; like the reference it is always a plain
        ``LocalFileStorage``, even when called on a subclass.
        """
        segments = normalize_prefix(prefix).rstrip("/")
        directory = os.path.join(self._base_dir, *segments.split("/")) if segments else self._base_dir
        scoped = LocalFileStorage(
            directory,
            sandbox=self._sandbox,  # type: ignore[arg-type]
            search_strategy=self._search_strategy,
            durable=self._durable,
        )
        scoped._adopt_location(self, tuple(segment for segment in segments.split("/") if segment not in ("", ".")))
        scoped._namespaced = _NAMESPACED  # type: ignore[attr-defined]
        return scoped

    def _index_location(self) -> str:
        """Identify where this storage's entries live, for strategies that keep their own index."""
        return "file:" + os.path.abspath(self._base_dir)

    # -- directory walks ----------------------------------------------------------------------

    async def _walk_sandbox(self) -> tuple[builtins.list[str], int]:
        """Collect keys by listing sandbox directories, breadth first (internal names skipped).

        Returns the keys and how many entries were left out for being nested too deep.
        """
        sandbox = self._sandbox
        assert sandbox is not None
        keys: builtins.list[str] = []
        skipped = 0
        pending = collections.deque([(Path(self._base_dir), _hostfs.key_depth(self._scope))])
        while pending:
            folder, level = pending.popleft()
            try:
                listing = await sandbox.list_files(str(folder))
            except _ABSENT:
                continue
            for item in listing:
                if item.name.startswith(INTERNAL_PREFIX):
                    continue
                if level + (2 if item.is_dir else 1) > MAX_KEY_DEPTH:
                    skipped += 1
                elif item.is_dir:
                    pending.append((folder / item.name, level + 1))
                else:
                    relative = os.path.relpath(str(folder / item.name), self._base_dir)
                    keys.append(relative.replace(os.sep, "/"))
        return keys, skipped
