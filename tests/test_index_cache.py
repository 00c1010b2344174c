"""The retrieval tools' line-index cache: reuse only for the same stored content, never stale."""

from __future__ import annotations

import pytest
from strands_offload import TextIndex, search_content
from strands_offload._index_cache import IndexCache
from strands_offload.context_offloader._backend import StoredBlob
from strands_offload.context_offloader._frame import frame

TEXT = "\n".join(f"line {i} {'needle' if i % 7 == 0 else 'hay'}" for i in range(500))


def _blob(text: str) -> StoredBlob:
    raw = frame(text.encode(), "text/plain")
    return StoredBlob(raw, 2 + len("text/plain"), "text/plain")


def _index(cache: IndexCache[TextIndex], reference: str, blob: StoredBlob) -> TextIndex:
    """The offloader's use: an index of the content past the frame header."""
    return cache.get(reference, blob.raw, lambda: TextIndex(blob.raw, blob.offset), start=blob.offset)


def test_same_object_reuses_the_index_and_new_content_rebuilds_it() -> None:
    cache: IndexCache[TextIndex] = IndexCache()
    blob = _blob(TEXT)
    first = _index(cache, "k", blob)
    assert _index(cache, "k", blob) is first
    assert _index(cache, "k", StoredBlob(bytes(bytearray(blob.raw)), blob.offset, blob.content_type)) is first
    changed = _blob(TEXT.replace("needle", "nEEdle", 1))
    rebuilt = _index(cache, "k", changed)
    assert rebuilt is not first
    assert search_content(rebuilt, pattern="needle") == search_content(
        TEXT.replace("needle", "nEEdle", 1), pattern="needle"
    )


def test_forget_and_size_bounds() -> None:
    cache: IndexCache[TextIndex] = IndexCache(max_entries=2)
    blobs = {key: _blob(TEXT + key) for key in "abc"}
    indexes = {key: _index(cache, key, blob) for key, blob in blobs.items()}
    assert _index(cache, "c", blobs["c"]) is indexes["c"]
    assert _index(cache, "a", blobs["a"]) is not indexes["a"]  # evicted as the oldest
    cache.forget("a")
    assert _index(cache, "a", blobs["a"]) is not indexes["a"]


def test_bytes_bound_keeps_small_originals_and_never_a_large_one() -> None:
    cache: IndexCache[int] = IndexCache(max_entries=8, max_bytes=10)
    builds: list[bytes] = []

    def build(source: bytes) -> int:
        builds.append(source)
        return len(builds)

    for source in (b"aaaa", b"bbbb", b"cccc"):  # 12 bytes: the oldest goes
        cache.get(source.decode(), source, lambda source=source: build(source))
    assert cache.get("aaaa", b"aaaa", lambda: build(b"aaaa")) == 4
    large = b"x" * 11
    assert cache.get("large", large, lambda: build(large)) == 5
    assert cache.get("large", large, lambda: build(large)) == 6  # too large to keep
    assert cache.get("cccc", b"cccc", lambda: build(b"cccc")) == 3  # still kept


def test_a_different_start_or_a_failed_build_is_not_reused() -> None:
    cache: IndexCache[str] = IndexCache()
    source = b"\x00\x01a" + TEXT.encode()
    assert cache.get("k", source, lambda: "from 3", start=3) == "from 3"
    assert cache.get("k", source, lambda: "from 2", start=2) == "from 2"

    def fail() -> str:
        raise UnicodeDecodeError("utf-8", b"\xff", 0, 1, "invalid start byte")

    with pytest.raises(UnicodeDecodeError):
        cache.get("bad", b"\xff", fail)
    assert cache.get("bad", b"\xff", lambda: "rebuilt") == "rebuilt"


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
