"""Host file operations that stay inside a base directory, symlinks included.

Paths are walked one segment at a time with ``openat``-style calls (``dir_fd``) that refuse to
follow symlinks, so a link planted inside the directory cannot redirect a read or write elsewhere,
even if it appears between a check and the use. A symlink met on the way is followed only when its
fully resolved target is still inside the base directory. Writes go to a temp file in the target's
directory and are renamed over the target (atomic); with ``durable`` the temp file is flushed to
disk before the rename, so even a power loss leaves the old content or the new, never an empty or
partial file (the directory itself is not synced: after a power loss the rename may be undone,
which still leaves the old content). Platforms without ``dir_fd`` support fall back to resolving the path and
checking it before each operation.
"""

from __future__ import annotations

import errno
import os
import stat

from strands.types.exceptions import StorageError

from ._atomic import atomic_write, is_within, temp_name, write_and_close

_O_CLOEXEC = getattr(os, "O_CLOEXEC", 0)
_O_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_O_DIRECTORY = getattr(os, "O_DIRECTORY", 0)
_DIR_FLAGS = os.O_RDONLY | _O_DIRECTORY | _O_NOFOLLOW | _O_CLOEXEC

#: Whether the race-free walk is available here (Linux, macOS, BSDs).
WALK_SUPPORTED = bool(
    _O_NOFOLLOW
    and _O_DIRECTORY
    and os.open in os.supports_dir_fd
    and os.rename in os.supports_dir_fd  # os.replace uses the same renameat call
    and os.stat in os.supports_dir_fd
    and os.unlink in os.supports_dir_fd
    and os.mkdir in os.supports_dir_fd
)


def _escape(key: str) -> StorageError:
    return StorageError(f"Invalid storage key '{key}': it resolves outside the storage directory")


def _is_link(name: str, dir_fd: int) -> bool:
    try:
        return stat.S_ISLNK(os.lstat(name, dir_fd=dir_fd).st_mode)
    except OSError:
        return False


def _follow_inside(base: str, segments: list[str], key: str, flags: int) -> int:
    """Open the symlink at ``base/segments`` after checking that its target stays inside ``base``."""
    path = os.path.join(base, *segments)
    if not is_within(path, base):
        raise _escape(key)
    return os.open(path, flags)


def _open_directory(base: str, segments: list[str], key: str, *, create: bool) -> int:
    """Return a descriptor of ``base/segments`` (created when ``create``), never leaving ``base``."""
    if create:
        os.makedirs(base, exist_ok=True)
    fd = os.open(base, os.O_RDONLY | _O_DIRECTORY | _O_CLOEXEC)
    try:
        for index, segment in enumerate(segments):
            if segment == ".":
                continue
            try:
                child = os.open(segment, _DIR_FLAGS, dir_fd=fd)
            except FileNotFoundError:
                if not create:
                    raise
                try:
                    os.mkdir(segment, 0o777, dir_fd=fd)
                except FileExistsError:
                    pass
                child = os.open(segment, _DIR_FLAGS, dir_fd=fd)
            except OSError as error:
                if error.errno in (errno.ENOTDIR, errno.ELOOP) and _is_link(segment, fd):
                    child = _follow_inside(base, segments[: index + 1], key, os.O_RDONLY | _O_DIRECTORY | _O_CLOEXEC)
                else:
                    raise
            os.close(fd)
            fd = child
        return fd
    except BaseException:
        os.close(fd)
        raise


def _split(key: str) -> tuple[list[str], str]:
    *parents, name = key.split("/")
    return parents, name


def read(base: str, key: str, raw_key: str) -> bytes:
    """Return the bytes of ``key`` below ``base``.

    Raises:
        FileNotFoundError | NotADirectoryError: When the entry does not exist.
        StorageError: When a symlink leads outside ``base``.
        OSError: For other failures (e.g. the key names a directory).
    """
    if not WALK_SUPPORTED:
        path = os.path.join(base, key)
        if not is_within(path, base):
            raise _escape(raw_key)
        with open(path, "rb") as handle:
            return handle.read()
    parents, name = _split(key)
    parent = _open_directory(base, parents, raw_key, create=False)
    try:
        try:
            fd = os.open(name, os.O_RDONLY | _O_NOFOLLOW | _O_CLOEXEC, dir_fd=parent)
        except OSError as error:
            if error.errno == errno.ELOOP and _is_link(name, parent):
                fd = _follow_inside(base, [*parents, name], raw_key, os.O_RDONLY | _O_CLOEXEC)
            else:
                raise
    finally:
        os.close(parent)
    with open(fd, "rb") as handle:
        return handle.read()


def write(base: str, key: str, raw_key: str, data: bytes, *, durable: bool) -> None:
    """Atomically replace ``key`` below ``base`` with ``data``, creating directories as needed.

    A symlink at the key itself is replaced by the new file (the link's target is not touched).

    Raises:
        StorageError: When a symlinked directory leads outside ``base``.
        OSError: When writing fails; the previous content is then intact.
    """
    if not WALK_SUPPORTED:
        path = os.path.join(base, key)
        if not is_within(os.path.dirname(path), base) and os.path.dirname(path) != os.path.normpath(base):
            raise _escape(raw_key)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        atomic_write(path, data, durable=durable)
        return
    parents, name = _split(key)
    parent = _open_directory(base, parents, raw_key, create=True)
    try:
        temp = temp_name()
        fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | _O_NOFOLLOW | _O_CLOEXEC, 0o666, dir_fd=parent)
        try:
            write_and_close(fd, data, durable)
            os.replace(temp, name, src_dir_fd=parent, dst_dir_fd=parent)
        except BaseException:
            try:
                os.unlink(temp, dir_fd=parent)
            except OSError:
                pass
            raise
    finally:
        os.close(parent)


def delete(base: str, key: str, raw_key: str) -> None:
    """Remove ``key`` below ``base`` (a symlink at the key is removed itself, not its target).

    Raises:
        FileNotFoundError | NotADirectoryError: When the entry does not exist.
        StorageError: When a symlinked directory leads outside ``base``.
        OSError: For other failures.
    """
    if not WALK_SUPPORTED:
        path = os.path.join(base, key)
        if not is_within(os.path.dirname(path), base) and os.path.dirname(path) != os.path.normpath(base):
            raise _escape(raw_key)
        os.unlink(path)
        return
    parents, name = _split(key)
    parent = _open_directory(base, parents, raw_key, create=False)
    try:
        os.unlink(name, dir_fd=parent)
    finally:
        os.close(parent)
