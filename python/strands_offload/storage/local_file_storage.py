"""Storage as files under a directory, on the host or through a strands sandbox."""

from __future__ import annotations

import asyncio
import builtins
import os
import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any, overload

from strands.sandbox.not_a_sandbox_local_environment import NotASandboxLocalEnvironment
from strands.types.exceptions import StorageError

from . import _hostfs
from ._atomic import INTERNAL_PREFIX
from ._keys import normalize_key, normalize_prefix
from .search.keyword import KeywordSearchStrategy
from .storage import _NAMESPACED, StorageSearchResult, index_written

if TYPE_CHECKING:
    from strands.sandbox.base import Sandbox

    from .search.types import SandboxSafeSearchStrategy, SearchStrategy

__all__ = ["LocalFileStorage"]


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


def _on_host(sandbox: object | None) -> bool:
    """Tell whether file operations through ``sandbox`` land on this machine's filesystem.

    True without a sandbox and for the SDK's default ``NotASandboxLocalEnvironment`` (the exact
    class: a subclass may redirect its file operations).
    """
    return sandbox is None or type(sandbox) is NotASandboxLocalEnvironment


_DEFAULT_BASE_DIR = "./.strands/"


class LocalFileStorage:
    """One file per key below ``base_dir``; ``/`` in keys makes subdirectories.

    On the host, writes are atomic and durable: the bytes go to a temp file in the target's
    directory, are flushed to disk and renamed over the target, so a crash leaves the old value or
    the new one. The same holds through the SDK's default host "sandbox". Through any other sandbox
    the write is one ``sandbox.write_file`` call, as atomic as that sandbox makes it, and sandboxed
    writes are never indexed (the host is not touched).

    Keys are validated (no ``..`` segment, backslash or NUL). On the host, paths are opened one
    directory at a time without following symlinks; a symlink found inside ``base_dir`` is followed
    only if its resolved target stays inside, otherwise the operation fails with ``StorageError``.
    A symlink at the key itself is replaced by ``write`` and removed by ``delete`` (its target is
    never touched), as in the reference.

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
        self._host = _on_host(sandbox)
        self._durable = durable
        self._base_dir = os.path.normpath(base_dir)

    @property
    def base_dir(self) -> str:
        """The directory holding this storage's files."""
        return self._base_dir

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
        marker = getattr(self, "_namespaced", None)
        if marker is _NAMESPACED:
            rebound._namespaced = marker  # type: ignore[attr-defined]
        return rebound

    # -- paths --------------------------------------------------------------------------------

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
            StorageError: For an invalid or escaping key, if the write fails (``Failed to write``),
                or if indexing fails after the write.
        """
        canonical = normalize_key(key)
        remote = self._remote()
        with _failures_as(f"Failed to write '{key}'"):
            if remote is None and (self._durable or len(data) >= _THREAD_WRITES_FROM):
                # fsync and large copies take milliseconds: keep the event loop free meanwhile.
                await asyncio.to_thread(_hostfs.write, self._base_dir, canonical, key, data, durable=self._durable)
            elif remote is None:
                _hostfs.write(self._base_dir, canonical, key, data, durable=False)
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
                    content = _hostfs.read(self._base_dir, canonical, key)
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
                    _hostfs.delete(self._base_dir, canonical, key)
                else:
                    await remote.remove_file(self._path(canonical))
            except _ABSENT:
                pass

    async def list(self, query: str = "") -> builtins.list[str]:
        """Return the keys starting with ``query``, sorted; internal ``.__strands_*`` files are skipped.

        Raises:
            StorageError: For an invalid prefix or a failed directory walk.
        """
        prefix = normalize_prefix(query)
        with _failures_as(f"Failed to list keys with prefix '{query}'"):
            if self._sandbox is None:
                found = self._walk_host(prefix)
            else:
                found = await self._walk_sandbox()
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
        scoped._namespaced = _NAMESPACED  # type: ignore[attr-defined]
        return scoped

    def _index_location(self) -> str:
        """Identify where this storage's entries live, for strategies that keep their own index."""
        return "file:" + os.path.abspath(self._base_dir)

    # -- directory walks ----------------------------------------------------------------------

    def _walk_host(self, prefix: str) -> builtins.list[str]:
        """Collect keys below the deepest existing directory the prefix names."""
        start = self._base_dir
        if prefix:
            for segment in prefix.rstrip("/").split("/")[:-1]:
                deeper = os.path.join(start, segment)
                if not os.path.isdir(deeper):
                    break
                start = deeper
        if not os.path.exists(start):
            return []
        keys: builtins.list[str] = []
        separator = os.sep
        for directory, _subdirs, files in os.walk(start):
            for name in files:
                if name.startswith(INTERNAL_PREFIX):
                    continue
                relative = os.path.relpath(os.path.join(directory, name), self._base_dir)
                keys.append(relative.replace(separator, "/") if separator != "/" else relative)
        return keys

    async def _walk_sandbox(self) -> builtins.list[str]:
        """Collect keys by listing sandbox directories, breadth first (internal names skipped)."""
        sandbox = self._sandbox
        assert sandbox is not None
        keys: builtins.list[str] = []
        pending = [Path(self._base_dir)]
        while pending:
            folder = pending.pop(0)
            try:
                listing = await sandbox.list_files(str(folder))
            except _ABSENT:
                continue
            for item in listing:
                if item.name.startswith(INTERNAL_PREFIX):
                    continue
                if item.is_dir:
                    pending.append(folder / item.name)
                else:
                    relative = os.path.relpath(str(folder / item.name), self._base_dir)
                    keys.append(relative.replace(os.sep, "/"))
        return keys
