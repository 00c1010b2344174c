"""The offloader's head preview over blocks joined by newlines, cut by the core without joining them."""

from __future__ import annotations

import json

import pytest
from _token_samples import ENCODINGS, texts
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from strands_offload import _native, preview_bounds
from strands_offload._native import token_counter

HYP = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])

_json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=30),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4),
    max_leaves=20,
)
# A block as the offloader previews it: its text, or its stored JSON (ASCII bytes) as a memoryview.
_parts = st.lists(
    texts | _json_values.map(lambda v: memoryview(json.dumps(v, indent=2).encode("ascii"))),
    min_size=1,
    max_size=5,
)


def _joined(parts: list[str | memoryview]) -> str:
    return "\n".join(p if isinstance(p, str) else str(p, "ascii") for p in parts)


@HYP
@given(parts=_parts, tokens=st.integers(0, 60), encoding=st.sampled_from(ENCODINGS))
def test_equals_the_cut_of_the_joined_text(parts: list[str | memoryview], tokens: int, encoding: str) -> None:
    expected = preview_bounds(_joined(parts), tokens, mode="head", encoding=token_counter(encoding))[0]
    assert _native.joined_head_end(parts, tokens, encoding=token_counter(encoding)) == expected


@pytest.mark.parametrize("encoding", ENCODINGS)
def test_long_parts_are_read_in_windows_and_cut_like_the_whole(encoding: str) -> None:
    # A first piece far longer than any window the cut starts with, then more blocks.
    parts: list[str | memoryview] = [
        "x" * 50_000 + " tail words",
        memoryview(json.dumps({"rows": list(range(5000))}, indent=2).encode("ascii")),
        "last block",
    ]
    for tokens in (0, 1, 7, 300, 10**6):
        expected = preview_bounds(_joined(parts), tokens, mode="head", encoding=token_counter(encoding))[0]
        assert _native.joined_head_end(parts, tokens, encoding=token_counter(encoding)) == expected


@pytest.mark.parametrize(
    ("text", "tokens", "encoding", "expected"),
    [
        # Whole in 2 tokens (the space run is one): a preview grown by windows of 16 characters
        # per token used to stop inside the run and cut at 69.
        ("Hello" + " " * 128, 2, "cl100k_base", 133),
        # A dash run whose tokens differ once the run is read whole: the window cut said 309.
        ("Hello" + "-" * 320, 5, "o200k_base", 261),
    ],
)
def test_a_run_longer_than_the_first_window_is_cut_as_a_whole(
    text: str, tokens: int, encoding: str, expected: int
) -> None:
    assert preview_bounds(text, tokens, mode="head", encoding=token_counter(encoding))[0] == expected
    assert _native.joined_head_end([text], tokens, encoding=token_counter(encoding)) == expected


def test_everything_fits_gives_the_joined_length() -> None:
    parts: list[str | memoryview] = ["one", memoryview(b"[1, 2]"), "three"]
    assert _native.joined_head_end(parts, 1000, encoding=token_counter("cl100k_base")) == len("one\n[1, 2]\nthree")


def test_other_part_types_and_non_ascii_json_are_refused() -> None:
    with pytest.raises(TypeError, match="parts must be str or memoryview, got bytes at index 1"):
        _native.joined_head_end(["a", b"b"], 3, encoding=token_counter("cl100k_base"))
    with pytest.raises(UnicodeDecodeError):
        _native.joined_head_end([memoryview("é".encode())], 0, encoding=token_counter("cl100k_base"))
    with pytest.raises(ValueError, match="heuristic"):
        _native.joined_head_end(["a"], 3, encoding=token_counter("heuristic"))
