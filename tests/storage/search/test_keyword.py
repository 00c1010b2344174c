"""Keyword search: same tokens, scores and order as the reference on the same data."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
import strands.storage as ref_storage
import strands.storage.search.keyword as ref_keyword
from hypothesis import example, given, settings
from hypothesis import strategies as st
from strands.types.exceptions import StorageError
from strands_offload.storage import InMemoryStorage
from strands_offload.storage.search import KeywordSearchStrategy
from strands_offload.storage.search.keyword import STOP_WORDS, QueryScorer, token_overlap_score, tokenize

PIECES = st.sampled_from(
    [
        "Alpha",
        "beta",
        "ΣΊΣΥΦΟΣ",
        "σίσυφος",
        "x²",
        "İstanbul",
        "naïve",
        "the",
        "What",
        "md",
        "notes",
        "_id",
        "a1",
        "日本語",
        "ß",
        "ﬁle",
        " ",
        "  ",
        "\n",
        "-",
        ".",
        "/",
        "é",
        "\t",
        "🙂",
        "Ǆ",
        "\U0001e290",  # TOTO LETTER PA: a letter since Unicode 14.0 (Python 3.11)
        "\U00011f04",  # KAWI LETTER A: Unicode 15.0 (Python 3.12)
        "\U0002ebf0",  # CJK ideograph, Extension I: Unicode 15.1 (Python 3.13)
    ]
)
TEXT = st.lists(PIECES, max_size=10).map("".join)
KEY = st.lists(
    st.sampled_from(["notes", "auth.md", ".hidden", "a.b.c", "x.", "dir.v1", "Alpha", "ΣΟΣ.txt"]),
    min_size=1,
    max_size=3,
).map("/".join)


def test_stop_words_are_the_reference_list() -> None:
    assert STOP_WORDS == ref_keyword.STOP_WORDS and len(STOP_WORDS) == 122


@settings(max_examples=300, deadline=None)
@given(TEXT, TEXT)
def test_tokenize_and_overlap_match_reference(query: str, content: str) -> None:
    assert tokenize(content) == ref_keyword.tokenize(content)
    tokens = tokenize(query)
    assert token_overlap_score(tokens, content) == ref_keyword.token_overlap_score(tokens, content)


@settings(max_examples=150, deadline=None)
@given(st.dictionaries(KEY, st.one_of(TEXT.map(str.encode), st.binary(max_size=12)), max_size=12), TEXT)
def test_search_results_match_reference(entries: dict[str, bytes], query: str) -> None:
    async def both() -> tuple[Any, Any]:
        ours, theirs = InMemoryStorage(), ref_storage.InMemoryStorage()
        for key, value in entries.items():
            await ours.write(key, value)
            await theirs.write(key, value)
        mine = await KeywordSearchStrategy().search(ours, query)
        reference = await ref_keyword.KeywordSearchStrategy().search(theirs, query)
        return mine, reference

    mine, reference = asyncio.run(both())
    assert mine == reference
    assert [r.key for r in mine] == [r.key for r in reference]


class _Flaky(InMemoryStorage):
    async def read(self, key: str) -> bytes | None:
        if key == "broken":
            raise StorageError("Failed to read 'broken'")
        return await super().read(key)


def test_unreadable_entries_are_skipped_and_ties_keep_key_order() -> None:
    async def scenario() -> list[tuple[str, float]]:
        storage = _Flaky()
        for key, text in [("c", b"alpha"), ("broken", b"alpha beta"), ("b", b"alpha beta"), ("a", b"alpha")]:
            await storage.write(key, text)
        return [(r.key, r.score) for r in await storage.search("the alpha beta")]

    assert asyncio.run(scenario()) == [("b", 2), ("a", 1), ("c", 1)]


def test_stop_word_only_query_touches_nothing() -> None:
    class Untouchable:
        async def list(self, query: str = "") -> list[str]:
            raise AssertionError("listed")

    assert asyncio.run(KeywordSearchStrategy().search(Untouchable(), "what is the")) == []  # type: ignore[arg-type]


# st.text() never draws lone surrogates; mix them in (a high/low pair too: adjacent, they still stay two).
SURROGATES = st.sampled_from(["\ud800", "\udbff", "\udc00", "\udfff", "\ud83d", "\ude00"])
ANY_CHARACTER = st.one_of(st.characters(), SURROGATES)


def _reference_score(query: set[str], key: str, data: bytes) -> int:
    """The score the reference's keyword search gives one stored entry (extension cut, lossy UTF-8)."""
    stem = ref_keyword._EXTENSION.sub("", key)
    return ref_keyword.token_overlap_score(query, f"{stem} {data.decode('utf-8', errors='replace')}")


@settings(max_examples=300, deadline=None)
@given(
    st.text(ANY_CHARACTER, max_size=60),
    st.text(ANY_CHARACTER, max_size=200),
    st.lists(st.text(ANY_CHARACTER, max_size=6), max_size=5),
)
@example(key="a/", content="", extra=["x"])  # "a/.x": a dot after "/" starts no extension, "x" is a word
@example(key="b\udcff", content="ab\ud800cd \ud83d\ude00x", extra=["ab cd"])
def test_native_scorer_agrees_with_the_reference_on_any_text(key: str, content: str, extra: list[str]) -> None:
    """The Rust word splitter must find the reference's words on arbitrary Unicode."""
    query = ref_keyword.tokenize(" ".join([*extra, content[:20], key[:5]])) - ref_keyword.STOP_WORDS
    name, data = key + ".x", content.encode("utf-8", "surrogatepass")
    expected = _reference_score(query, name, data)
    assert QueryScorer(query).score_entry(name, data) == expected
    assert QueryScorer(query).score_text(content) == ref_keyword.token_overlap_score(query, content)
    # Stored lone surrogates read back as U+FFFD, a non-word character like the surrogate itself:
    # the words, and so the score, are those of the original string.
    assert expected == ref_keyword.token_overlap_score(query, f"{ref_keyword._EXTENSION.sub('', name)} {content}")


def test_lone_surrogates_in_content_separate_words() -> None:
    data = "ab\ud800cd".encode("utf-8", "surrogatepass")
    assert data.decode("utf-8", errors="replace") == "ab\ufffd\ufffd\ufffdcd"
    query = {"ab", "cd", "abcd"}
    assert QueryScorer(query).score_entry("k", data) == _reference_score(query, "k", data) == 2


def test_native_word_table_covers_every_code_point() -> None:
    """Every code point, lower-cased, as a would-be word between dashes: same count as Python ``re``."""
    import sys

    pieces = [chr(code).lower() for code in range(sys.maxunicode + 1) if not 0xD800 <= code <= 0xDFFF]
    pieces = [piece for piece in pieces if "-" not in piece]
    text = "-".join(pieces)
    query = set(pieces)
    expected = ref_keyword.token_overlap_score(query, text)
    assert expected > 100_000
    assert QueryScorer(query).score_entry("", text.encode()) == expected


def test_keys_with_lone_surrogates_fall_back_to_python_scoring() -> None:
    async def both() -> tuple[Any, Any]:
        ours, theirs = InMemoryStorage(), ref_storage.InMemoryStorage()
        for storage in (ours, theirs):
            await storage.write("bad\udcffname/alpha.md", b"beta")
            await storage.write("plain", b"alpha")
        return await ours.search("alpha beta"), await theirs.search("alpha beta")

    mine, reference = asyncio.run(both())
    assert mine == reference and [r.key for r in mine] == ["bad\udcffname/alpha.md", "plain"]


def test_lone_surrogates_in_a_query_split_its_words_as_in_the_reference() -> None:
    async def both() -> tuple[Any, Any]:
        ours, theirs = InMemoryStorage(), ref_storage.InMemoryStorage()
        for storage in (ours, theirs):
            await storage.write("a", "x\ud800y beta".encode("utf-8", "surrogatepass"))
            await storage.write("b", b"beta gamma")
        return await ours.search("x\ud800y beta gamma"), await theirs.search("x\ud800y beta gamma")

    mine, reference = asyncio.run(both())
    assert mine == reference and [(r.key, r.score) for r in mine] == [("a", 3), ("b", 2)]
    assert QueryScorer(tokenize("x\ud800y beta")).score_text("X\ud800Y and Beta") == 3


def test_word_table_is_shipped_for_every_supported_python() -> None:
    """CPython 3.10-3.13 pick a built-in table: no scan of every code point at first use."""
    import sys
    import unicodedata

    from strands_offload._native import WordTable
    from strands_offload.storage.search.keyword import _word_table

    assert WordTable.shipped_versions() == ["13.0.0", "14.0.0", "15.0.0", "15.1.0"]
    if sys.version_info < (3, 14):
        assert WordTable.shipped(unicodedata.unidata_version) is not None
    assert len(_word_table()) > 600


def test_computed_word_table_equals_this_pythons_re() -> None:
    """The table an unknown Unicode version gets (computed lazily) agrees with ``re`` everywhere."""
    import re
    import sys

    from strands_offload._native import WordTable
    from strands_offload._pattern.atoms import word_ranges

    computed = WordTable(list(word_ranges()))
    word = re.compile(r"\w")
    for code in range(sys.maxunicode + 1):
        if not 0xD800 <= code <= 0xDFFF:
            assert computed.is_word_char(chr(code)) == bool(word.match(chr(code))), hex(code)
    with pytest.raises(ValueError, match="not sorted"):
        WordTable([(5, 9), (9, 10)])


def test_shipped_table_is_this_pythons_re() -> None:
    r"""The built-in table is ``re``'s ``\w`` computed ahead of time: the same ranges above ASCII."""
    import unicodedata

    from strands_offload._native import WordTable
    from strands_offload._pattern.atoms import word_ranges

    shipped = WordTable.shipped(unicodedata.unidata_version)
    if shipped is None:
        pytest.skip(f"no shipped table for Unicode {unicodedata.unidata_version}")
    asked = [(max(low, 0x80), high) for low, high in word_ranges() if high >= 0x80]
    assert [(max(low, 0x80), high) for low, high in shipped.ranges() if high >= 0x80] == asked


@pytest.mark.parametrize("letter", ["\U0001e290", "\U00011f04", "\U0002ebf0"])
def test_letters_newer_than_python_310_score_like_the_reference(letter: str) -> None:
    content = f"x{letter}y z {letter}"
    query = ref_keyword.tokenize(f"{letter} x{letter}y zz")
    assert QueryScorer(query).score_entry("k", content.encode()) == _reference_score(query, "k", content.encode())
