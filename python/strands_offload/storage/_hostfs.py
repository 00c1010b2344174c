"""Host file operations that never leave a base directory, even while links change under it.

The base directory's own path is the caller's choice and resolved as usual. Everything below it is
opened one segment at a time relative to its parent's descriptor (``openat``) with ``O_NOFOLLOW``:
a symlink anywhere below the base (a directory on the way, a namespace directory, the file itself)
is refused, never followed. Nothing is looked up by path after a check, so a link planted or
swapped in by another process between two calls cannot redirect a read, write, delete or listing.

Writes go to a temp file in the target's directory, renamed over the target (``renameat``; a
symlink at the key is replaced, its target untouched). With ``durable`` the temp file is flushed
to disk before the rename, so even a power loss leaves the old content or the new, never an empty
or partial file (the directory itself is not synced: after a power loss the rename may be undone,
which still leaves the old content). The first write into a directory also sweeps the temp files
killed writers abandoned there.

Listings walk iteratively, holding one descriptor per level, list regular files only (symlinks are
skipped) and do not descend past :data:`MAX_KEY_DEPTH` levels.

Platforms without the ``dir_fd`` calls fall back to path-based calls, each preceded by a check
that refuses the same symlinks (a check that cannot close the race the descriptor walk closes).
"""

from __future__ import annotations

import contextlib
import errno
import os
import stat
from collections.abc import Iterable, Sequence

from strands.sandbox.not_a_sandbox_local_environment import NotASandboxLocalEnvironment
from strands.types.exceptions import StorageError

from ._atomic import INTERNAL_PREFIX, atomic_write, sweep_stale_temps, temp_name, write_and_close


def on_host(sandbox: object | None) -> bool:
    """Whether file operations through ``sandbox`` land on this machine's filesystem.

    True without a sandbox and for the SDK's default ``NotASandboxLocalEnvironment`` (the exact
    class: a subclass may redirect its file operations).
    """
    return sandbox is None or type(sandbox) is NotASandboxLocalEnvironment


#: Keys may be nested at most this many levels below the base directory (namespace levels
#: included). Deeper keys are refused by ``write``; deeper files already on disk are not listed.
MAX_KEY_DEPTH = 64

_O_CLOEXEC = getattr(os, "O_CLOEXEC", 0)
_O_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_O_DIRECTORY = getattr(os, "O_DIRECTORY", 0)
_O_NONBLOCK = getattr(os, "O_NONBLOCK", 0)
_DIR_FLAGS = os.O_RDONLY | _O_DIRECTORY | _O_NOFOLLOW | _O_CLOEXEC
# Non-blocking so a FIFO planted at a key cannot hang a read; no effect on regular files.
_FILE_FLAGS = os.O_RDONLY | _O_NOFOLLOW | _O_NONBLOCK | _O_CLOEXEC
_TEMP_FLAGS = os.O_WRONLY | os.O_CREAT | os.O_EXCL | _O_NOFOLLOW | _O_CLOEXEC

#: Whether the race-free descriptor walk is available here (Linux, macOS, BSDs).
WALK_SUPPORTED = bool(
    _O_NOFOLLOW
    and _O_DIRECTORY
    and os.open in os.supports_dir_fd
    and os.rename in os.supports_dir_fd  # os.replace uses the same renameat call
    and os.stat in os.supports_dir_fd
    and os.unlink in os.supports_dir_fd
    and os.mkdir in os.supports_dir_fd
    and os.link in os.supports_dir_fd
    and os.link in os.supports_follow_symlinks
    and os.scandir in os.supports_fd
)


def _refused(key: str) -> StorageError:
    return StorageError(
        f"Invalid storage key '{key}': it passes through a symlink, and symlinks inside the storage directory"
        " are not followed"
    )


def is_link(name: str, dir_fd: int) -> bool:
    """Tell whether ``name`` in the directory ``dir_fd`` is a symlink (for error messages only)."""
    try:
        return stat.S_ISLNK(os.lstat(name, dir_fd=dir_fd).st_mode)
    except OSError:
        return False


def key_depth(segments: Iterable[str]) -> int:
    """Count the levels a key's segments nest (``.`` segments do not)."""
    return sum(1 for segment in segments if segment not in ("", "."))


# -- descriptor primitives (also used by the legacy FileStorage, one flat directory) --------------


def open_base(base: str, *, create: bool) -> int:
    """Open the base directory itself (its path is trusted and resolved as usual)."""
    if create:
        os.makedirs(base, exist_ok=True)
    return os.open(base, os.O_RDONLY | _O_DIRECTORY | _O_CLOEXEC)


def read_in(dir_fd: int, name: str) -> bytes:
    """Return the bytes of the regular file ``name`` in ``dir_fd``, never through a symlink.

    Raises:
        OSError: ``ELOOP`` (or the platform's equivalent) for a symlink, ``EISDIR`` for a directory,
            ``EINVAL`` for anything else that is not a regular file, or the open/read failure.
    """
    fd = os.open(name, _FILE_FLAGS, dir_fd=dir_fd)
    with open(fd, "rb") as handle:
        mode = os.fstat(fd).st_mode
        if stat.S_ISDIR(mode):
            raise IsADirectoryError(errno.EISDIR, os.strerror(errno.EISDIR), name)
        if not stat.S_ISREG(mode):
            raise OSError(errno.EINVAL, "Not a regular file", name)
        return handle.read()


def _new_temp(dir_fd: int, data: bytes, durable: bool) -> str:
    """Write ``data`` to a fresh temp file in ``dir_fd`` and return its name (removed on failure)."""
    temp = temp_name()
    fd = os.open(temp, _TEMP_FLAGS, 0o666, dir_fd=dir_fd)
    try:
        write_and_close(fd, data, durable)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temp, dir_fd=dir_fd)
        raise
    return temp


def replace_in(dir_fd: int, name: str, data: bytes, *, durable: bool) -> None:
    """Atomically replace ``name`` in ``dir_fd`` with ``data`` (a symlink there is replaced itself).

    Raises:
        OSError: When writing or renaming fails; the previous content is then intact.
    """
    temp = _new_temp(dir_fd, data, durable)
    try:
        os.replace(temp, name, src_dir_fd=dir_fd, dst_dir_fd=dir_fd)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temp, dir_fd=dir_fd)
        raise


def create_in(dir_fd: int, name: str, data: bytes, *, durable: bool) -> bool:
    """Create ``name`` in ``dir_fd`` holding ``data`` unless the name is taken; never a partial file.

    The temp file is hard-linked to ``name`` (which fails if it exists, symlinks included). Where
    the filesystem has no hard links it is renamed after an existence check.

    Returns:
        ``True`` if the file was created, ``False`` if ``name`` already existed (nothing changed).

    Raises:
        OSError: If writing fails.
    """
    temp = _new_temp(dir_fd, data, durable)
    try:
        try:
            os.link(temp, name, src_dir_fd=dir_fd, dst_dir_fd=dir_fd, follow_symlinks=False)
        except FileExistsError:
            return False
        except OSError:
            try:
                os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
                return False
            except FileNotFoundError:
                pass
            os.replace(temp, name, src_dir_fd=dir_fd, dst_dir_fd=dir_fd)
    finally:
        with contextlib.suppress(OSError):
            os.unlink(temp, dir_fd=dir_fd)
    if durable:
        with contextlib.suppress(OSError):
            os.fsync(dir_fd)
    return True


# -- keyed operations below a base directory -----------------------------------------------------


def _descend(parent: int, segment: str, key: str, *, create: bool) -> int:
    """Open the directory ``segment`` of ``parent`` without following a link (created if asked)."""
    try:
        return os.open(segment, _DIR_FLAGS, dir_fd=parent)
    except FileNotFoundError:
        if not create:
            raise
    except OSError:
        if is_link(segment, parent):
            raise _refused(key) from None
        raise
    with contextlib.suppress(FileExistsError):
        os.mkdir(segment, 0o777, dir_fd=parent)
    try:
        return os.open(segment, _DIR_FLAGS, dir_fd=parent)
    except OSError:
        if is_link(segment, parent):  # swapped in between our mkdir and open
            raise _refused(key) from None
        raise


def _open_directory(base: str, segments: Sequence[str], key: str, *, create: bool) -> int:
    """Return a descriptor of ``base/segments`` (created when ``create``), never through a symlink."""
    fd = open_base(base, create=create)
    try:
        for segment in segments:
            if segment in ("", "."):
                continue
            child = _descend(fd, segment, key, create=create)
            os.close(fd)
            fd = child
        return fd
    except BaseException:
        os.close(fd)
        raise


def _links_below(base: str, path: str) -> bool:
    """Path-based fallback: tell whether resolving ``path`` meets a symlink below ``base``."""
    expected = os.path.normpath(os.path.join(os.path.realpath(base), os.path.relpath(path, base)))
    return os.path.realpath(path) != expected


def read(base: str, segments: Sequence[str], key: str) -> bytes:
    """Return the bytes of the file at ``base/segments``.

    Raises:
        FileNotFoundError | NotADirectoryError: When the entry does not exist.
        StorageError: When a symlink is met on the way or at the key itself.
        OSError: For other failures (e.g. the key names a directory).
    """
    *parents, name = segments
    if not WALK_SUPPORTED:
        path = os.path.join(base, *segments)
        if _links_below(base, path):
            raise _refused(key)
        fd = os.open(path, _FILE_FLAGS)
        with open(fd, "rb") as handle:
            if not stat.S_ISREG(os.fstat(fd).st_mode):
                raise IsADirectoryError(errno.EISDIR, os.strerror(errno.EISDIR), path)
            return handle.read()
    parent = _open_directory(base, parents, key, create=False)
    try:
        return read_in(parent, name)
    except OSError:
        if is_link(name, parent):
            raise _refused(key) from None
        raise
    finally:
        os.close(parent)


def write(
    base: str, segments: Sequence[str], key: str, data: bytes, *, durable: bool, swept: set[tuple[int, int]]
) -> None:
    """Atomically replace the file at ``base/segments`` with ``data``, creating directories as needed.

    The first write into a directory (as remembered in ``swept``, by device and inode) removes the
    temp files killed writers left there.

    Raises:
        StorageError: When a symlink is met on the way.
        OSError: When writing fails; the previous content is then intact.
    """
    *parents, name = segments
    if not WALK_SUPPORTED:
        directory = os.path.join(base, *parents)
        if _links_below(base, directory):
            raise _refused(key)
        os.makedirs(directory, exist_ok=True)
        info = os.stat(directory)
        if (info.st_dev, info.st_ino) not in swept:
            swept.add((info.st_dev, info.st_ino))
            sweep_stale_temps(directory)
        atomic_write(os.path.join(directory, name), data, durable=durable)
        return
    parent = _open_directory(base, parents, key, create=True)
    try:
        info = os.fstat(parent)
        identity = (info.st_dev, info.st_ino)
        if identity not in swept:
            swept.add(identity)
            sweep_stale_temps(parent)
        replace_in(parent, name, data, durable=durable)
    finally:
        os.close(parent)


def delete(base: str, segments: Sequence[str], key: str) -> None:
    """Remove the file at ``base/segments`` (a symlink at the key is removed itself, not its target).

    Raises:
        FileNotFoundError | NotADirectoryError: When the entry does not exist.
        StorageError: When a symlink is met on the way.
        OSError: For other failures.
    """
    *parents, name = segments
    if not WALK_SUPPORTED:
        directory = os.path.join(base, *parents)
        if _links_below(base, directory):
            raise _refused(key)
        os.unlink(os.path.join(directory, name))
        return
    parent = _open_directory(base, parents, key, create=False)
    try:
        os.unlink(name, dir_fd=parent)
    finally:
        os.close(parent)


# -- listings ------------------------------------------------------------------------------------


def _scan(directory: int | str) -> tuple[list[str], list[str]]:
    """Split one directory's entries into regular files and real subdirectories.

    Internal names, symlinks and anything else (FIFOs, sockets) are left out.
    """
    files: list[str] = []
    subdirs: list[str] = []
    with os.scandir(directory) as entries:
        for entry in entries:
            if entry.name.startswith(INTERNAL_PREFIX):
                continue
            try:
                if entry.is_dir(follow_symlinks=False):
                    subdirs.append(entry.name)
                elif entry.is_file(follow_symlinks=False):
                    files.append(entry.name)
            except OSError:
                continue
    return files, subdirs


class _Frame:
    """One open directory of the walk: its descriptor, key prefix, level and subdirectories left."""

    __slots__ = ("fd", "level", "pending", "prefix")

    def __init__(self, fd: int, prefix: str, level: int, pending: list[str]) -> None:
        self.fd = fd
        self.prefix = prefix
        self.level = level
        self.pending = pending


def _within_depth(files: list[str], subdirs: list[str], level: int, max_depth: int) -> tuple[list[str], list[str], int]:
    """Keep the files and subdirectories of a directory at ``level`` whose keys fit ``max_depth``.

    A file there is ``level + 1`` levels deep, a file in a subdirectory at least ``level + 2``.
    Returns the kept files, the kept subdirectories and how many entries were dropped.
    """
    dropped = 0
    if files and level + 1 > max_depth:
        dropped += len(files)
        files = []
    if subdirs and level + 2 > max_depth:
        dropped += len(subdirs)
        subdirs = []
    return files, subdirs, dropped


def list_keys(base: str, scope: Sequence[str], prefix: str, *, max_depth: int = MAX_KEY_DEPTH) -> tuple[list[str], int]:
    """Collect the keys of regular files below ``base/scope`` that may start with ``prefix``.

    The walk starts at the deepest directory every matching key must be in (the prefix's complete
    segments) and is iterative, so no depth can exhaust the stack; it holds one descriptor per
    level. Files deeper than ``max_depth`` levels (counted from ``base``, ``scope`` included) are
    not listed and directories holding only such files are not entered.

    Returns:
        The keys (relative to ``base/scope``, unsorted and not yet filtered by ``prefix``) and the
        number of entries (files or directories) left out for depth.
    """
    narrowing = [segment for segment in prefix.split("/")[:-1] if segment not in ("", ".")]
    start_level = key_depth(scope) + len(narrowing)
    start_prefix = "".join(f"{segment}/" for segment in narrowing)
    if not WALK_SUPPORTED:
        return _list_by_path(base, [*scope, *narrowing], start_prefix, start_level, max_depth)
    try:
        start = _open_directory(base, [*scope, *narrowing], prefix, create=False)
    except (OSError, StorageError):
        return [], 0  # missing, a file, or a symlink: no key can live below it
    keys: list[str] = []
    skipped = 0
    stack: list[_Frame] = []

    def enter(fd: int, key_prefix: str, level: int) -> None:
        nonlocal skipped
        try:
            files, subdirs = _scan(fd)
        except OSError:
            os.close(fd)
            return
        files, subdirs, dropped = _within_depth(files, subdirs, level, max_depth)
        skipped += dropped
        keys.extend(key_prefix + name for name in files)
        stack.append(_Frame(fd, key_prefix, level, subdirs))

    try:
        enter(start, start_prefix, start_level)
        while stack:
            frame = stack[-1]
            if not frame.pending:
                stack.pop()
                os.close(frame.fd)
                continue
            name = frame.pending.pop()
            try:
                child = os.open(name, _DIR_FLAGS, dir_fd=frame.fd)
            except OSError:
                continue  # removed, or swapped for a symlink since the scan
            enter(child, f"{frame.prefix}{name}/", frame.level + 1)
    finally:
        for frame in stack:
            os.close(frame.fd)
    return keys, skipped


def _list_by_path(
    base: str, segments: Sequence[str], start_prefix: str, start_level: int, max_depth: int
) -> tuple[list[str], int]:
    """Path-based fallback of :func:`list_keys` (symlinks skipped, checked before use)."""
    start = os.path.join(base, *segments)
    if not os.path.isdir(start) or _links_below(base, start):
        return [], 0
    keys: list[str] = []
    skipped = 0
    pending: list[tuple[str, str, int]] = [(start, start_prefix, start_level)]
    while pending:
        directory, key_prefix, level = pending.pop()
        try:
            files, subdirs = _scan(directory)
        except OSError:
            continue
        files, subdirs, dropped = _within_depth(files, subdirs, level, max_depth)
        skipped += dropped
        keys.extend(key_prefix + name for name in files)
        pending.extend((os.path.join(directory, name), f"{key_prefix}{name}/", level + 1) for name in subdirs)
    return keys, skipped
