"""Counting one text in parts on several threads gives tiktoken's count, wherever the cuts land.

``_native._count_tokens_in_parts`` cuts any text into the given number of parts (``count_tokens``
does so only past its size threshold), so short texts reach every cut rule.
"""

from __future__ import annotations

import base64
import json
import random
from typing import Any

import pytest
import strands_offload
from _token_samples import ENCODINGS, FRAGMENTS, HYP, STDLIB, texts
from hypothesis import given
from hypothesis import strategies as st
from strands_offload import _native
from strands_offload._native import token_counter

# Texts the cut rules could get wrong: whitespace runs before digits and letters, newlines
# before '/' and spaces, contractions, digit runs, CJK and its punctuation, surrogates.
TRICKY = [
    "  \n  ",
    " \t 1",
    "   12345",
    "\n\n/x",
    ".\n/\n",
    "'s 's'S",
    "x'LL 'll",
    "1234567",
    "a1b22c333",
    "\u4e2d\u6587\u3002\n\u65e5\u672c 12",
    "\u3000\n\u00a0 1",
    "\r\n\r\nA",
    "\n \nb",
    "\ud83d\ude00 \ud800 2",
]


def _kinds() -> dict[str, str]:
    """About 40 KB of every corpus kind of the benches (small, so many cuts are cheap)."""
    rnd = random.Random(3)
    code = next(text for name, text in STDLIB if name.endswith(".py"))
    prose = next(text for name, text in STDLIB if name == "topics.py")
    cjk = "".join(text for name, text in STDLIB if name.endswith("-utf8.txt")) or "\u4e2d\u6587\u3002\n"
    logs = "".join(
        f"2026-11-30T12:{rnd.randrange(60):02d}:07Z INFO worker-{rnd.randrange(16)} "
        f"req={rnd.getrandbits(64):016x} GET /api/v1/items/{rnd.randrange(10**6)} status=200\n"
        for _ in range(400)
    )
    records = [{"id": i, "name": f"item-{i}", "price": rnd.random() * 100, "tags": ["a", "café"]} for i in range(400)]
    b64 = base64.b64encode(bytes(rnd.getrandbits(8) for _ in range(30_000))).decode()
    kinds = {"code": code, "prose": prose, "logs": logs, "json": json.dumps(records, indent=2), "cjk": cjk}
    kinds["base64"] = b64
    return {kind: text[:40_000] for kind, text in kinds.items()}


KINDS = _kinds()


@pytest.mark.parametrize("name", ENCODINGS)
@pytest.mark.parametrize("kind", list(KINDS))
def test_every_kind_in_parts(tiktoken_encodings: dict[str, Any], name: str, kind: str) -> None:
    text = KINDS[kind]
    expected = len(tiktoken_encodings[name].encode_ordinary(text))
    for parts in (2, 3, 5, 8, 13, 32):
        assert _native._count_tokens_in_parts(text, token_counter(name), parts) == expected, parts


@pytest.mark.parametrize("name", ENCODINGS)
@pytest.mark.parametrize("kind", list(KINDS))
def test_past_the_threshold(tiktoken_encodings: dict[str, Any], name: str, kind: str) -> None:
    # Long enough (> 128 KB) that count_tokens itself splits the text.
    text = (KINDS[kind] * 5)[:200_000]
    assert strands_offload.count_tokens(text, name) == len(tiktoken_encodings[name].encode_ordinary(text))


@pytest.mark.parametrize("name", ENCODINGS)
@pytest.mark.parametrize("tricky", TRICKY)
def test_cuts_forced_onto_tricky_spots(tiktoken_encodings: dict[str, Any], name: str, tricky: str) -> None:
    # Letters offer no cut, so the only cuts near the middle are inside the tricky part,
    # which is slid across the middle.
    enc = tiktoken_encodings[name]
    for shift in range(-8, 9):
        text = "abc" * 20 + "d" * (shift + 8) + tricky + "e" * (8 - shift) + "fgh" * 20
        expected = len(enc.encode_ordinary(text))
        for parts in (2, 3, 4):
            assert _native._count_tokens_in_parts(text, token_counter(name), parts) == expected, (shift, parts)


@pytest.mark.parametrize("name", ENCODINGS)
@HYP
@given(text=texts, parts=st.integers(min_value=1, max_value=12))
def test_generated_text_in_parts(tiktoken_encodings: dict[str, Any], name: str, text: str, parts: int) -> None:
    assert _native._count_tokens_in_parts(text, token_counter(name), parts) == len(
        tiktoken_encodings[name].encode_ordinary(text)
    )


@pytest.mark.parametrize("name", ENCODINGS)
@HYP
@given(parts=st.lists(st.sampled_from(FRAGMENTS + TRICKY), min_size=1, max_size=60), cuts=st.integers(2, 40))
def test_fragment_soup_in_parts(tiktoken_encodings: dict[str, Any], name: str, parts: list[str], cuts: int) -> None:
    text = "".join(parts) * 3
    assert _native._count_tokens_in_parts(text, token_counter(name), cuts) == len(
        tiktoken_encodings[name].encode_ordinary(text)
    )


@pytest.mark.parametrize("name", ENCODINGS)
def test_batch_mixes_long_and_short_texts(tiktoken_encodings: dict[str, Any], name: str) -> None:
    long = (KINDS["prose"] * 10)[:300_000]
    batch = [long, *KINDS.values(), "", "a\ud800b", *TRICKY, long[:150_000]]
    expected = [len(tiktoken_encodings[name].encode_ordinary(t)) for t in batch]
    assert strands_offload.count_tokens_batch(batch, name) == expected
