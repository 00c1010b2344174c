"""Storage throughput, ours against strands-agents 1.62.0 in the same run.

Run: ``pytest benches/bench_storage.py --benchmark-group-by=group``. Each group times one operation
on one backend; ``reference`` is the strands class, ``native`` ours (``native-nofsync`` is our
``LocalFileStorage(durable=False)``, which skips the fsync calls the reference never makes).
"""

from __future__ import annotations

import asyncio
import random
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import strands.storage as ref_storage
import strands.storage.search as ref_search
import strands.vended_plugins.context_offloader.storage as ref_legacy
import strands_offload.context_offloader as our_legacy
import strands_offload.storage as our_storage
import strands_offload.storage.search as our_search

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
from _s3_support import EndpointSession, endpoint_of, new_bucket, start_moto, stop_moto  # noqa: E402

ENTRIES = 200
VALUE = b"x" * 1024
WORDS = ["alpha", "beta", "gamma", "delta", "oauth", "token", "cache", "flow", "error", "retry", "limit", "rate"]


def _document(rng: random.Random, words: int = 600) -> bytes:
    return " ".join(rng.choice(WORDS) + str(rng.randrange(50)) for _ in range(words)).encode()


@pytest.fixture
def s3_endpoint() -> Iterator[str]:
    """A fresh moto server per benchmark, so neither member runs against a fuller server."""
    server = start_moto()
    yield endpoint_of(server)
    stop_moto(server)


def _unified(kind: str, impl: str, tmp_path: Path, s3_endpoint: str | None = None, **kwargs: Any) -> Any:
    package = ref_storage if impl == "reference" else our_storage
    if kind == "memory":
        return package.InMemoryStorage(**kwargs)
    if kind == "file":
        extra = {"durable": False} if impl == "native-nofsync" else {}
        return package.LocalFileStorage(str(tmp_path / f"{impl}-{uuid.uuid4().hex[:6]}"), **kwargs, **extra)
    assert s3_endpoint is not None
    bucket = new_bucket(s3_endpoint)
    return package.S3Storage(bucket, prefix="bench", boto_session=EndpointSession(s3_endpoint), **kwargs)


IMPLS = ["reference", "native"]
FILE_IMPLS = ["reference", "native", "native-nofsync"]
BACKENDS = [("memory", IMPLS), ("file", FILE_IMPLS), ("s3", IMPLS)]
CASES = [(kind, impl) for kind, impls in BACKENDS for impl in impls]


def _endpoint(kind: str, request: pytest.FixtureRequest) -> str | None:
    return request.getfixturevalue("s3_endpoint") if kind == "s3" else None


@pytest.mark.parametrize(("kind", "impl"), CASES)
def test_write(benchmark: Any, kind: str, impl: str, tmp_path: Path, request: pytest.FixtureRequest) -> None:
    storage = _unified(kind, impl, tmp_path, _endpoint(kind, request))
    benchmark.group = f"write 200 x 1 KiB: {kind}"
    benchmark.extra_info["impl"] = impl

    async def work() -> None:
        for i in range(ENTRIES):
            await storage.write(f"dir/{i % 10}/key{i}", VALUE)

    benchmark.pedantic(lambda: asyncio.run(work()), rounds=3 if kind == "s3" else 5, iterations=1)


@pytest.mark.parametrize(("kind", "impl"), CASES)
def test_read(benchmark: Any, kind: str, impl: str, tmp_path: Path, request: pytest.FixtureRequest) -> None:
    storage = _unified(kind, impl, tmp_path, _endpoint(kind, request))
    benchmark.group = f"read 200 x 1 KiB: {kind}"
    keys = [f"dir/{i % 10}/key{i}" for i in range(ENTRIES)]

    async def fill() -> None:
        for key in keys:
            await storage.write(key, VALUE)

    asyncio.run(fill())

    async def work() -> None:
        for key in keys:
            assert await storage.read(key) is not None

    benchmark.pedantic(lambda: asyncio.run(work()), rounds=3 if kind == "s3" else 5, iterations=1)


@pytest.mark.parametrize(("kind", "impl"), [case for case in CASES if case[1] != "native-nofsync"])
def test_list(benchmark: Any, kind: str, impl: str, tmp_path: Path, request: pytest.FixtureRequest) -> None:
    storage = _unified(
        kind, impl if impl != "native" or kind != "file" else "native-nofsync", tmp_path, _endpoint(kind, request)
    )
    benchmark.group = f"list 1,000 keys: {kind}"
    count = 1000

    async def fill() -> None:
        await asyncio.gather(*(storage.write(f"d{i % 20}/k{i}", b"v") for i in range(count)))

    asyncio.run(fill())

    def work() -> None:
        assert len(asyncio.run(storage.list(""))) == count

    benchmark.pedantic(work, rounds=3 if kind == "s3" else 10, iterations=1)


@pytest.mark.parametrize(("kind", "impl"), [case for case in CASES if case[1] != "native-nofsync"])
def test_keyword_search(benchmark: Any, kind: str, impl: str, tmp_path: Path, request: pytest.FixtureRequest) -> None:
    storage = _unified(
        kind, impl if impl != "native" or kind != "file" else "native-nofsync", tmp_path, _endpoint(kind, request)
    )
    benchmark.group = f"keyword search 200 docs x ~4 KiB: {kind}"
    rng = random.Random(7)

    async def fill() -> None:
        for i in range(ENTRIES):
            await storage.write(f"docs/{i}.md", _document(rng))

    asyncio.run(fill())

    def work() -> None:
        assert asyncio.run(storage.search("oauth7 token3 retry49 nothing"))

    benchmark.pedantic(work, rounds=3 if kind == "s3" else 10, iterations=1)


BM25_CASES = [("file", "reference"), ("file", "native"), ("memory", "native")]


@pytest.mark.parametrize(("kind", "impl"), BM25_CASES)
def test_bm25_index_and_search(benchmark: Any, kind: str, impl: str, tmp_path: Path) -> None:
    """Index 200 documents, then run 20 queries (in-memory BM25 is our extension, no reference)."""
    benchmark.group = "bm25 index 200 docs + 20 queries"
    rng = random.Random(11)
    documents = [_document(rng, 200) for _ in range(ENTRIES)]

    def work() -> None:
        if impl == "reference":
            strategy: Any = ref_search.Bm25SearchStrategy()
            storage: Any = ref_storage.LocalFileStorage(str(tmp_path / uuid.uuid4().hex), search_strategy=strategy)
        elif kind == "file":
            strategy = our_search.Bm25SearchStrategy()
            storage = our_storage.LocalFileStorage(
                str(tmp_path / uuid.uuid4().hex), search_strategy=strategy, durable=False
            )
        else:
            strategy = our_search.Bm25SearchStrategy(in_memory=True)
            storage = our_storage.InMemoryStorage(search_strategy=strategy)

        async def run() -> None:
            for i, document in enumerate(documents):
                await storage.write(f"d{i}.md", document)
            for q in range(20):
                await storage.search(f"{WORDS[q % len(WORDS)]}{q}")
            await strategy.close()

        asyncio.run(run())

    benchmark.extra_info["impl"] = f"{impl}-{kind}"
    benchmark.pedantic(work, rounds=3, iterations=1)


@pytest.mark.parametrize(
    ("kind", "impl"), [("memory", "reference"), ("memory", "native"), *[("file", i) for i in FILE_IMPLS]]
)
def test_legacy_store_retrieve(benchmark: Any, kind: str, impl: str, tmp_path: Path) -> None:
    package: Any = ref_legacy if impl == "reference" else our_legacy
    benchmark.group = f"legacy store+retrieve 100 x 1 KiB: {kind}"
    extra = {"durable": False} if impl == "native-nofsync" else {}

    def work() -> None:
        directory = str(tmp_path / uuid.uuid4().hex)
        backend = package.InMemoryStorage() if kind == "memory" else package.FileStorage(directory, **extra)

        async def run() -> None:
            refs = [await backend.store(f"tool{i}_0", VALUE) for i in range(100)]
            for reference in refs:
                await backend.retrieve(reference)

        asyncio.run(run())

    benchmark.pedantic(work, rounds=5, iterations=1)
