"""Token counting, encode/decode and batch counting, differential against tiktoken."""

from __future__ import annotations

import math
from typing import Any

import pytest
import strands_offload
from _token_samples import ENCODINGS, FRAGMENTS, HYP, STDLIB, texts
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from strands_offload import _native
from strands_offload._native import token_counter


def _expected_limit(true_count: int, limit: int) -> int:
    return true_count if true_count <= limit else limit + 1


@pytest.mark.parametrize("name", ENCODINGS)
@HYP
@given(text=texts)
def test_encode_and_count_match_tiktoken(tiktoken_encodings: dict[str, Any], name: str, text: str) -> None:
    expected = tiktoken_encodings[name].encode_ordinary(text)
    assert _native.encode(text, token_counter(name)) == expected
    assert strands_offload.count_tokens(text, name) == len(expected)


@pytest.mark.parametrize("name", ENCODINGS)
@HYP
@given(text=texts, limit=st.integers(min_value=0, max_value=60))
def test_limit_contract_on_generated_text(tiktoken_encodings: dict[str, Any], name: str, text: str, limit: int) -> None:
    true_count = len(tiktoken_encodings[name].encode_ordinary(text))
    assert strands_offload.count_tokens(text, name, limit=limit) == _expected_limit(true_count, limit)


@pytest.mark.parametrize("name", ENCODINGS)
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    parts=st.lists(st.one_of(st.sampled_from(FRAGMENTS), st.text(max_size=10)), min_size=1, max_size=30),
    repeat=st.integers(min_value=50, max_value=400),
    limit=st.integers(min_value=0, max_value=400),
)
def test_limit_contract_on_long_generated_text(
    tiktoken_encodings: dict[str, Any], name: str, parts: list[str], repeat: int, limit: int
) -> None:
    # Long enough that the limited count works on windows of the text.
    text = "".join(parts) * repeat
    true_count = len(tiktoken_encodings[name].encode_ordinary(text))
    assert strands_offload.count_tokens(text, name, limit=limit) == _expected_limit(true_count, limit)


class _Lying(str):
    """A str subclass whose Python-level length and slices are not its text."""

    def __len__(self) -> int:
        return 10

    def __getitem__(self, key: object) -> str:
        return "x"

    def encode(self, *args: object, **kwargs: object) -> bytes:  # type: ignore[override]
        return b"x"


@pytest.mark.parametrize("name", ENCODINGS)
def test_limited_count_reads_a_str_subclass_as_the_unlimited_count_does(
    tiktoken_encodings: dict[str, Any], name: str
) -> None:
    for base in ("word " * 4000, "a\ud800b " * 3000):
        text = _Lying(base)
        true_count = len(tiktoken_encodings[name].encode_ordinary(str.__str__(base)))
        assert strands_offload.count_tokens(text, name) == true_count
        for limit in (0, 100, true_count - 1, true_count, 10**6):
            assert strands_offload.count_tokens(text, name, limit=limit) == _expected_limit(true_count, limit)


@pytest.mark.parametrize("name", ENCODINGS)
def test_limited_count_of_one_long_piece_costs_what_the_limit_does(
    tiktoken_encodings: dict[str, Any], name: str
) -> None:
    # A run of one letter is a single pre-tokenizer piece. The count stops on a bound
    # of its length (no token is longer than the vocabulary's longest), so a limit of
    # 100 reads about 100 tokens' worth of it whatever the length; the exact counts
    # near the bound still match tiktoken.
    for n in (50, 1000, 5000, 20_000):
        text = "a" * n
        true_count = len(tiktoken_encodings[name].encode_ordinary(text))
        for limit in (0, 1, true_count - 1, true_count, true_count + 1):
            assert strands_offload.count_tokens(text, name, limit=limit) == _expected_limit(true_count, limit)
    huge = "a" * (64 << 20)
    assert strands_offload.count_tokens(huge, name, limit=100) == 101


@pytest.mark.parametrize("name", ENCODINGS)
def test_real_files_match_tiktoken(tiktoken_encodings: dict[str, Any], name: str) -> None:
    enc = tiktoken_encodings[name]
    for file_name, text in STDLIB:
        expected = enc.encode_ordinary(text)
        assert _native.encode(text, token_counter(name)) == expected, file_name
        assert strands_offload.count_tokens(text, name) == len(expected), file_name
        crate_count = getattr(_native, "_count_tokens_bpe_openai", None)  # builds with the bench feature
        if crate_count is not None:
            assert crate_count(text, name) == len(expected), file_name
        for limit in (0, 1, 7, 100, 1000, 5000):
            got = strands_offload.count_tokens(text, name, limit=limit)
            assert got == _expected_limit(len(expected), limit), (file_name, limit)


@pytest.mark.parametrize("name", ENCODINGS)
def test_batch_matches_tiktoken(tiktoken_encodings: dict[str, Any], name: str) -> None:
    batch = [text for _, text in STDLIB] + ["", "a\ud800b", "\ud83d\ude00 x"]
    expected = [len(tiktoken_encodings[name].encode_ordinary(t)) for t in batch]
    assert strands_offload.count_tokens_batch(batch, name) == expected
    assert strands_offload.count_tokens_batch(iter(batch[:3]), name) == expected[:3]
    assert strands_offload.count_tokens_batch([], name) == []


@pytest.mark.parametrize("name", ENCODINGS)
def test_special_inputs(tiktoken_encodings: dict[str, Any], name: str) -> None:
    enc = tiktoken_encodings[name]
    samples = [
        "",
        " " * 1000,
        "\n" * 300 + "x",
        "x" + " \t " * 200,
        "a" * 3000,
        "\U0001f389" * 500,
        "\u4e2d" * 2000,
        "a\ud800b",
        "\ud83d\ude00",
        "\udc00\ud800",
        "1234567890" * 50,
    ]
    for text in samples:
        expected = enc.encode_ordinary(text)
        assert _native.encode(text, token_counter(name)) == expected, text[:20]
        assert strands_offload.count_tokens(text, name) == len(expected), text[:20]
    assert strands_offload.count_tokens("a\ud800b", name) == 3


@pytest.mark.parametrize("name", ENCODINGS)
@HYP
@given(data=st.data())
def test_decode_matches_tiktoken(tiktoken_encodings: dict[str, Any], name: str, data: st.DataObject) -> None:
    enc = tiktoken_encodings[name]
    ids = data.draw(st.lists(st.integers(min_value=0, max_value=enc.n_vocab - 1), max_size=30))
    ids = [i for i in ids if i < enc.max_token_value + 1]
    try:
        expected = enc.decode(ids)
    except KeyError:
        with pytest.raises(KeyError):
            strands_offload.decode(ids, name)
    else:
        assert strands_offload.decode(ids, name) == expected


@pytest.mark.parametrize("name", ENCODINGS)
def test_every_token_decodes_like_tiktoken(tiktoken_encodings: dict[str, Any], name: str) -> None:
    enc = tiktoken_encodings[name]
    mismatched = []
    for token in range(enc.max_token_value + 1):
        try:
            expected: str | None = enc.decode([token])
        except KeyError:
            expected = None
        try:
            got: str | None = strands_offload.decode([token], name)
        except KeyError:
            got = None
        if got != expected:
            mismatched.append(token)
    assert mismatched == []


@pytest.mark.parametrize("name", ENCODINGS)
@HYP
@given(text=texts)
def test_round_trip(tiktoken_encodings: dict[str, Any], name: str, text: str) -> None:
    # tiktoken's own round trip: decode(encode(t)) is t with surrogates repaired.
    enc = tiktoken_encodings[name]
    assert strands_offload.decode(strands_offload.encode(text, name), name) == enc.decode(enc.encode_ordinary(text))


def test_decode_errors_match_tiktoken(tiktoken_encodings: dict[str, Any]) -> None:
    enc = tiktoken_encodings["cl100k_base"]
    with pytest.raises(KeyError, match="Invalid token for decoding: 1000000"):
        enc.decode([1_000_000])
    with pytest.raises(KeyError, match="Invalid token for decoding: 1000000"):
        strands_offload.decode([1_000_000])
    with pytest.raises(OverflowError):
        strands_offload.decode([-1])
    assert strands_offload.decode([100257]) == enc.decode([100257]) == "<|endoftext|>"


@HYP
@given(text=texts, limit=st.none() | st.integers(min_value=0, max_value=40))
def test_heuristic_matches_reference(text: str, limit: int | None) -> None:
    from strands.models.model import _heuristic_estimate_text

    expected = _heuristic_estimate_text(text)
    assert expected == math.ceil(len(text) / 4)
    if limit is None:
        assert strands_offload.count_tokens(text, "heuristic") == expected
    else:
        assert strands_offload.count_tokens(text, "heuristic", limit=limit) == _expected_limit(expected, limit)
    assert strands_offload.count_tokens_batch([text, text + "x"], "heuristic") == [
        expected,
        _heuristic_estimate_text(text + "x"),
    ]


def test_unknown_encoding_names_valid_ones() -> None:
    for call in (
        lambda: strands_offload.count_tokens("x", "gpt2"),
        lambda: strands_offload.count_tokens_batch(["x"], "p50k_base"),
        lambda: strands_offload.encode("x", "r50k_base"),
        lambda: strands_offload.decode([1], "nope"),
    ):
        with pytest.raises(ValueError) as info:
            call()
        for valid in ("cl100k_base", "o200k_base", "heuristic"):
            assert valid in str(info.value)
    with pytest.raises(ValueError, match="no token ids"):
        strands_offload.encode("x", "heuristic")
    with pytest.raises(ValueError, match="non-negative"):
        strands_offload.count_tokens("x", limit=-1)
    with pytest.raises(TypeError):
        strands_offload.count_tokens_batch(["x", 3])  # type: ignore[list-item]
    with pytest.raises(TypeError, match="single str"):
        strands_offload.count_tokens_batch("abc")


def test_default_encoding_is_cl100k(tiktoken_encodings: dict[str, Any]) -> None:
    text = "The default encoding is cl100k_base, as the design says."
    assert strands_offload.encode(text) == tiktoken_encodings["cl100k_base"].encode_ordinary(text)
    assert strands_offload.count_tokens(text) == len(tiktoken_encodings["cl100k_base"].encode_ordinary(text))
