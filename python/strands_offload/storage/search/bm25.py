"""BM25 ranking over an SQLite FTS5 full-text index.

Compatible with strands-agents 1.62.0: the same database location and schema (an index built by
either package is used by the other), the same query construction, the same ``rank`` ordering and
the same score mapping ``|rank| / (1 + |rank|)``.

Beyond the reference, ``Bm25SearchStrategy(in_memory=True)`` keeps each index in an in-memory
SQLite database instead of a file beside ``base_dir``. That works for every backend (in-memory,
S3, sandboxed files) and ranks exactly like the file-based index on the same writes; the index
lives as long as the strategy.
"""

from __future__ import annotations

import asyncio
import hashlib
import logging
import os
import sqlite3
import threading
from dataclasses import dataclass, field
from typing import Any, Literal

from strands.types.exceptions import StorageError

from .._atomic import INTERNAL_PREFIX
from ..storage import StorageSearchResult
from .keyword import STOP_WORDS, tokenize

__all__ = ["Bm25SearchStrategy", "Bm25SearchStrategyConfig"]

logger = logging.getLogger(__name__)

_CREATE_DOCUMENTS = "CREATE VIRTUAL TABLE IF NOT EXISTS documents USING fts5(key, content)"
_CREATE_HASHES = "CREATE TABLE IF NOT EXISTS doc_hashes (key TEXT PRIMARY KEY, hash TEXT NOT NULL)"
_SELECT_HASH = "SELECT hash FROM doc_hashes WHERE key = ?"
_DELETE_DOCUMENT = "DELETE FROM documents WHERE key = ?"
_INSERT_DOCUMENT = "INSERT INTO documents (key, content) VALUES (?, ?)"
_UPSERT_HASH = "INSERT OR REPLACE INTO doc_hashes (key, hash) VALUES (?, ?)"
_SEARCH = "SELECT key, rank FROM documents WHERE documents MATCH ? ORDER BY rank"


def _match_expression(query: str) -> str | None:
    """Turn a natural-language query into an FTS5 expression, or ``None`` when nothing is left.

    Every word longer than one character that is not a stop word becomes a prefix term; the terms
    are de-duplicated, sorted and implicitly AND-ed.
    """
    terms = sorted(word for word in tokenize(query) if len(word) > 1 and word not in STOP_WORDS)
    if not terms:
        return None
    return " ".join(term + "*" for term in terms)


@dataclass
class Bm25SearchStrategyConfig:
    """Settings of :class:`Bm25SearchStrategy`.

    Attributes:
        db_path: File of the FTS5 index. By default each storage directory gets its own file,
            ``.__strands_<dirname>-fts5.sqlite`` in the directory's parent. An explicit path holds
            the index of one directory only; using the strategy with a second directory raises
            ``ValueError``.
    """

    db_path: str | None = field(default=None)


class Bm25SearchStrategy:
    """Full-text search ranked by BM25 (term frequency, rarity, document length).

    Backends call :meth:`index` on each write; :meth:`search` queries the index only, so entries
    written before the strategy was attached are not found until written again, and deleted
    entries stay in the index. One index per storage location, so one strategy can serve several
    namespaced storages; :meth:`close` closes them all.

    Args:
        config: Optional settings (see :class:`Bm25SearchStrategyConfig`).
        in_memory: Keyword-only extension. Keep the indexes in memory, one per storage location
            (a ``LocalFileStorage`` directory, an ``InMemoryStorage`` namespace, an ``S3Storage``
            bucket and prefix), so any backend can use BM25, sandboxed ones included. Cannot be
            combined with ``config.db_path``.

    Backends without ``base_dir`` (``InMemoryStorage``, ``S3Storage``) can also keep a persistent
    index on the host: give ``Bm25SearchStrategyConfig(db_path=...)`` (one storage location per
    database file, as for directories). Ranking is the same in every mode.

    Raises:
        ValueError: If ``in_memory`` is combined with an explicit ``db_path``.
    """

    requires_host_fs: Literal[True] = True

    def __init__(self, config: Bm25SearchStrategyConfig | None = None, *, in_memory: bool = False) -> None:
        self._config = config if config is not None else Bm25SearchStrategyConfig()
        self._in_memory = in_memory
        if in_memory:
            if self._config.db_path is not None:
                raise ValueError("Bm25SearchStrategy(in_memory=True) cannot be combined with a db_path")
            # The index does not touch the host filesystem, so sandboxed storage may use it.
            self.requires_host_fs = False  # type: ignore[assignment]
        self._connections: dict[str, sqlite3.Connection] = {}
        self._guard = threading.Lock()

    async def index(self, storage: Any, key: str, data: bytes, **kwargs: Any) -> None:
        """Add or refresh one entry; unchanged content and hidden names (``.x``) are skipped.

        Args:
            storage: The storage the entry was written to (locates the index).
            key: The entry's key relative to ``storage``.
            data: The bytes written.
            **kwargs: Accepted for protocol compatibility; unused.
        """
        if key.rpartition("/")[2].startswith("."):
            return
        location = self._location(storage)
        text = data.decode("utf-8", errors="replace")
        digest = hashlib.md5(data, usedforsecurity=False).hexdigest()
        await asyncio.shield(asyncio.to_thread(self._upsert, location, key, text, digest))

    async def search(self, storage: Any, query: str, **kwargs: Any) -> list[StorageSearchResult]:
        """Return indexed entries of ``storage`` containing every query term, best first.

        Args:
            storage: The storage whose index is queried.
            query: Natural-language query.
            **kwargs: Accepted for protocol compatibility; unused.

        Returns:
            Results with scores in ``(0, 1)`` and no ``data``.

        Raises:
            RuntimeError: If Python's SQLite lacks FTS5.
            StorageError: If the index file exists but cannot be read.
        """
        expression = _match_expression(query)
        if expression is None:
            return []
        location = self._location(storage)
        return await asyncio.shield(asyncio.to_thread(self._query, location, expression))

    async def close(self) -> None:
        """Close every index connection the strategy opened (in-memory indexes are discarded)."""
        await asyncio.to_thread(self._close_all)

    # -- locating indexes ---------------------------------------------------------------------

    def _location(self, storage: Any) -> str:
        """Return the key under which the storage's index connection is kept."""
        base_dir = getattr(storage, "base_dir", None)
        if not self._in_memory:
            if base_dir is not None:
                return os.path.abspath(str(base_dir))
            if self._config.db_path is None:
                raise ValueError(
                    f"Bm25SearchStrategy needs a storage with a base_dir; for {type(storage).__name__} pass "
                    "Bm25SearchStrategyConfig(db_path=...) or in_memory=True"
                )
        describe = getattr(storage, "_index_location", None)
        if describe is not None:
            return str(describe())
        if isinstance(base_dir, str):
            return "file:" + os.path.abspath(base_dir)
        return f"object:{id(storage)}"

    def _connection(self, location: str) -> sqlite3.Connection:
        """Open (once) the index for ``location``; the caller holds ``self._guard``."""
        existing = self._connections.get(location)
        if existing is not None:
            return existing
        if self._in_memory:
            db_path = ":memory:"
        else:
            db_path = self._file_for(location)
        connection = sqlite3.connect(db_path, check_same_thread=False)
        try:
            connection.execute(_CREATE_DOCUMENTS)
        except sqlite3.OperationalError as error:
            connection.close()
            if "fts5" in str(error).lower():
                raise RuntimeError("SQLite build lacks FTS5 support") from error
            raise StorageError(f"BM25 index '{db_path}' for '{location}' is unusable: {error}") from error
        except sqlite3.DatabaseError as error:
            connection.close()
            raise StorageError(f"BM25 index '{db_path}' for '{location}' is corrupt: {error}") from error
        connection.execute(_CREATE_HASHES)
        connection.commit()
        self._connections[location] = connection
        return connection

    def _file_for(self, directory: str) -> str:
        """Return the database file for ``directory`` (created if missing)."""
        configured = self._config.db_path
        if configured is not None and self._connections:
            first = next(iter(self._connections))
            raise ValueError(
                f"Bm25SearchStrategy db_path '{configured}' already indexes '{first}' and cannot also index "
                f"'{directory}'. Omit db_path to keep one index per directory (e.g. per FileMemoryStore), "
                "or use one strategy per storage."
            )
        if os.path.isabs(directory):
            # A storage directory (not an S3 or in-memory location): make sure it exists.
            os.makedirs(directory, exist_ok=True)
        if configured is not None:
            return configured
        parent, name = os.path.split(directory)
        return os.path.join(parent, f"{INTERNAL_PREFIX}{name}-fts5.sqlite")

    # -- work done in a worker thread ---------------------------------------------------------

    def _upsert(self, location: str, key: str, text: str, digest: str) -> None:
        with self._guard:
            connection = self._connection(location)
            try:
                known = connection.execute(_SELECT_HASH, (key,)).fetchall()
                if known and known[0][0] == digest:
                    return
                # One transaction: the old row goes, the new row and its hash arrive, or nothing does.
                with connection:
                    connection.execute(_DELETE_DOCUMENT, (key,))
                    connection.execute(_INSERT_DOCUMENT, (key, text))
                    connection.execute(_UPSERT_HASH, (key, digest))
            except sqlite3.DatabaseError as error:
                raise StorageError(f"BM25 index for '{location}' failed to record '{key}': {error}") from error

    def _query(self, location: str, expression: str) -> list[StorageSearchResult]:
        with self._guard:
            connection = self._connection(location)
            try:
                rows = connection.execute(_SEARCH, (expression,)).fetchall()
            except sqlite3.DatabaseError as error:
                raise StorageError(f"BM25 index for '{location}' failed to answer {expression!r}: {error}") from error
        results = []
        for key, rank in rows:
            magnitude = abs(rank)
            results.append(StorageSearchResult(key=key, score=magnitude / (1.0 + magnitude)))
        return results

    def _close_all(self) -> None:
        with self._guard:
            connections = list(self._connections.values())
            self._connections.clear()
        for connection in connections:
            connection.close()
