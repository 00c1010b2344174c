"""Counting and encoding of the bench's generated text kinds, differential against tiktoken.

One generator per kind of ``strands-offload bench`` (base64 of random bytes, CJK mixed with ASCII
punctuation and digits, emoji-heavy chat, hex dumps, minified JavaScript), each reaching the
native fast paths for that kind (the token index's direct tables and filter, the merge loop on
pieces of up to 24 bytes of multi-byte characters, the scanner's CJK and symbol runs) and the
characters just outside them, plus a slice of every packaged corpus.
"""

from __future__ import annotations

import base64
from typing import Any

import pytest
import strands_offload
from _token_samples import ENCODINGS, HYP
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from strands_offload import _native
from strands_offload._native import token_counter
from strands_offload.bench import corpus


def _check(tiktoken_encodings: dict[str, Any], name: str, text: str) -> None:
    expected = tiktoken_encodings[name].encode_ordinary(text)
    counter = token_counter(name)
    assert _native.encode(text, counter) == expected
    assert _native._count_tokens_in_parts(text, counter, 1) == len(expected)
    assert strands_offload.count_tokens(text, name) == len(expected)


def _chars(*ranges: tuple[int, int]) -> list[str]:
    return [chr(c) for low, high in ranges for c in range(low, high + 1)]


# CJK letters of the scanner's ranges and their neighbours just outside (U+9FA6.., U+3097, U+30FB
# "・" is punctuation, U+30FC "ー" a modifier letter, U+D7A4..), CJK and fullwidth punctuation.
_CJK = st.sampled_from(
    _chars((0x4E00, 0x4E2F), (0x9F90, 0x9FAF), (0x3040, 0x3050), (0x3090, 0x30A5), (0x30F0, 0x30FF))
    + _chars((0xAC00, 0xAC10), (0xD790, 0xD7B0), (0x3000, 0x3012), (0xFF01, 0xFF20), (0xFF5B, 0xFF65))
    + list("的一是不了人我在有他这为数据处理系统服务器東京大阪語開発環境設定")
)
_ASCII_MIX = st.sampled_from(list(",.:;!?()[]{}-/%#&*'\"=+_<>@ \n\r\t") + ["  ", "\n\n", " '", "'s", "2026", "ID="])
_DIGITS = st.integers(min_value=0, max_value=10**7).map(str)
cjk_mixed = st.lists(
    st.one_of(st.lists(_CJK, min_size=1, max_size=12).map("".join), _ASCII_MIX, _DIGITS), max_size=40
).map("".join)

# Emoji from the symbol blocks (and their edges), skin tones, joiners, presentation selectors,
# flags, keycaps, the enclosed alphanumerics (numbers, not symbols) and chat words around them.
_EMOJI = st.sampled_from(
    _chars((0x1F300, 0x1F310), (0x1F5F0, 0x1F64F), (0x1F680, 0x1F690), (0x1F6F0, 0x1F700), (0x1F900, 0x1F910))
    + _chars((0x1F9F0, 0x1FA10), (0x1FA60, 0x1FA80), (0x1FAF0, 0x1FB00), (0x1F0F0, 0x1F10F), (0x1F1E0, 0x1F1FF))
    + _chars((0x1F3F0, 0x1F3FF), (0x2600, 0x2610), (0x26F0, 0x2710), (0x2760, 0x27A0), (0x1F000, 0x1F010))
    + ["\u200d", "\ufe0f", "\ufe0e", "\u20e3", "\u2764\ufe0f", "1\ufe0f\u20e3", "\U0001f469\u200d\U0001f4bb"]
)
_CHAT = st.sampled_from(
    ["lol", "omg", "I'm", "can't", "you'll", "OK", "see", " ", "  ", "\n", "!", "?", "...", ":", "5pm"]
)
emoji_chat = st.lists(
    st.one_of(st.lists(_EMOJI, min_size=1, max_size=6).map("".join), _CHAT, _DIGITS), max_size=40
).map("".join)


@st.composite
def hex_dumps(draw: st.DrawFn) -> str:
    data = draw(st.binary(max_size=96))
    offset = draw(st.integers(min_value=0, max_value=2**32 - 1))
    upper = draw(st.booleans())
    lines = []
    for row in range(0, len(data), 16):
        chunk = data[row : row + 16]
        groups = " ".join(chunk[i : i + 2].hex() for i in range(0, len(chunk), 2))
        groups = groups.upper() if upper else groups
        text = "".join(chr(b) if 32 <= b < 127 else "." for b in chunk)
        lines.append(f"{offset + row:08x}: {groups:<39}  {text}\n")
    return "".join(lines)


@st.composite
def base64_texts(draw: st.DrawFn) -> str:
    data = draw(st.binary(max_size=300))
    style = draw(st.sampled_from(["line", "mime", "urlsafe", "data-uri"]))
    if style == "mime":
        return base64.encodebytes(data).decode("ascii")
    if style == "urlsafe":
        return base64.urlsafe_b64encode(data).decode("ascii").rstrip("=")
    encoded = base64.b64encode(data).decode("ascii")
    return f'"data:image/png;base64,{encoded}"' if style == "data-uri" else encoded


_JS = st.sampled_from(
    list("(){}[];,.:?!=+-*/%<>&|^~'\"`$_")
    + ["function", "return", "var", "e", "t", "n", "0", "1e3", "0x1F", "===", "!==", "=>", "&&", "||", ">>>"]
    + ['"use strict"', "this", "void 0", "a.b", "r[i]", "\\n", "\\u00e9", "/*!", "*/", " ", "\n", "é", "ß"]
)
minified_js = st.lists(_JS, max_size=60).map("".join)

KINDS = {
    "base64-random": base64_texts(),
    "cjk-mixed": cjk_mixed,
    "emoji-chat": emoji_chat,
    "hexdump": hex_dumps(),
    "minified-js": minified_js,
}


@pytest.mark.parametrize("name", ENCODINGS)
@pytest.mark.parametrize("kind", list(KINDS))
@HYP
@given(data=st.data())
def test_generated_kinds_match_tiktoken(
    tiktoken_encodings: dict[str, Any], name: str, kind: str, data: st.DataObject
) -> None:
    _check(tiktoken_encodings, name, data.draw(KINDS[kind], label=kind))


@pytest.mark.parametrize("name", ENCODINGS)
@pytest.mark.parametrize("kind", list(KINDS))
@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_long_texts_of_repeated_pieces_match_tiktoken(
    tiktoken_encodings: dict[str, Any], name: str, kind: str, data: st.DataObject
) -> None:
    # Past 32 KB a counting pass keeps recent pieces and their counts (a memo): drawn texts
    # repeated in a drawn order, so pieces recur, collide and follow other pieces.
    parts = data.draw(st.lists(KINDS[kind], min_size=1, max_size=8), label="parts")
    order = data.draw(st.lists(st.integers(min_value=0, max_value=len(parts) - 1), min_size=1, max_size=50))
    text = "".join(parts[i] for i in order)
    text = text * (40_000 // max(len(text.encode()), 1) + 1) if text else text
    _check(tiktoken_encodings, name, text)
    # A limited count keeps a memo too, once past 32 KB.
    total = len(tiktoken_encodings[name].encode_ordinary(text))
    for limit in (total // 2, total - 1, total):
        if limit >= 0:
            assert strands_offload.count_tokens(text, name, limit=limit) == (total if total <= limit else limit + 1)


@pytest.mark.parametrize("name", ENCODINGS)
@pytest.mark.parametrize("kind", corpus.KINDS)
def test_bench_corpora_match_tiktoken(tiktoken_encodings: dict[str, Any], name: str, kind: str) -> None:
    # 40,000 characters of every packaged kind, whole (the merge loop, the scanner and the memo
    # of a long counting pass on real pieces).
    _check(tiktoken_encodings, name, corpus.text(kind, 40_000))


@pytest.mark.parametrize("name", ENCODINGS)
def test_every_single_character_of_the_fast_ranges(tiktoken_encodings: dict[str, Any], name: str) -> None:
    # Each character alone, after a letter, after punctuation and before a space: the scanner's
    # classes and the index's direct tables for every 3-byte character and every emoji-block one.
    chars = _chars((0x2000, 0x2BFF), (0x3000, 0x30FF), (0x4E00, 0x4FFF), (0x9F00, 0x9FFF), (0xAC00, 0xAC80))
    chars += _chars((0xD780, 0xD7FF), (0xFE00, 0xFE0F), (0xFF00, 0xFFEF), (0x1F000, 0x1FAFF))
    text = "".join(f"{c}x{c}.{c}{c} {c}\n" for c in chars)
    _check(tiktoken_encodings, name, text)
