"""Crash-safe file replacement, containment checks and temp-file sweeping for the file-based backends."""

from __future__ import annotations

import contextlib
import logging
import os
import re
import stat
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager

try:
    import fcntl
except ImportError:  # pragma: no cover - Windows
    fcntl = None  # type: ignore[assignment]

logger = logging.getLogger(__name__)

#: Names starting with this are internal (temp files, indexes) and never listed as keys.
INTERNAL_PREFIX = ".__strands_"

#: A temp file of our naming (also the reference's) untouched for this long is abandoned: its
#: writer was killed before the rename. Live writers touch theirs continuously, and a rename
#: follows the last write within the time an ``fsync`` takes.
STALE_TEMP_SECONDS = 3600.0

_TEMP_NAME = re.compile(re.escape(INTERNAL_PREFIX) + r"tmp_[0-9a-f]{32}")
_O_BINARY = getattr(os, "O_BINARY", 0)
_O_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_O_CLOEXEC = getattr(os, "O_CLOEXEC", 0)


def temp_name() -> str:
    """Return a fresh temp-file name in the reference's format ``.__strands_tmp_<hex>``."""
    return f"{INTERNAL_PREFIX}tmp_{uuid.uuid4().hex}"


def _fsync_directory(directory: str) -> None:
    """Flush a directory entry change to disk where the platform allows it."""
    try:
        handle = os.open(directory, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
    except OSError:
        return
    try:
        os.fsync(handle)
    except OSError:
        pass
    finally:
        os.close(handle)


def write_and_close(handle: int, data: bytes, durable: bool) -> None:
    """Write all of ``data`` to the open file ``handle`` (``fsync`` when ``durable``), then close it."""
    try:
        view = memoryview(data)
        while view:
            view = view[os.write(handle, view) :]
        if durable:
            os.fsync(handle)
    finally:
        os.close(handle)


def _write_temp(directory: str, data: bytes, durable: bool) -> str:
    """Write ``data`` to a fresh temp file in ``directory`` and return its path.

    The file is flushed to disk when ``durable``; on any failure it is removed again.
    """
    temp_path = os.path.join(directory, temp_name())
    handle = os.open(temp_path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | _O_BINARY | _O_NOFOLLOW, 0o666)
    try:
        write_and_close(handle, data, durable)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temp_path)
        raise
    return temp_path


def atomic_write(path: str, data: bytes, *, durable: bool = True) -> None:
    """Replace ``path`` with ``data`` so readers and crashes see the old file or the new, never a mix.

    The bytes go to a temp file in the same directory, which is flushed (``fsync`` when
    ``durable``) and then renamed over ``path`` with ``os.replace``. The temp file is removed on
    any failure, including interruption.

    Args:
        path: Target file; its directory must exist.
        data: Complete new content.
        durable: Flush the data to disk before the rename, so a power loss cannot leave an empty
            file behind (it may undo the rename, which leaves the old content).

    Raises:
        OSError: If writing or renaming fails; ``path`` is then unchanged.
    """
    directory = os.path.dirname(path) or "."
    temp_path = _write_temp(directory, data, durable)
    try:
        os.replace(temp_path, path)
    except BaseException:
        try:
            os.unlink(temp_path)
        except OSError:
            pass
        raise


def is_within(path: str, root: str) -> bool:
    """Tell whether ``path``, with every symlink resolved, lies inside ``root`` (also resolved)."""
    real_root = os.path.realpath(root)
    real_path = os.path.realpath(path)
    if real_path == real_root:
        return False
    try:
        return os.path.commonpath([real_root, real_path]) == real_root
    except ValueError:
        return False


def atomic_create(path: str, data: bytes, *, durable: bool = True) -> bool:
    """Create ``path`` holding ``data`` unless it already exists; never expose a partial file.

    The bytes are written to a temp file first, then hard-linked to ``path`` (which fails if the
    name is taken) and the temp name removed. Where hard links are not supported the temp file is
    renamed after an existence check (a small window in which a racing writer could be replaced).

    Args:
        path: File to create; its directory must exist.
        data: Complete content.
        durable: Also force data and directory entry to disk.

    Returns:
        ``True`` if the file was created, ``False`` if ``path`` already existed (nothing changed).

    Raises:
        OSError: If writing fails.
    """
    directory = os.path.dirname(path) or "."
    temp_path = _write_temp(directory, data, durable)
    try:
        try:
            os.link(temp_path, path)
        except FileExistsError:
            return False
        except OSError:
            if os.path.lexists(path):
                return False
            os.replace(temp_path, path)
    finally:
        try:
            os.unlink(temp_path)
        except OSError:
            pass
    if durable:
        _fsync_directory(directory)
    return True


def sweep_stale_temps(directory: int | str) -> int:
    """Remove abandoned temp files of our naming from one directory; return how many went.

    Only regular files named exactly like :func:`temp_name` output and not modified for
    :data:`STALE_TEMP_SECONDS` are removed (a symlink or any other name is never touched). Failures
    are ignored: sweeping is housekeeping.

    Args:
        directory: An open directory descriptor (names are then removed relative to it) or a path.
    """
    horizon = time.time() - STALE_TEMP_SECONDS
    removed = 0
    try:
        scanner = os.scandir(directory)
    except OSError:
        return 0
    with scanner as entries:
        for entry in entries:
            if not _TEMP_NAME.fullmatch(entry.name):
                continue
            try:
                info = entry.stat(follow_symlinks=False)
                if not stat.S_ISREG(info.st_mode) or info.st_mtime > horizon:
                    continue
                if isinstance(directory, int):
                    os.unlink(entry.name, dir_fd=directory)
                else:
                    os.unlink(entry.path)
            except OSError:
                continue
            removed += 1
    if removed:
        logger.info("removed=<%d> | swept temp files abandoned by killed writers", removed)
    return removed


@contextmanager
def interprocess_lock(path: str, *, dir_fd: int | None = None) -> Iterator[None]:
    """Hold an exclusive ``flock`` on ``path`` (created if needed); a no-op where ``fcntl`` is missing.

    Serialises read-modify-write cycles of a shared file between processes. The lock file is never
    reached through a symlink (``O_NOFOLLOW``); with ``dir_fd`` it is opened relative to that
    directory descriptor.
    """
    if fcntl is None:  # pragma: no cover - Windows
        yield
        return
    flags = os.O_RDWR | os.O_CREAT | _O_NOFOLLOW | _O_CLOEXEC
    handle = os.open(path, flags, 0o666) if dir_fd is None else os.open(path, flags, 0o666, dir_fd=dir_fd)
    try:
        fcntl.flock(handle, fcntl.LOCK_EX)
        yield
    finally:
        os.close(handle)
