"""strands' own subsystems running on our storage backends, and reading what the reference's wrote."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import strands.storage as ref_storage
from strands.storage.search import Bm25SearchStrategy as RefBm25
from strands.vended_memory_stores.file_memory_store import FileMemoryStore
from strands_offload.storage import InMemoryStorage, LocalFileStorage
from strands_offload.storage.search import Bm25SearchStrategy

NOTES = [
    "# OAuth setup\nUse the authorization code flow with PKCE.",
    "# Database migrations\nRun migrations before deploying.",
    "# OAuth setup\nRefresh tokens expire after 30 days.",
]


async def _memory_round(storage: Any) -> list[Any]:
    store = FileMemoryStore(name="agent-memory", storage=storage)
    keys = [await store.add(note) for note in NOTES]
    hits = await store.search("oauth refresh tokens")
    return [keys, [(hit.content, hit.metadata) for hit in hits]]


def test_file_memory_store_behaves_the_same_on_our_backends(tmp_path: Path) -> None:
    for ours, theirs in [
        (InMemoryStorage(), ref_storage.InMemoryStorage()),
        (LocalFileStorage(str(tmp_path / "o")), ref_storage.LocalFileStorage(str(tmp_path / "r"))),
    ]:
        assert asyncio.run(_memory_round(ours)) == asyncio.run(_memory_round(theirs))


def test_file_memory_store_with_bm25_reads_reference_data(tmp_path: Path) -> None:
    async def scenario() -> None:
        reference_strategy = RefBm25()
        writer = FileMemoryStore(
            name="m", storage=ref_storage.LocalFileStorage(str(tmp_path), search_strategy=reference_strategy)
        )
        for note in NOTES:
            await writer.add(note)
        expected = await writer.search("oauth tokens")
        await reference_strategy.close()
        our_strategy = Bm25SearchStrategy()
        reader = FileMemoryStore(name="m", storage=LocalFileStorage(str(tmp_path), search_strategy=our_strategy))
        assert await reader.search("oauth tokens") == expected
        assert expected and expected[0].metadata["path"] == "oauth-setup.md"
        await our_strategy.close()

    asyncio.run(scenario())


def _session_round_trip(writer_storage: Any, reader_storage: Any) -> Any:
    from strands import Agent
    from strands.session.snapshot_session_manager import SnapshotSessionManager

    manager = SnapshotSessionManager("session-1")
    writer = Agent(model="unused", callback_handler=None, storage=writer_storage, session_manager=manager)
    writer.messages.append({"role": "user", "content": [{"text": "remember the blue door"}]})
    manager.sync_agent(writer)
    reader = Agent(
        model="unused",
        callback_handler=None,
        storage=reader_storage,
        session_manager=SnapshotSessionManager("session-1"),
    )
    return reader.messages


def test_agent_sessions_persist_through_our_storage_both_ways(tmp_path: Path) -> None:
    expected = [{"role": "user", "content": [{"text": "remember the blue door"}]}]
    one, two = str(tmp_path / "one"), str(tmp_path / "two")
    assert _session_round_trip(LocalFileStorage(one), ref_storage.LocalFileStorage(one)) == expected
    assert _session_round_trip(ref_storage.LocalFileStorage(two), LocalFileStorage(two)) == expected
    shared = InMemoryStorage()
    assert _session_round_trip(shared, shared) == expected
    assert any(key.endswith("snapshot_latest.json") for key in asyncio.run(shared.list("session/")))
