"""Content-type framing against the reference plugin's private frame helpers."""

from __future__ import annotations

import asyncio

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from strands.vended_plugins.context_offloader.plugin import _frame_content, _unframe_content
from strands_offload.context_offloader._frame import frame, read_framed, unframe, write_framed
from strands_offload.storage import InMemoryStorage


@settings(max_examples=200, deadline=None)
@given(st.binary(max_size=64), st.text(max_size=40))
def test_frame_round_trip_matches_reference(content: bytes, content_type: str) -> None:
    framed = frame(content, content_type)
    assert framed == _frame_content(content, content_type)
    assert unframe(framed) == _unframe_content(framed) == (content, content_type)


@settings(max_examples=200, deadline=None)
@given(st.binary(max_size=12))
def test_unframe_errors_match_reference(data: bytes) -> None:
    def outcome(function: object, value: bytes) -> object:
        try:
            return function(value)  # type: ignore[operator]
        except ValueError as error:
            return (type(error).__name__, str(error))

    assert outcome(unframe, data) == outcome(_unframe_content, data)


def test_exact_error_texts() -> None:
    with pytest.raises(ValueError, match=r"^Corrupt storage frame: expected at least 2 bytes, got 1$"):
        unframe(b"\x00")
    with pytest.raises(ValueError, match=r"^Corrupt storage frame: content-type length 10 exceeds frame size 5$"):
        unframe(b"\x00\x0aabc")


def test_oversized_content_type_is_refused_instead_of_corrupted() -> None:
    with pytest.raises(ValueError, match="Content type too long"):
        frame(b"x", "a" * 65_536)
    assert unframe(frame(b"x", "a" * 65_535)) == (b"x", "a" * 65_535)


def test_framed_storage_helpers_name_the_reference() -> None:
    async def scenario() -> None:
        storage = InMemoryStorage()
        assert await write_framed(storage, "t_0", b"body", "application/json") == "t_0"
        assert await storage.read("t_0") == _frame_content(b"body", "application/json")
        assert await read_framed(storage, "t_0") == (b"body", "application/json")
        with pytest.raises(KeyError, match="Reference not found: missing"):
            await read_framed(storage, "missing")
        await storage.write("bad", b"\x00\xffxx")
        with pytest.raises(ValueError, match=r"^Stored entry 'bad' is unreadable: Corrupt storage frame: content-type"):
            await read_framed(storage, "bad")
        await storage.write("badutf", b"\x00\x02\xff\xfe")
        with pytest.raises(ValueError, match="^Stored entry 'badutf' is unreadable"):
            await read_framed(storage, "badutf")
        assert await read_framed(storage, "t_0") == (b"body", "application/json")

    asyncio.run(scenario())
