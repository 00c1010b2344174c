"""The retrieval path's line-index cache: reuse only for the same stored content, never stale."""

from __future__ import annotations

import pytest
from strands_offload import TextIndex, search_content
from strands_offload.context_offloader._backend import StoredBlob
from strands_offload.context_offloader._frame import frame
from strands_offload.context_offloader._index_cache import IndexCache

TEXT = "\n".join(f"line {i} {'needle' if i % 7 == 0 else 'hay'}" for i in range(500))


def _blob(text: str) -> StoredBlob:
    raw = frame(text.encode(), "text/plain")
    return StoredBlob(raw, 2 + len("text/plain"), "text/plain")


def test_same_object_reuses_the_index_and_new_content_rebuilds_it() -> None:
    cache = IndexCache()
    blob = _blob(TEXT)
    first = cache.get("k", blob)
    assert cache.get("k", blob) is first
    assert cache.get("k", StoredBlob(bytes(bytearray(blob.raw)), blob.offset, blob.content_type)) is first
    changed = _blob(TEXT.replace("needle", "nEEdle", 1))
    rebuilt = cache.get("k", changed)
    assert rebuilt is not first
    assert search_content(rebuilt, pattern="needle") == search_content(
        TEXT.replace("needle", "nEEdle", 1), pattern="needle"
    )


def test_forget_and_size_bounds() -> None:
    cache = IndexCache(max_entries=2)
    blobs = {key: _blob(TEXT + key) for key in "abc"}
    indexes = {key: cache.get(key, blob) for key, blob in blobs.items()}
    assert cache.get("c", blobs["c"]) is indexes["c"]
    assert cache.get("a", blobs["a"]) is not indexes["a"]  # evicted as the oldest
    cache.forget("a")
    assert cache.get("a", blobs["a"]) is not indexes["a"]


def test_offset_index_matches_the_content_alone() -> None:
    raw = b"\x00\x0atext/plain" + TEXT.encode()
    assert search_content(TextIndex(raw, 12), pattern="needle", context_lines=1) == search_content(
        TEXT, pattern="needle", context_lines=1
    )


def test_offset_index_raises_pythons_decode_error() -> None:
    content = b"ok\n\xff\xfe broken"
    with pytest.raises(UnicodeDecodeError) as ours:
        TextIndex(b"HEADER" + content, 6)
    with pytest.raises(UnicodeDecodeError) as python:
        content.decode("utf-8")
    assert str(ours.value) == str(python.value)


def test_offset_must_fit_and_needs_bytes() -> None:
    with pytest.raises(ValueError, match="past the end"):
        TextIndex(b"abc", 4)
    with pytest.raises(TypeError, match="only accepted with bytes"):
        TextIndex("abc", 1)
