"""1,000+ concurrent writes and reads per backend, from threads and asyncio tasks, then every value checked."""

from __future__ import annotations

import asyncio
import random
import threading
import uuid
from pathlib import Path
from typing import Any

import pytest
from strands_offload.context_offloader import FileStorage
from strands_offload.context_offloader import InMemoryStorage as LegacyMemory
from strands_offload.context_offloader import S3Storage as LegacyS3
from strands_offload.storage import InMemoryStorage, LocalFileStorage, S3Storage

TASKS = 500
THREADS = 5
PER_THREAD = 100
SHARED = 10

# Slow (over a minute in all); the multi-version run (.ci/test-matrix) runs it on one Python.
pytestmark = pytest.mark.single_python


def value_for(key: str, writer: str = "") -> bytes:
    return f"{key}|{writer}|".encode() * 20


async def hammer(storage: Any, keys: list[str], writer: str, all_keys: list[str]) -> None:
    """Write each key, read it back, and read some other key that may or may not exist yet."""
    rng = random.Random(writer)
    for key in keys:
        await storage.write(key, value_for(key))
        assert await storage.read(key) == value_for(key)
        other = rng.choice(all_keys)
        seen = await storage.read(other)
        assert seen is None or seen in {value_for(other)} | {value_for(other, f"w{i}") for i in range(THREADS + 1)}
        shared = f"shared/{rng.randrange(SHARED)}"
        await storage.write(shared, value_for(shared, writer))


def drive(storage: Any) -> None:
    task_keys = [f"task/{i:04d}" for i in range(TASKS)]
    thread_keys = [[f"thread{t}/{i:04d}" for i in range(PER_THREAD)] for t in range(THREADS)]
    every = task_keys + [k for chunk in thread_keys for k in chunk]
    errors: list[BaseException] = []

    def in_thread(index: int) -> None:
        try:
            asyncio.run(hammer(storage, thread_keys[index], f"w{index}", every))
        except BaseException as error:  # noqa: BLE001 - reported below
            errors.append(error)

    async def in_tasks() -> None:
        await asyncio.gather(*(hammer(storage, [key], f"w{THREADS}", every) for key in task_keys))

    threads = [threading.Thread(target=in_thread, args=(i,)) for i in range(THREADS)]
    for thread in threads:
        thread.start()
    asyncio.run(in_tasks())
    for thread in threads:
        thread.join()
    assert not errors, errors[0]

    async def verify() -> None:
        listed = await storage.list()
        shared = [k for k in listed if k.startswith("shared/")]
        assert [k for k in listed if not k.startswith("shared/")] == sorted(every)
        assert 0 < len(shared) <= SHARED
        for start in range(0, len(every), 50):
            chunk = every[start : start + 50]
            values = await asyncio.gather(*(storage.read(k) for k in chunk))
            assert values == [value_for(k) for k in chunk]
        for key in shared:
            assert await storage.read(key) in {value_for(key, f"w{i}") for i in range(THREADS + 1)}

    asyncio.run(verify())


def test_in_memory_storage() -> None:
    drive(InMemoryStorage())


def test_local_file_storage(tmp_path: Path) -> None:
    drive(LocalFileStorage(str(tmp_path / "files")))
    assert not list((tmp_path / "files").rglob(".__strands_tmp_*"))


def test_s3_storage(s3_session: Any, s3_bucket: str) -> None:
    """Also crosses the 1,000-key page boundary of list_objects_v2 (1,010 keys)."""
    drive(S3Storage(s3_bucket, prefix="load", boto_session=s3_session))


def _type_of(key: str) -> str:
    return "text/plain" if key.startswith("task/") else "application/json"


class _LegacyAdapter:
    """Drives a legacy store/retrieve backend with the write/read/list vocabulary of ``drive``."""

    def __init__(self, backend: Any) -> None:
        self.backend = backend
        self.references: dict[str, str] = {}
        self.handed_out: set[str] = set()
        self.lock = threading.Lock()

    async def write(self, key: str, data: bytes) -> None:
        reference = await self.backend.store(key, data, _type_of(key))
        with self.lock:
            assert reference not in self.handed_out, "a reference was handed out twice"
            self.handed_out.add(reference)
            self.references[key] = reference

    async def read(self, key: str) -> bytes | None:
        with self.lock:
            reference = self.references.get(key)
        if reference is None:
            return None
        content, _ = await self.backend.retrieve(reference)
        return bytes(content)

    async def list(self) -> list[str]:
        return sorted(self.references)


@pytest.mark.parametrize("kind", ["memory", "file", "s3"])
def test_legacy_backends(kind: str, tmp_path: Path, request: pytest.FixtureRequest) -> None:
    if kind == "memory":
        backend: Any = LegacyMemory(evict_after_turns=None)
    elif kind == "file":
        backend = FileStorage(str(tmp_path / "art"))
    else:
        bucket = request.getfixturevalue("s3_bucket")
        backend = LegacyS3(bucket, uuid.uuid4().hex, request.getfixturevalue("s3_session"))
    adapter = _LegacyAdapter(backend)
    drive(adapter)
    if kind == "file":
        fresh = FileStorage(str(tmp_path / "art"))
        for key, reference in adapter.references.items():
            content, content_type = asyncio.run(fresh.retrieve(reference))
            assert content_type == _type_of(key)
