"""Media tokens (``media_tokens=``): the native meter per image block, beside the SDK's estimate.

Run: ``pytest benches/bench_media.py --benchmark-group-by=group``. The ``reference`` member is the
SDK's base ``count_tokens`` of a one-block message (it counts an image as 0, so it is what the
option adds to, not an equal answer); ``native`` is ``_native.media_block_tokens`` with the
Anthropic rule, reading the size from the header (PNG bytes, base64 JPEG text whose frame header
sits after a 20 KB EXIF segment) without decoding the image.
"""

from __future__ import annotations

import asyncio
import base64
import struct
import zlib
from typing import Any

import pytest
from _models import HeuristicModel  # tests/ is on pytest's pythonpath (pyproject.toml)
from strands_offload import _native

ROUNDS = 2_000


def _png(width: int, height: int) -> bytes:
    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))

    raw = zlib.compress((b"\x00" + b"\x80\x40\x20" * width) * height, 1)
    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", raw) + chunk(b"IEND", b"")


def _jpeg_base64(width: int, height: int) -> str:
    app1 = b"\xff\xe1" + struct.pack(">H", 20_002) + b"E" * 20_000
    sof = b"\xff\xc0" + struct.pack(">HBHHB", 17, 8, height, width, 3) + b"\x01\x22\x00\x02\x11\x01\x03\x11\x01"
    body = b"\xff\xd8" + app1 + sof + b"\xff\xda\x00\x02" + bytes(400_000) + b"\xff\xd9"
    return base64.b64encode(body).decode("ascii")


BLOCKS = {
    "png 2560x1600 bytes": {"image": {"format": "png", "source": {"bytes": _png(2560, 1600)}}},
    "jpeg 4000x3000 base64": {"image": {"format": "jpeg", "source": {"bytes": _jpeg_base64(4000, 3000)}}},
}


@pytest.mark.parametrize("kind", list(BLOCKS))
@pytest.mark.parametrize("member", ["reference", "native"])
def test_image_block(benchmark: Any, kind: str, member: str) -> None:
    block = BLOCKS[kind]
    benchmark.group = f"media tokens: one image block, {kind}"
    benchmark.name = member
    if member == "reference":
        model, messages = HeuristicModel(), [{"role": "user", "content": [block]}]
        loop = asyncio.new_event_loop()
        try:
            result = benchmark.pedantic(
                lambda: loop.run_until_complete(model.count_tokens(messages)), rounds=ROUNDS, warmup_rounds=10
            )
        finally:
            loop.close()
        assert result == 0
    else:
        result = benchmark.pedantic(
            lambda: _native.media_block_tokens(block, "anthropic"), rounds=ROUNDS, warmup_rounds=10
        )
        assert result == {"png 2560x1600 bytes": 1600, "jpeg 4000x3000 base64": 1598}[kind]
