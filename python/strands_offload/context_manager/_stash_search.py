r"""Stash search: find stashed originals by what they say, without knowing their references.

Beyond the reference (``ContextManager(stash_search=True)``). Entries are scored on the text the
model would read back (a text block's text, a JSON item indented), not on the escaped JSON the
stash stores: keyword search over stored bytes misses ``ERROR`` in ``"\nERROR"`` and ``café`` in
``"caf\u00e9"``. Keyword scoring (distinct query words present) by default; BM25 (SQLite FTS5)
when the stash's storage is configured with a BM25 search strategy. Only this agent's stash
namespace is searched.
"""

from __future__ import annotations

import asyncio
import json
import logging
import sqlite3
from typing import Any

from .. import _seam
from ..storage.in_memory_storage import InMemoryStorage
from ..storage.local_file_storage import LocalFileStorage
from ..storage.s3_storage import S3Storage
from ..storage.search.bm25 import _match_expression
from ..storage.search.keyword import STOP_WORDS, QueryScorer, tokenize
from ..storage.storage import _NamespacedStorage

logger = logging.getLogger(__name__)

MAX_HITS = 10
LINE_CHARS = 200
_READ_BATCH = 8
# How many views deep the configured search strategy is looked for.
_MAX_VIEW_DEPTH = 8


def _search_strategy(storage: Any) -> object | None:
    """The search strategy configured on ``storage``, or on the storage a namespaced view wraps."""
    for _ in range(_MAX_VIEW_DEPTH):
        if storage is None:
            return None
        if isinstance(storage, _NamespacedStorage):
            storage = storage.inner
            continue
        if isinstance(storage, (InMemoryStorage, LocalFileStorage, S3Storage)):
            return storage.search_strategy
        strategy = _seam.sdk_search_strategy(storage)
        if strategy is not None:
            return strategy
        storage = _seam.sdk_wrapped_storage(storage)
    return None


def _uses_bm25(storage: Any) -> bool:
    """Whether ``storage`` (or the storage a namespaced view wraps) indexes with BM25."""
    return type(_search_strategy(storage)).__name__ == "Bm25SearchStrategy"


def _readable(value: object) -> str | None:
    """The text the model reads back: a string, a ``text`` field, or a ``json`` field indented.

    JSON keeps its characters as they are (no ASCII escapes), so words match as written.
    """
    if isinstance(value, str):
        return value
    if isinstance(value, dict):
        if isinstance(value.get("text"), str):
            return str(value["text"])
        if value.get("json") is not None:
            return json.dumps(value["json"], indent=2, ensure_ascii=False)
    return None


async def _texts(stash: Any) -> list[tuple[str, str]]:
    """(reference, readable text) of every textual entry, in stash order."""
    keys: list[str] = await stash.list()
    texts: list[tuple[str, str]] = []
    for start in range(0, len(keys), _READ_BATCH):
        batch = keys[start : start + _READ_BATCH]
        values = await asyncio.gather(*(stash.retrieve_raw(key) for key in batch), return_exceptions=True)
        for key, raw in zip(batch, values, strict=True):
            if not isinstance(raw, bytes):
                continue
            try:
                text = _readable(json.loads(raw.decode("utf-8")))
            except ValueError:
                logger.debug("reference=<%s> | unreadable stash entry skipped by search", key)
                continue
            if text is not None:
                texts.append((key, text))
    return texts


def _keyword_rank(words: set[str], texts: list[tuple[str, str]]) -> list[tuple[str, str, float]]:
    scorer = QueryScorer(words)
    ranked = []
    for key, text in texts:
        score = scorer.score_text(text)
        if score:
            ranked.append((key, text, float(score)))
    ranked.sort(key=lambda hit: hit[2], reverse=True)  # stable: ties keep stash order
    return ranked


def _bm25_rank(query: str, texts: list[tuple[str, str]]) -> list[tuple[str, str, float]]:
    expression = _match_expression(query)
    if expression is None:
        return []
    with sqlite3.connect(":memory:") as db:
        db.execute("CREATE VIRTUAL TABLE documents USING fts5(position UNINDEXED, content)")
        db.executemany("INSERT INTO documents VALUES (?, ?)", ((i, text) for i, (_, text) in enumerate(texts)))
        rows = db.execute(
            "SELECT position, rank FROM documents WHERE documents MATCH ? ORDER BY rank, position", (expression,)
        ).fetchall()
    return [(texts[position][0], texts[position][1], -rank) for position, rank in rows]


def _first_matching_line(text: str, words: set[str]) -> str:
    for line in text.splitlines():
        lowered = line.lower()
        if any(word in lowered for word in words):
            return line if len(line) <= LINE_CHARS else line[:LINE_CHARS] + "…"
    return ""


async def search_stash(stash: Any, query: str) -> str:
    """Up to ten references whose originals match ``query``, best first, each with its first matching line."""
    words = tokenize(query) - STOP_WORDS
    if not words:
        return f"No searchable words in query: {query!r}"
    texts = await _texts(stash)
    ranked = _bm25_rank(query, texts) if _uses_bm25(stash.storage) else _keyword_rank(words, texts)
    if not ranked:
        return f"No stashed content matches {query!r}."
    shown = ranked[:MAX_HITS]
    lines = [f"[{len(ranked)} stashed entries match {query!r}; showing {len(shown)}, best first]"]
    for key, text, _ in shown:
        lines.append(f"[ref: {key}] {_first_matching_line(text, words)}".rstrip())
    lines.append("Pass a reference to retrieve_context with pattern or line_range to read more.")
    return "\n".join(lines)
