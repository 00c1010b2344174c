"""Keyword search: rank entries by how many distinct query words they contain.

Scores and order are those of strands-agents 1.62.0: the query is lower-cased, split on runs of
non-word characters (Python ``re`` Unicode rules) and stripped of stop words; each entry scores the
number of those words found among the words of its key (without the final extension) and its
content (UTF-8, undecodable bytes replaced). Entries scoring zero are dropped; ties keep the
ascending key order of ``list``.
"""

from __future__ import annotations

import asyncio
import builtins
import functools
import logging
import re
import unicodedata
from typing import Any, Literal

from strands.types.exceptions import StorageError

from ..._native import KeywordScorer, WordTable
from ..storage import Storage, StorageSearchResult

__all__ = ["STOP_WORDS", "KeywordSearchStrategy", "token_overlap_score", "tokenize"]

logger = logging.getLogger(__name__)

#: Words ignored in queries (the reference's list of 122 common English words).
STOP_WORDS: frozenset[str] = frozenset(
    """
    a about above after again all although an and any are as at be because been before being below
    between both but by can could dare did do does during each either every few for from further had
    has have he her him his how i if in into is it its just may me might more most my need neither no
    nor not of off on once only or other ought our out over own same shall she should since so some
    such than that the their them then these they this those though through to too under unless until
    up us used very was we were what when where which while who whom why will with would yet you your
    """.split()
)

# How many entries a scan reads at once; keeps remote backends (S3) from being flooded.
_SCAN_BATCH = 8

_NON_WORD_RUN = re.compile(r"\W+")
# A final ".ext" that does not start a path segment: removed from keys before scoring.
_FINAL_EXTENSION = re.compile(r"(?<=[^/])\.[^./]*$")


def tokenize(text: str) -> set[str]:
    r"""Return the set of lower-cased word tokens of ``text``.

    Words are maximal runs of Unicode word characters (letters, digits, underscore), as Python's
    ``re`` defines ``\w``.
    """
    return {word for word in _NON_WORD_RUN.split(text.lower()) if word}


def token_overlap_score(query_tokens: set[str], content: str) -> int:
    """Count the distinct ``query_tokens`` that occur as words in ``content``."""
    return len(query_tokens & tokenize(content))


@functools.cache
def _word_table() -> WordTable:
    r"""Return the native word table of this interpreter's Unicode version (Python ``re`` ``\w``).

    The wheel ships the tables of CPython 3.10-3.13 (Unicode 13.0, 14.0, 15.0, 15.1). Another
    interpreter's table is computed once, on first use, by asking its ``re`` about every code point.
    """
    version = unicodedata.unidata_version
    shipped = WordTable.shipped(version)
    if shipped is not None:
        return shipped
    logger.debug("unicode_version=<%s> | no shipped word table, computing one from re", version)
    from ..._pattern.atoms import word_ranges

    return WordTable(list(word_ranges()))


def _key_stem(key: str) -> str:
    """Drop a key's final extension (``notes/auth.md`` -> ``notes/auth``; ``.hidden`` stays)."""
    return _FINAL_EXTENSION.sub("", key)


class QueryScorer:
    r"""Scores texts against one tokenised query: how many distinct query words each contains.

    Package-internal (not in ``__all__``, not part of the reference's API): the keyword strategy
    scores stored entries with it, and the context manager's stash search scores the text of
    stashed originals. Word matching runs in the native core with this interpreter's Python ``re``
    ``\w`` table; lower-casing stays with Python's ``str.lower`` (the reference's full Unicode
    mapping). Text holding lone surrogates cannot cross into the core: it is scored in Python by
    the same rule.

    Args:
        query_tokens: The lower-cased query words to look for, as :func:`tokenize` gives them
            (never empty, never holding a surrogate, which ``\w`` does not match).
    """

    def __init__(self, query_tokens: set[str]) -> None:
        self._tokens = query_tokens
        self._native = KeywordScorer(sorted(query_tokens), _word_table())

    def score_entry(self, key: str, data: bytes) -> int:
        """Score one stored entry exactly as the reference scores ``f"{stem} {text}"``.

        The space between stem and text is a non-word character that no case mapping touches, so
        the words of the joined, lower-cased string are the union of the words of both parts,
        each lower-cased on its own; scoring them separately avoids copying the text.
        """
        return self._count(_key_stem(key).lower(), data.decode("utf-8", errors="replace").lower())

    def score_text(self, text: str) -> int:
        """Count the distinct query words among the words of ``text`` lower-cased."""
        return self._count("", text.lower())

    def _count(self, lowered_key: str, lowered_text: str) -> int:
        try:
            return int(self._native.score(lowered_key, lowered_text))
        except UnicodeEncodeError:
            pass  # lone surrogates (undecodable file names, JSON escapes): counted below
        words = set(_NON_WORD_RUN.split(lowered_key))
        words.update(_NON_WORD_RUN.split(lowered_text))
        return len(self._tokens & words)


class KeywordSearchStrategy:
    """Search any storage by scanning it and counting query words per entry.

    Needs no index: ``index`` does nothing and ``search`` lists the storage, reads the entries in
    small concurrent batches, and returns every entry that shares at least one non-stop-word with
    the query, with its bytes attached. Entries whose read raises ``StorageError`` are skipped.
    Works inside sandboxes (``requires_host_fs`` is ``False``).
    """

    requires_host_fs: Literal[False] = False

    async def index(self, storage: Storage, key: str, data: bytes, **kwargs: Any) -> None:
        """Do nothing: the keyword scan reads storage at search time."""

    async def search(self, storage: Storage, query: str, **kwargs: Any) -> builtins.list[StorageSearchResult]:
        """Rank the entries of ``storage`` against ``query``, best first.

        Args:
            storage: The storage to scan.
            query: Natural-language query.
            **kwargs: Accepted for protocol compatibility; unused.

        Returns:
            Matching entries with their integer overlap as score and their bytes as ``data``.
        """
        wanted = tokenize(query) - STOP_WORDS
        if not wanted:
            return []
        scorer = QueryScorer(wanted)
        keys: builtins.list[str] = await storage.list("")
        hits: builtins.list[StorageSearchResult] = []
        for start in range(0, len(keys), _SCAN_BATCH):
            batch = keys[start : start + _SCAN_BATCH]
            values = await asyncio.gather(*(_read_skipping_errors(storage, key) for key in batch))
            for key, value in zip(batch, values, strict=True):
                if value is None:
                    continue
                points = scorer.score_entry(key, value)
                if points:
                    hits.append(StorageSearchResult(key=key, score=points, data=value))
        hits.sort(key=_by_score, reverse=True)
        return hits


def _by_score(hit: StorageSearchResult) -> float:
    return hit.score


async def _read_skipping_errors(storage: Storage, key: str) -> bytes | None:
    """Read ``key``; a ``StorageError`` is logged and treated as a missing entry."""
    try:
        value: bytes | None = await storage.read(key)
    except StorageError as error:
        logger.debug("key=<%s>, error=<%s> | keyword search skipped an unreadable entry", key, error)
        return None
    return value
