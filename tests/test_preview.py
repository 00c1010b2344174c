"""Token-boundary previews: heuristic cuts vs the reference, exact cuts vs tiktoken."""

from __future__ import annotations

from typing import Any

import pytest
import strands_offload
from _token_samples import ENCODINGS, FRAGMENTS, STDLIB, texts
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from strands_offload import Preview, preview

MODES = ["head", "tail", "head_tail"]
HYP = settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def _repair(text: str) -> str:
    """What tiktoken encodes for a Python string that may hold surrogates."""
    return text.encode("utf-16", "surrogatepass").decode("utf-16", "replace")


def _budgets(n: int, mode: str, share: float) -> tuple[int, int]:
    if mode == "head":
        return n, 0
    if mode == "tail":
        return 0, n
    head = int(n * share)
    return head, n - head


def _oracle(enc: Any, text: str, n: int, mode: str, share: float = 0.6) -> tuple[str, str] | None:
    """Expected (head, tail) from tiktoken's tokens, or None when the text fits whole."""
    ids = enc.encode_ordinary(text)
    if len(ids) <= n:
        return None
    chunks = [enc.decode_single_token_bytes(i) for i in ids]
    head_n, tail_n = _budgets(n, mode, share)
    head = ""
    for k in range(head_n, -1, -1):
        try:
            head = b"".join(chunks[:k]).decode("utf-8")
            break
        except UnicodeDecodeError:
            continue
    tail = ""
    for k in range(tail_n, 0, -1):
        try:
            tail = b"".join(chunks[len(chunks) - k :]).decode("utf-8")
            break
        except UnicodeDecodeError:
            continue
    return head, tail


def _check_exact(enc: Any, name: str, text: str, n: int, mode: str, share: float = 0.6) -> Preview:
    got = preview(text, n, mode=mode, encoding=name, head_share=share)  # type: ignore[arg-type]
    expected = _oracle(enc, text, n, mode, share)
    assert got.total_chars == len(text)
    assert got.head == text[: got.head_end]
    if expected is None:
        assert (got.head, got.tail, got.truncated) == (text, "", False)
        return got
    assert got.truncated
    assert (_repair(got.head), _repair(got.tail)) == expected
    assert got.tail == text[got.tail_start :]
    assert got.elided_chars == len(text) - len(got.head) - len(got.tail)
    # The head is exactly the first tokens of the whole text's encoding (the oracle above).
    # Encoded on its own it may take more tokens where the cut falls inside a pre-tokenizer
    # piece (o200k splits "I'M" as "I", "'M"; "I'" alone splits again), as a suffix may for
    # the tail: the budget is one of the whole text's tokens.
    return got


@pytest.mark.parametrize("name", ENCODINGS)
@pytest.mark.parametrize("mode", MODES)
@HYP
@given(text=texts, n=st.integers(min_value=0, max_value=30))
# Found by the fuzz profile: the head cut falls inside o200k's "I'M" piece.
@example(text=" \r  I'M  \x85", n=7)
def test_exact_previews_on_generated_text(
    tiktoken_encodings: dict[str, Any], name: str, mode: str, text: str, n: int
) -> None:
    _check_exact(tiktoken_encodings[name], name, text, n, mode)


@pytest.mark.parametrize("name", ENCODINGS)
@pytest.mark.parametrize("mode", MODES)
@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    parts=st.lists(st.one_of(st.sampled_from(FRAGMENTS), st.text(max_size=10)), min_size=1, max_size=25),
    repeat=st.integers(min_value=30, max_value=300),
    n=st.integers(min_value=0, max_value=300),
    share=st.sampled_from([0.6, 0.0, 1.0, 0.25, 0.999]),
)
def test_exact_previews_on_long_generated_text(
    tiktoken_encodings: dict[str, Any],
    name: str,
    mode: str,
    parts: list[str],
    repeat: int,
    n: int,
    share: float,
) -> None:
    # Long enough that cuts are computed from windows at either end of the text.
    _check_exact(tiktoken_encodings[name], name, "".join(parts) * repeat, n, mode, share)


@pytest.mark.parametrize("name", ENCODINGS)
def test_exact_previews_on_real_files(tiktoken_encodings: dict[str, Any], name: str) -> None:
    enc = tiktoken_encodings[name]
    for file_name, text in STDLIB[:12]:
        for mode in MODES:
            for n in (1, 10, 100, 1000):
                got = _check_exact(enc, name, text, n, mode)
                assert got.token_count is None, file_name


@pytest.mark.parametrize("name", ENCODINGS)
def test_exact_previews_without_safe_splits(tiktoken_encodings: dict[str, Any], name: str) -> None:
    # Texts where the window has no known piece boundary, so it must grow to the whole text.
    enc = tiktoken_encodings[name]
    for text in ["\U0001f389" * 3000, "7" * 5000, " " * 4000 + "x", "\n \n" * 2000, "\u4e2d" * 4000]:
        for mode in MODES:
            for n in (0, 1, 5, 50):
                _check_exact(enc, name, text, n, mode)


@pytest.mark.parametrize("name", ENCODINGS)
def test_exact_preview_can_count(tiktoken_encodings: dict[str, Any], name: str) -> None:
    text = STDLIB[0][1]
    got = preview(text, 50, mode="head_tail", encoding=name, count=True)
    assert got.token_count == len(tiktoken_encodings[name].encode_ordinary(text))


def _reference_truncate(text: str, tokens: int, mode: str, blocks: int = 1) -> str:
    from strands._context_manager.methods.truncate import _build_preview

    return _build_preview(text, blocks, {"preview_tokens": tokens, "preview": mode})  # type: ignore[typeddict-item]


def _our_truncate(text: str, tokens: int, mode: str, blocks: int = 1, native: bool = False) -> str:
    """The context manager's truncate notice, built from one preview call."""
    if native:
        head_end, tail_start, total, count = strands_offload.preview_bounds(text, tokens, mode=mode)
        tail = text[tail_start:] if tail_start < total else ""
        p = Preview(text[:head_end], tail, head_end, tail_start, total, count)
    else:
        p = preview(text, tokens, mode=mode)  # type: ignore[arg-type]
    if not p.truncated:
        return text
    marker = f"[... {p.elided_chars:,} chars elided ...]"
    body = "\n\n".join(part for part in (p.head, marker, p.tail) if part)
    word = "block" if blocks == 1 else "blocks"
    result = f"[Truncated: {blocks} {word}, ~{p.token_count:,} tokens]\n\n{body}"
    return text if len(result) >= len(text) else result


@pytest.mark.parametrize("native", [False, True], ids=["preview", "preview_bounds"])
@pytest.mark.parametrize("mode", MODES)
@HYP
@given(
    text=st.one_of(texts, st.text(min_size=0, max_size=3000)),
    tokens=st.integers(min_value=0, max_value=400),
    blocks=st.integers(min_value=1, max_value=3),
)
def test_heuristic_truncate_matches_reference(mode: str, native: bool, text: str, tokens: int, blocks: int) -> None:
    expected = _reference_truncate(text, tokens, mode, blocks)
    assert _our_truncate(text, tokens, mode, blocks, native) == expected


@HYP
@given(text=st.one_of(texts, st.text(min_size=0, max_size=3000)), tokens=st.integers(min_value=0, max_value=400))
def test_heuristic_head_matches_offloader_slice(text: str, tokens: int) -> None:
    from strands.vended_plugins.context_offloader.plugin import ContextOffloader

    offloader = ContextOffloader(max_result_tokens=tokens + 1, preview_tokens=tokens)
    assert preview(text, tokens).head == offloader._slice_preview(text)
    head_end = strands_offload.preview_bounds(text, tokens)[0]
    assert text[:head_end] == offloader._slice_preview(text)


def test_heuristic_preview_is_proportional_to_the_budget() -> None:
    text = "x" * 1_000_001
    p = preview(text, 10, mode="head_tail")
    assert (p.head_end, p.tail_start, p.total_chars, p.token_count) == (24, 1_000_001 - 16, 1_000_001, 250_001)
    assert p.elided_chars == 1_000_001 - 40


def test_budgets_beyond_64_bits_keep_the_text_whole() -> None:
    text = "ab\ncd " * 100
    for name in ("heuristic", *ENCODINGS):
        for tokens in (2**63 - 1, 2**63, 10**40):
            p = preview(text, tokens, mode="head_tail", encoding=name)
            assert (p.head, p.tail, p.truncated) == (text, "", False), (name, tokens)


def test_preview_surrogates_stay_in_the_original_string() -> None:
    text = "ab\ud800cd" * 50 + "\ud83d\ude00" * 50
    for name in ("heuristic", *ENCODINGS):
        for mode in MODES:
            p = preview(text, 7, mode=mode, encoding=name)  # type: ignore[arg-type]
            assert text.startswith(p.head) and text.endswith(p.tail)
            assert p.head == text[: p.head_end]


def test_preview_rejects_bad_arguments() -> None:
    with pytest.raises(ValueError, match="mode"):
        preview("x", 1, mode="middle")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="cl100k_base"):
        preview("x", 1, encoding="gpt2")
    with pytest.raises(ValueError, match="non-negative"):
        preview("x", -1)
    with pytest.raises(ValueError, match="head_share"):
        preview("x", 1, mode="head_tail", head_share=1.5)
    with pytest.raises(ValueError, match="head_share"):
        strands_offload.preview_bounds("x", 1, head_share=float("nan"))
    with pytest.raises(ValueError, match="head_share"):
        preview("x", 1, head_share=float("nan"))
    with pytest.raises(TypeError):
        preview("x", 1.5)  # type: ignore[arg-type]
