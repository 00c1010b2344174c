"""Characters newer than CPython 3.10's Unicode (13.0) behave as the reference on this interpreter.

Letters of Unicode 14.0 (TOTO, CPython 3.11), 15.0 (KAWI, 3.12) and 15.1 (CJK Extension I, 3.13)
are word characters, case-folded or not, only on the Pythons that know them; grep classes, BM25
query terms and keyword words must follow the running interpreter exactly as the reference does.
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
import strands.storage.search.bm25 as ref_bm25
import strands.storage.search.keyword as ref_keyword
from strands.vended_plugins.context_offloader.search import _search_content as ref_search
from strands_offload import search_content
from strands_offload.storage import InMemoryStorage
from strands_offload.storage.search.bm25 import _match_expression
from strands_offload.storage.search.keyword import tokenize

NEW_LETTERS = ["\U0001e290", "\U00011f04", "\U0002ebf0", "\U0001e4d0", "\U00011b00"]
TEXT = "\n".join(
    [
        "plain ascii line 42",
        "toto \U0001e290\U0001e291 word",
        "kawi \U00011f04\U00011f05 digit \U00011f50",
        "cjk \U0002ebf0x and \U0001e4d0 nag mundari, \U00011b00 devanagari ext",
        "mixed_\U00011f04_under 7\U0001e290",
    ]
)


def _outcome(search: Any, text: str, **kwargs: Any) -> str:
    try:
        return str(search(text, **kwargs))
    except ValueError as error:
        return f"ValueError: {error}"


@pytest.mark.parametrize(
    "pattern", [r"\w+", r"\W+", r"\b\w+\b", r"(?i)\w{2}", r"\d", r"[\w]+_\w+", r"\s\w", r"\B\w", r"(?a)\w+"]
)
def test_grep_classes_follow_this_python(pattern: str) -> None:
    assert _outcome(search_content, TEXT, pattern=pattern) == _outcome(ref_search, TEXT, pattern=pattern)


@pytest.mark.parametrize("letter", NEW_LETTERS)
def test_bm25_and_keyword_terms_follow_this_python(letter: str) -> None:
    query = f"{letter}x find {letter}{letter} a{letter}"
    assert _match_expression(query) == ref_bm25._build_query(query)
    assert tokenize(query) == ref_keyword.tokenize(query)


def test_keyword_search_ranks_new_letters_as_the_reference() -> None:
    async def both() -> tuple[Any, Any]:
        ours, theirs = InMemoryStorage(), ref_keyword_storage()
        for index, line in enumerate(TEXT.splitlines()):
            await ours.write(f"doc{index}", line.encode())
            await theirs.write(f"doc{index}", line.encode())
        query = " ".join(NEW_LETTERS) + " \U00011f04\U00011f05 \U0001e290\U0001e291"
        return await ours.search(query), await theirs.search(query)

    mine, reference = asyncio.run(both())
    assert mine == reference


def ref_keyword_storage() -> Any:
    import strands.storage as ref_storage

    return ref_storage.InMemoryStorage()
