"""Ranking texts against a query: the protocol, and the native BM25 ranker that is its default.

One protocol serves every feature that picks the few texts a query needs out of many (the tool
definitions ``Hide.tool_specs`` shows, relevance previews). Its shape is the upstream relevance
proposal's: an attribute ``max_sources_per_query`` and ``async score(query, texts)`` returning one
score in ``[0, 1]`` per text, higher meaning more relevant, 0 meaning no match at all.

Plug in any ranker of that shape, for example one backed by an embedding model::

    class EmbeddingRanker:
        max_sources_per_query = 10

        def __init__(self, embed):  # embed: async (list[str]) -> list[list[float]], unit vectors
            self._embed = embed

        async def score(self, query, texts):
            query_vector, *vectors = await self._embed([query, *texts])
            return [max(0.0, sum(a * b for a, b in zip(query_vector, v))) for v in vectors]

    Hide.tool_specs(config={"search": EmbeddingRanker(my_embed)})

The default, :class:`BM25Ranker`, is BM25 computed in the native core with the GIL released. Its
terms are the words of each text split on case and separators (``getFileContents`` is ``get``,
``file``, ``contents`` and ``getfile``, ``filecontents``), folded, lightly stemmed, with a short
English stop-word list left out. The index is keyed by the texts' content hashes: built on the
first call, rebuilt only when the texts change.
"""

from __future__ import annotations

import asyncio
import math
from collections.abc import Sequence
from typing import Protocol, runtime_checkable

from .._native import Bm25Ranker as _NativeBm25

__all__ = ["MAX_QUERY_CHARS", "BM25Ranker", "Ranker", "checked_scores", "cut_query"]

#: A query longer than this is ranked on its last this many characters.
MAX_QUERY_CHARS = 2000

# More texts than this are scored on a worker thread (the native work releases the GIL).
_INLINE_TEXTS = 2000


@runtime_checkable
class Ranker(Protocol):
    """Scores texts by their relevance to a query.

    Attributes:
        max_sources_per_query: How many texts a caller should keep per query at most (a caller
            with its own budget, such as ``Hide.tool_specs``'s ``keep``, uses that instead).
    """

    max_sources_per_query: int

    async def score(self, query: str, texts: Sequence[str]) -> list[float]:
        """One score in ``[0, 1]`` per text, in order: higher is more relevant, 0 is no match."""
        ...


class BM25Ranker:
    """The default ranker: BM25 over the texts' terms, in the native core.

    Args:
        max_sources_per_query: The protocol's attribute (default 10).
    """

    def __init__(self, *, max_sources_per_query: int = 10) -> None:
        if isinstance(max_sources_per_query, bool) or not isinstance(max_sources_per_query, int):
            raise TypeError(f"max_sources_per_query must be an int, not {type(max_sources_per_query).__name__}")
        if max_sources_per_query < 1:
            raise ValueError(f"max_sources_per_query must be at least 1, not {max_sources_per_query}")
        self.max_sources_per_query = max_sources_per_query
        self._native = _NativeBm25()

    @property
    def builds(self) -> int:
        """How many times the index was built (once per change of the texts)."""
        return self._native.builds

    async def score(self, query: str, texts: Sequence[str]) -> list[float]:
        """BM25 scores divided by the best one (the best match 1; all 0 when nothing matches)."""
        query = cut_query(query)
        listed = list(texts)
        if len(listed) > _INLINE_TEXTS:
            return await asyncio.to_thread(self._native.score, query, listed)
        return self._native.score(query, listed)


def cut_query(query: str) -> str:
    """``query`` cut to its last :data:`MAX_QUERY_CHARS` characters (the newest words of a long turn)."""
    return query[-MAX_QUERY_CHARS:] if len(query) > MAX_QUERY_CHARS else query


def checked_scores(scores: object, count: int) -> list[float]:
    """A ranker's answer as ``count`` floats in ``[0, 1]``.

    Raises:
        ValueError: When it is not a sequence of ``count`` finite numbers in ``[0, 1]``.
    """
    if not isinstance(scores, Sequence) or isinstance(scores, (str, bytes)):
        raise ValueError(f"a ranker returned {type(scores).__name__}, not a list of scores")
    if len(scores) != count:
        raise ValueError(f"a ranker returned {len(scores)} scores for {count} texts")
    out: list[float] = []
    for value in scores:
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
            raise ValueError(f"a ranker returned the score {value!r}, not a finite number")
        if not 0.0 <= value <= 1.0:
            raise ValueError(f"a ranker returned the score {value!r}, outside [0, 1]")
        out.append(float(value))
    return out
