"""BM25 on SQLite FTS5: same results and order as the reference; in-memory indexes on every backend."""

from __future__ import annotations

import asyncio
import os
import tempfile
import uuid
from pathlib import Path
from typing import Any

import pytest
import strands.storage as ref_storage
from hypothesis import given, settings
from hypothesis import strategies as st
from strands.storage.search import Bm25SearchStrategy as RefBm25
from strands.storage.search import Bm25SearchStrategyConfig as RefConfig
from strands.storage.search.bm25 import _build_query as ref_build_query
from strands.types.exceptions import StorageError
from strands_offload.storage import InMemoryStorage, LocalFileStorage, S3Storage
from strands_offload.storage.search import Bm25SearchStrategy, Bm25SearchStrategyConfig
from strands_offload.storage.search.bm25 import _match_expression

WORDS = st.sampled_from(
    [
        "oauth",
        "OAuth2",
        "authentication",
        "flow",
        "flows",
        "database",
        "migration",
        "the",
        "a",
        "x",
        "é",
        "naïve",
        "cache",
        "cached",
        "日本",
        "token",
        "tokens",
        "rate",
        "limit",
    ]
)
TEXT = st.lists(WORDS, min_size=0, max_size=12).map(" ".join)
KEY = st.sampled_from(["auth.md", "db.md", "notes/a.txt", "notes/b.txt", ".hidden", "dir/.x", "cache", "z"])
WRITES = st.lists(st.tuples(KEY, TEXT), max_size=10)


@settings(max_examples=300, deadline=None)
@given(TEXT)
def test_query_expression_matches_reference(query: str) -> None:
    assert _match_expression(query) == ref_build_query(query)


async def _file_results(storage: Any, strategy: Any, writes: list[tuple[str, str]], queries: list[str]) -> list[Any]:
    for key, text in writes:
        await storage.write(key, text.encode())
    out = [[(r.key, r.score, r.data) for r in await storage.search(q)] for q in queries]
    await strategy.close()
    return out


@settings(max_examples=60, deadline=None)
@given(WRITES, st.lists(TEXT, min_size=1, max_size=3))
def test_results_match_reference_and_in_memory_ranks_the_same(
    writes: list[tuple[str, str]], queries: list[str]
) -> None:
    with tempfile.TemporaryDirectory() as root:
        ref_strategy, our_strategy, memory_strategy = (
            RefBm25(),
            Bm25SearchStrategy(),
            Bm25SearchStrategy(in_memory=True),
        )
        theirs = ref_storage.LocalFileStorage(os.path.join(root, "ref"), search_strategy=ref_strategy)
        ours = LocalFileStorage(os.path.join(root, "ours"), search_strategy=our_strategy, durable=False)
        memory = InMemoryStorage(search_strategy=memory_strategy)
        reference = asyncio.run(_file_results(theirs, ref_strategy, writes, queries))
        mine = asyncio.run(_file_results(ours, our_strategy, writes, queries))
        in_memory = asyncio.run(_file_results(memory, memory_strategy, writes, queries))
    assert mine == reference
    assert in_memory == reference


def test_default_database_location_and_schema(tmp_path: Path) -> None:
    strategy = Bm25SearchStrategy()
    storage = LocalFileStorage(str(tmp_path / "mem"), search_strategy=strategy)

    async def scenario() -> list[str]:
        await storage.write("a.md", b"hello world")
        keys = await storage.list()
        await strategy.close()
        return keys

    assert asyncio.run(scenario()) == ["a.md"]
    database = tmp_path / ".__strands_mem-fts5.sqlite"
    assert database.is_file()
    import sqlite3

    with sqlite3.connect(database) as connection:
        names = {row[0] for row in connection.execute("SELECT name FROM sqlite_master WHERE type='table'")}
    assert {"documents", "doc_hashes"} <= names


def test_namespaces_get_their_own_index(tmp_path: Path) -> None:
    strategy = Bm25SearchStrategy()
    root = LocalFileStorage(str(tmp_path / "base"), search_strategy=strategy)

    async def scenario() -> tuple[list[str], list[str]]:
        one, two = root.namespace("one"), root.namespace("two")
        await one.write("x.md", b"alpha")
        await two.write("x.md", b"beta")
        hits = ([r.key for r in await one.search("alpha")], [r.key for r in await two.search("alpha")])
        await strategy.close()
        return hits

    assert asyncio.run(scenario()) == (["x.md"], [])
    assert (tmp_path / "base" / ".__strands_one-fts5.sqlite").is_file()


def test_explicit_db_path_serves_one_directory(tmp_path: Path) -> None:
    db_path = str(tmp_path / "index.sqlite")
    ours = Bm25SearchStrategy(Bm25SearchStrategyConfig(db_path=db_path))
    theirs = RefBm25(RefConfig(db_path=db_path + "2"))

    async def failure(strategy: Any) -> str:
        await strategy.index(LocalFileStorage(str(tmp_path / "a")), "k", b"x")
        try:
            await strategy.index(LocalFileStorage(str(tmp_path / "b")), "k", b"x")
        except ValueError as error:
            return str(error).replace(db_path + "2", db_path)
        finally:
            await strategy.close()
        raise AssertionError("no error")

    assert asyncio.run(failure(ours)) == asyncio.run(failure(theirs))
    with pytest.raises(ValueError, match="in_memory"):
        Bm25SearchStrategy(Bm25SearchStrategyConfig(db_path=db_path), in_memory=True)


def test_corrupt_index_names_the_key_and_entries_stay_readable(tmp_path: Path) -> None:
    (tmp_path / ".__strands_docs-fts5.sqlite").write_bytes(b"this is not a database" * 100)
    storage = LocalFileStorage(str(tmp_path / "docs"), search_strategy=Bm25SearchStrategy())

    async def scenario() -> None:
        with pytest.raises(StorageError, match="^Wrote 'a.md' but indexing failed$") as caught:
            await storage.write("a.md", b"alpha")
        assert "corrupt" in str(caught.value.__cause__)
        assert await storage.read("a.md") == b"alpha"
        with pytest.raises(StorageError, match="BM25 index .* is corrupt"):
            await storage.search("alpha")

    asyncio.run(scenario())


def test_in_memory_index_on_s3_ranks_like_files(s3_session: Any, s3_bucket: str, tmp_path: Path) -> None:
    writes = [
        ("auth.md", "oauth authentication flow"),
        ("db.md", "database migration flow flow"),
        ("notes/c.txt", "cache flow"),
        (".hidden", "flow"),
    ]
    queries = ["flow", "authentication flow", "cache"]
    s3_strategy = Bm25SearchStrategy(in_memory=True)
    s3 = S3Storage(s3_bucket, prefix=uuid.uuid4().hex, boto_session=s3_session, search_strategy=s3_strategy)
    file_strategy = RefBm25()
    files = ref_storage.LocalFileStorage(str(tmp_path / "f"), search_strategy=file_strategy)
    assert asyncio.run(_file_results(s3, s3_strategy, writes, queries)) == asyncio.run(
        _file_results(files, file_strategy, writes, queries)
    )


def test_in_memory_indexes_are_per_location() -> None:
    strategy = Bm25SearchStrategy(in_memory=True)
    first, second = InMemoryStorage(search_strategy=strategy), InMemoryStorage(search_strategy=strategy)

    async def scenario() -> list[list[str]]:
        await first.write("k", b"alpha")
        await first.namespace("ns").write("k", b"alpha beta")
        await second.write("k", b"beta")
        out = [[r.key for r in await s.search("alpha")] for s in (first, first.namespace("ns"), second)]
        await strategy.close()
        return out

    assert asyncio.run(scenario()) == [["k"], ["k"], []]
    assert strategy.requires_host_fs is False and Bm25SearchStrategy.requires_host_fs is True


def test_persistent_index_for_s3_through_db_path(s3_session: Any, s3_bucket: str, tmp_path: Path) -> None:
    db_path = str(tmp_path / "s3-index.sqlite")
    prefix = uuid.uuid4().hex

    async def scenario() -> None:
        writer_strategy = Bm25SearchStrategy(Bm25SearchStrategyConfig(db_path=db_path))
        writer = S3Storage(s3_bucket, prefix=prefix, boto_session=s3_session, search_strategy=writer_strategy)
        await writer.write("auth.md", b"oauth authentication flow")
        await writer.write("db.md", b"database flow")
        await writer_strategy.close()
        reader_strategy = Bm25SearchStrategy(Bm25SearchStrategyConfig(db_path=db_path))
        reader = S3Storage(s3_bucket, prefix=prefix, boto_session=s3_session, search_strategy=reader_strategy)
        hits = await reader.search("authentication")
        assert [hit.key for hit in hits] == ["auth.md"]
        with pytest.raises(ValueError, match="already indexes"):
            await reader_strategy.search(S3Storage(s3_bucket, prefix="other", boto_session=s3_session), "flow")
        await reader_strategy.close()

    asyncio.run(scenario())


def test_storage_without_base_dir_needs_a_location_choice() -> None:
    with pytest.raises(ValueError, match="needs a storage with a base_dir; for InMemoryStorage pass"):
        asyncio.run(Bm25SearchStrategy().search(InMemoryStorage(), "alpha"))
