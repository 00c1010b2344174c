"""The ranking protocol and its default, the native BM25 ranker (``context_manager/ranking.py``)."""

from __future__ import annotations

import asyncio
import math

import pytest
from hypothesis import given
from hypothesis import strategies as st
from strands_offload._native import Bm25Ranker, rank_terms
from strands_offload.context_manager import BM25Ranker, Ranker
from strands_offload.context_manager.ranking import MAX_QUERY_CHARS, checked_scores, cut_query

DOCS = [
    "read_file Read the complete contents of a file from the file system",
    "create_issue Create a new issue in a GitHub repository",
    "list_buckets List the storage buckets of the cloud account",
    "browser_navigate Navigate the browser to a URL",
]


def score(ranker: BM25Ranker, query: str, texts: list[str]) -> list[float]:
    return asyncio.run(ranker.score(query, texts))


def test_default_ranker_follows_the_protocol() -> None:
    ranker = BM25Ranker()
    assert isinstance(ranker, Ranker)
    assert ranker.max_sources_per_query == 10
    assert BM25Ranker(max_sources_per_query=3).max_sources_per_query == 3


@pytest.mark.parametrize("bad", [0, -1])
def test_max_sources_must_be_positive(bad: int) -> None:
    with pytest.raises(ValueError, match="max_sources_per_query"):
        BM25Ranker(max_sources_per_query=bad)


def test_max_sources_must_be_an_int() -> None:
    with pytest.raises(TypeError, match="max_sources_per_query"):
        BM25Ranker(max_sources_per_query=True)


def test_best_match_scores_one() -> None:
    scores = score(BM25Ranker(), "open an issue on github", DOCS)
    assert scores[1] == 1.0
    assert all(0.0 <= s < 1.0 for i, s in enumerate(scores) if i != 1)


def test_no_match_scores_zero_everywhere() -> None:
    assert score(BM25Ranker(), "zebra quantum", DOCS) == [0.0] * len(DOCS)
    assert score(BM25Ranker(), "", DOCS) == [0.0] * len(DOCS)
    assert score(BM25Ranker(), "anything", []) == []


def test_names_split_on_case_and_separators() -> None:
    assert rank_terms("list_pull_requests") == ["list", "pull", "request"]
    assert rank_terms("getFileContents")[:3] == ["get", "file", "content"]
    assert "github" in rank_terms("GitHubSearch")
    scores = score(BM25Ranker(), "file contents", ["getFileContents", "putObject"])
    assert scores == [1.0, 0.0]


def test_index_is_built_once_and_rebuilt_on_change() -> None:
    ranker = BM25Ranker()
    score(ranker, "file", DOCS)
    score(ranker, "issue", list(DOCS))  # equal texts, new list: same index
    assert ranker.builds == 1
    changed = [*DOCS[:-1], DOCS[-1] + " and click"]
    score(ranker, "click", changed)
    assert ranker.builds == 2


def test_long_query_is_cut_to_its_tail() -> None:
    query = "github issue " + "x " * 500_000 + "read file"
    assert len(cut_query(query)) == MAX_QUERY_CHARS
    assert cut_query("short") == "short"
    scores = score(BM25Ranker(), query, DOCS)
    assert scores[0] == 1.0  # only the tail ("read file") counts
    assert scores[1] == 0.0


def test_lone_surrogates_and_odd_text_rank_without_error() -> None:
    scores = Bm25Ranker().score("fi\ud800le", ["fi\ud800le here", "", "\x00\x01"])
    assert scores == [1.0, 0.0, 0.0]


def test_many_texts_are_scored_off_the_loop() -> None:
    texts = [f"tool_{i} does thing {i}" for i in range(3000)]
    scores = score(BM25Ranker(), "tool_2999", texts)
    assert scores.index(1.0) == 2999


@given(
    query=st.text(max_size=40),
    texts=st.lists(st.text(max_size=60), max_size=12),
)
def test_scores_are_one_per_text_in_unit_range(query: str, texts: list[str]) -> None:
    scores = Bm25Ranker().score(query, texts)
    assert len(scores) == len(texts)
    assert all(math.isfinite(s) and 0.0 <= s <= 1.0 for s in scores)
    assert not scores or max(scores) in (0.0, 1.0)


def test_checked_scores_refuses_malformed_answers() -> None:
    assert checked_scores([0, 1, 0.5], 3) == [0.0, 1.0, 0.5]
    for bad, count in [([0.1], 2), ("ab", 2), ([1.5], 1), ([-0.1], 1), ([float("nan")], 1), ([True], 1), (None, 0)]:
        with pytest.raises(ValueError):
            checked_scores(bad, count)
