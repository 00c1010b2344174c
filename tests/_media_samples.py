"""Real media files for the media-token tests, made with the standard library only.

``png`` writes a complete, decodable PNG (IHDR, one zlib IDAT, IEND, CRCs); ``gif`` a one-colour
GIF; ``jpeg_header`` and ``webp_header`` the leading bytes an encoder writes (the size readers look
at nothing else); ``pdf`` a PDF with a flat page tree, as a simple writer makes it.
"""

from __future__ import annotations

import functools
import struct
import zlib


def _chunk(kind: bytes, data: bytes) -> bytes:
    return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)


@functools.lru_cache(maxsize=64)
def png(width: int, height: int, shade: int = 0x80) -> bytes:
    """A grey RGB PNG of ``width`` x ``height`` pixels."""
    row = b"\x00" + bytes([shade, shade // 2, 255 - shade]) * width
    raw = zlib.compress(row * height, 1)
    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    return b"\x89PNG\r\n\x1a\n" + _chunk(b"IHDR", header) + _chunk(b"IDAT", raw) + _chunk(b"IEND", b"")


def png_header(width: int, height: int) -> bytes:
    """The signature and IHDR chunk of a PNG that declares ``width`` x ``height`` (no pixel data)."""
    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    return b"\x89PNG\r\n\x1a\n" + _chunk(b"IHDR", header)


def gif(width: int, height: int) -> bytes:
    """A one-colour GIF89a of ``width`` x ``height`` pixels."""
    screen = struct.pack("<HHBBB", width, height, 0x80, 0, 0)
    palette = b"\x00\x00\x00\xff\xff\xff"
    image = b"," + struct.pack("<HHHHB", 0, 0, width, height, 0) + b"\x02\x02\x4c\x01\x00"
    return b"GIF89a" + screen + palette + image + b";"


def jpeg_header(width: int, height: int, exif_bytes: int = 2000) -> bytes:
    """SOI, APP0 (JFIF), an APP1 of ``exif_bytes``, DQT and a baseline SOF0: what a camera writes first."""
    app0 = b"\xff\xe0" + struct.pack(">H", 16) + b"JFIF\x00\x01\x01\x00\x00\x01\x00\x01\x00\x00"
    app1 = b"\xff\xe1" + struct.pack(">H", exif_bytes + 2) + b"E" * exif_bytes
    dqt = b"\xff\xdb" + struct.pack(">H", 67) + b"\x00" + bytes(range(64))
    sof = b"\xff\xc0" + struct.pack(">HBHHB", 17, 8, height, width, 3) + b"\x01\x22\x00\x02\x11\x01\x03\x11\x01"
    return b"\xff\xd8" + app0 + app1 + dqt + sof + b"\xff\xda\x00\x02"


def webp_header(width: int, height: int) -> bytes:
    """The RIFF header and lossy VP8 frame header of a ``width`` x ``height`` WebP."""
    frame = b"\x30\x01\x00\x9d\x01\x2a" + struct.pack("<HH", width, height)
    return b"RIFF" + struct.pack("<I", 4 + 8 + len(frame)) + b"WEBPVP8 " + struct.pack("<I", len(frame)) + frame


def pdf(pages: int) -> bytes:
    """A PDF of ``pages`` empty letter pages."""
    objects = ["<< /Type /Catalog /Pages 2 0 R >>"]
    kids = " ".join(f"{i + 3} 0 R" for i in range(pages))
    objects.append(f"<< /Type /Pages /Kids [{kids}] /Count {pages} >>")
    objects += ["<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] >>"] * pages
    body = "".join(f"{i + 1} 0 obj\n{o}\nendobj\n" for i, o in enumerate(objects))
    return f"%PDF-1.4\n{body}trailer\n<< /Root 1 0 R >>\n%%EOF\n".encode()


def image_block(data: bytes | str, fmt: str = "png") -> dict[str, object]:
    """A Strands image content block holding ``data``."""
    return {"image": {"format": fmt, "source": {"bytes": data}}}
