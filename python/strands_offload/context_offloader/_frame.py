"""Content-type framing of offloaded blocks kept in unified storage.

A unified backend stores bytes only, so the offloader prefixes each block with its content type:
two bytes (big-endian length of the UTF-8 content type), the content type, then the raw content.
The format and the error texts are those of strands-agents 1.62.0, so entries written by either
package are read by the other.
"""

from __future__ import annotations

from typing import Any

__all__ = [
    "MAX_CONTENT_TYPE_BYTES",
    "UnreadableEntryError",
    "frame",
    "frame_header",
    "read_framed",
    "read_frame_raw",
    "unframe",
    "write_framed",
]

#: Longest content type (in UTF-8 bytes) the two-byte header can describe.
MAX_CONTENT_TYPE_BYTES = 0xFFFF


class UnreadableEntryError(ValueError):
    """A stored entry that is not a valid frame: ``Stored entry '{reference}' is unreadable: {reason}``.

    Attributes:
        reference: The reference that was read.
        reason: What is wrong with the frame; never names the reference, so callers that must not
            show storage keys can repeat it.
    """

    def __init__(self, reference: str, reason: str) -> None:
        super().__init__(f"Stored entry '{reference}' is unreadable: {reason}")
        self.reference = reference
        self.reason = reason


def frame_prefix(content_type: str) -> bytes:
    """The header that starts a frame of ``content_type`` (the content follows it).

    Raises:
        ValueError: If the content type does not fit the header (more than 65,535 UTF-8 bytes);
            the reference silently wrote a corrupt frame in that case.
    """
    label = content_type.encode("utf-8")
    size = len(label)
    if size > MAX_CONTENT_TYPE_BYTES:
        raise ValueError(f"Content type too long for a storage frame: {size} bytes (limit {MAX_CONTENT_TYPE_BYTES})")
    return size.to_bytes(2, "big") + label


def frame(content: bytes, content_type: str) -> bytes:
    """Return ``content`` prefixed with the header describing ``content_type`` (see :func:`frame_prefix`)."""
    return b"".join((frame_prefix(content_type), content))


def frame_header(data: bytes) -> tuple[int, str]:
    """Read a frame's header: ``(offset of the content, content_type)``, without copying the content.

    Raises:
        ValueError: ``Corrupt storage frame: ...`` when the header is short or overruns the data.
        UnicodeDecodeError: When the content type is not valid UTF-8.
    """
    total = len(data)
    if total < 2:
        raise ValueError(f"Corrupt storage frame: expected at least 2 bytes, got {total}")
    size = int.from_bytes(data[:2], "big")
    end = 2 + size
    if end > total:
        raise ValueError(f"Corrupt storage frame: content-type length {size} exceeds frame size {total}")
    return end, bytes(data[2:end]).decode("utf-8")


def unframe(data: bytes) -> tuple[bytes, str]:
    """Split a frame into ``(content, content_type)``.

    Raises:
        ValueError: ``Corrupt storage frame: ...`` when the header is short or overruns the data.
        UnicodeDecodeError: When the content type is not valid UTF-8.
    """
    offset, content_type = frame_header(data)
    return bytes(data[offset:]), content_type


async def write_framed(storage: Any, key: str, content: bytes, content_type: str) -> str:
    """Frame ``content`` and write it to unified ``storage`` under ``key``; return ``key``."""
    return await write_frame(storage, key, frame(content, content_type))


async def write_frame(storage: Any, key: str, framed: bytes) -> str:
    """Write an already framed entry to unified ``storage`` under ``key``; return ``key``."""
    await storage.write(key, framed)
    return key


async def read_framed(storage: Any, reference: str) -> tuple[bytes, str]:
    """Read and unframe ``reference`` from unified ``storage``.

    Raises:
        KeyError: ``Reference not found: {reference}`` when the storage has no such entry.
        UnreadableEntryError: When the stored bytes are not a valid frame (a ``ValueError`` whose
            message names the reference and ends with the ``Corrupt storage frame: ...`` text of
            :func:`unframe`).
    """
    data, offset, content_type = await read_frame_raw(storage, reference)
    return bytes(data[offset:]), content_type


async def read_frame_raw(storage: Any, reference: str) -> tuple[bytes, int, str]:
    """Read ``reference`` from unified ``storage`` as ``(frame, content offset, content_type)``.

    The frame is returned as stored (no copy of the content), so callers can recognise the
    very same stored object again. Errors are those of :func:`read_framed`.
    """
    data = await storage.read(reference)
    if data is None:
        raise KeyError(f"Reference not found: {reference}")
    try:
        offset, content_type = frame_header(data)
    except ValueError as error:
        raise UnreadableEntryError(reference, str(error)) from error
    return data, offset, content_type
