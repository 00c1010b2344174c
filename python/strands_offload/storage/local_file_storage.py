"""Storage as files under a directory, on the host or through a strands sandbox."""

from __future__ import annotations

import builtins
import os
import warnings
from pathlib import Path
from typing import TYPE_CHECKING, Any, overload

from strands.sandbox.not_a_sandbox_local_environment import NotASandboxLocalEnvironment
from strands.types.exceptions import StorageError

from . import _hostfs
from ._atomic import INTERNAL_PREFIX
from ._keys import normalize_key, normalize_prefix
from .search.keyword import KeywordSearchStrategy
from .storage import _NAMESPACED, StorageSearchResult

if TYPE_CHECKING:
    from strands.sandbox.base import Sandbox

    from .search.types import SandboxSafeSearchStrategy, SearchStrategy

__all__ = ["LocalFileStorage"]


def _on_host(sandbox: object | None) -> bool:
    """Tell whether file operations through ``sandbox`` land on this machine's filesystem.

    True without a sandbox and for the SDK's default ``NotASandboxLocalEnvironment`` (the exact
    class: a subclass may redirect its file operations).
    """
    return sandbox is None or type(sandbox) is NotASandboxLocalEnvironment


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
        durable: Keyword-only extension; ``False`` skips the ``fsync`` calls (still atomic against
            process crashes, faster, but a power loss may lose recent writes).

    Raises:
        ValueError: If a sandbox is combined with a strategy that needs the host filesystem.
    """

    @overload
    def __init__(
        self,
        base_dir: str = ...,
        *,
        sandbox: Sandbox,
        search_strategy: SandboxSafeSearchStrategy[LocalFileStorage] | None = ...,
        durable: bool = ...,
    ) -> None: ...

    @overload
    def __init__(
        self,
        base_dir: str = ...,
        *,
        search_strategy: SearchStrategy[LocalFileStorage] | None = ...,
        durable: bool = ...,
    ) -> None: ...

    def __init__(
        self,
        base_dir: str = "./.strands/",
        *,
        sandbox: Sandbox | None = None,
        search_strategy: Any = None,
        durable: bool = True,
    ) -> None:
        if sandbox is not None and getattr(search_strategy, "requires_host_fs", False):
            raise ValueError(
                f"{type(search_strategy).__name__} requires host filesystem access and cannot be used with a sandbox"
            )
        self._base_dir = os.path.normpath(base_dir)
        self._sandbox = sandbox
        self._search_strategy = search_strategy
        self._durable = durable
        self._host = _on_host(sandbox)

    @property
    def base_dir(self) -> str:
        """The directory holding this storage's files."""
        return self._base_dir

    def for_sandbox(self, sandbox: Sandbox) -> LocalFileStorage:
        """Return this storage bound to ``sandbox`` (``self`` if already bound to that object).

        A strategy that needs the host filesystem is dropped with a ``UserWarning`` (search then
        falls back to the keyword scan). The namespaced marker is kept.
        """
        if self._sandbox is sandbox:
            return self
        strategy = self._search_strategy
        if strategy is not None and getattr(strategy, "requires_host_fs", False):
            warnings.warn(
                f"{type(strategy).__name__} requires host filesystem access and is not compatible with sandboxed"
                " storage — dropping search strategy, falling back to keyword search",
                stacklevel=2,
            )
            strategy = None
        bound = LocalFileStorage(self._base_dir, sandbox=sandbox, search_strategy=strategy, durable=self._durable)
        if getattr(self, "_namespaced", None) is _NAMESPACED:
            bound._namespaced = _NAMESPACED  # type: ignore[attr-defined]
        return bound

    # -- paths --------------------------------------------------------------------------------

    def _path(self, canonical: str) -> str:
        """Map a canonical key to the path handed to the sandbox."""
        return os.path.join(self._base_dir, canonical)

    # -- operations ---------------------------------------------------------------------------

    async def write(self, key: str, data: bytes) -> None:
        """Store ``data`` as the file for ``key``, replacing it atomically on the host.

        Raises:
            StorageError: For an invalid or escaping key, if the write fails (``Failed to write``),
                or if indexing fails after the write.
        """
        canonical = normalize_key(key)
        sandbox = self._sandbox
        try:
            if not self._host:
                assert sandbox is not None
                await sandbox.write_file(self._path(canonical), bytes(data))
                return
            _hostfs.write(self._base_dir, canonical, key, data, durable=self._durable)
        except StorageError:
            raise
        except Exception as error:
            raise StorageError(f"Failed to write '{key}'") from error
        if sandbox is not None:
            return
        strategy = self._search_strategy
        if strategy is not None:
            try:
                await strategy.index(self, canonical, data)
            except Exception as error:
                raise StorageError(f"Wrote '{key}' but indexing failed") from error

    async def read(self, key: str) -> bytes | None:
        """Return the file's bytes, or ``None`` when it does not exist.

        Raises:
            StorageError: For an invalid or escaping key, or a failed read (e.g. a directory).
        """
        canonical = normalize_key(key)
        try:
            if not self._host:
                assert self._sandbox is not None
                content: bytes = await self._sandbox.read_file(self._path(canonical))
                return content
            return _hostfs.read(self._base_dir, canonical, key)
        except (FileNotFoundError, NotADirectoryError):
            return None
        except StorageError:
            raise
        except Exception as error:
            raise StorageError(f"Failed to read '{key}'") from error

    async def delete(self, key: str) -> None:
        """Remove the file for ``key``; a missing file is not an error.

        Raises:
            StorageError: For an invalid or escaping key, or a failed removal.
        """
        canonical = normalize_key(key)
        try:
            if not self._host:
                assert self._sandbox is not None
                await self._sandbox.remove_file(self._path(canonical))
            else:
                _hostfs.delete(self._base_dir, canonical, key)
        except (FileNotFoundError, NotADirectoryError):
            return
        except StorageError:
            raise
        except Exception as error:
            raise StorageError(f"Failed to delete '{key}'") from error

    async def list(self, query: str = "") -> builtins.list[str]:
        """Return the keys starting with ``query``, sorted; internal ``.__strands_*`` files are skipped.

        Raises:
            StorageError: For an invalid prefix or a failed directory walk.
        """
        prefix = normalize_prefix(query)
        try:
            if self._sandbox is not None:
                found: builtins.list[str] = []
                await self._walk_sandbox(Path(self._base_dir), found)
            else:
                found = self._walk_host(prefix)
        except StorageError:
            raise
        except Exception as error:
            raise StorageError(f"Failed to list keys with prefix '{query}'") from error
        matching = [key for key in found if key.startswith(prefix)]
        matching.sort()
        return matching

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

    async def _walk_sandbox(self, directory: Path, keys: builtins.list[str]) -> None:
        """Collect keys by listing sandbox directories recursively (internal names skipped)."""
        assert self._sandbox is not None
        try:
            entries = await self._sandbox.list_files(str(directory))
        except (FileNotFoundError, NotADirectoryError):
            return
        for entry in entries:
            if entry.name.startswith(INTERNAL_PREFIX):
                continue
            child = directory / entry.name
            if entry.is_dir:
                await self._walk_sandbox(child, keys)
            else:
                keys.append(os.path.relpath(str(child), self._base_dir).replace(os.sep, "/"))
