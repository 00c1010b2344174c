"""The stash: its API and stored bytes, session persistence, and stashes shared between the two implementations.

Everything the reference stores must stay readable both ways, on every backend: in memory, local
files and S3 over HTTP (a moto server on 127.0.0.1), each with the SDK's class and with ours.
"""

from __future__ import annotations

import asyncio
import base64
import json
import uuid
from collections.abc import Callable
from typing import Any

import pytest
import strands.storage as sdk_storage
import strands_offload.storage as our_storage
from _cm_harness import (
    REFERENCE,
    ContextModel,
    Impl,
    Reply,
    ToolCall,
    fixed_tracking_ids,
    replies,
    retrieve,
    storage_contents,
    tool_results,
)
from strands import Agent, tool
from strands.session.snapshot_session_manager import SnapshotSessionManager

LOG = "".join(f"{i:05d} GET /api/items status={'500 ERROR' if i % 40 == 3 else '200'}\n" for i in range(1_500))
PNG = b"\x89PNG\r\n\x1a\n" + bytes(range(256)) * 4


def run(coroutine: Any) -> Any:
    return asyncio.run(coroutine)


# --------------------------------------------------------------------------------------------------
# The Stash class itself, step by step against the reference, comparing every stored byte

MESSAGES: list[dict[str, Any]] = [
    {
        "role": "user",
        "content": [{"text": "caf\u00e9 \u2014 \U0001f600"}, {"image": {"format": "png", "source": {"bytes": PNG}}}],
        "tracking_id": "t1",
    },
    {
        "role": "assistant",
        "content": [
            {"reasoningContent": {"reasoningText": {"text": "hmm", "signature": "s"}}},
            {"text": "calling"},
            {"toolUse": {"toolUseId": "tu_a", "name": "read", "input": {}}},
            {"cachePoint": {"type": "default"}},
        ],
        "tracking_id": "t2",
    },
    {
        "role": "user",
        "content": [
            {
                "toolResult": {
                    "toolUseId": "tu_a",
                    "status": "success",
                    "content": [{"text": LOG}, {"json": {"k": [1, 2.5, None, "\u00fc"]}}],
                }
            },
            {"toolResult": {"toolUseId": "tu_skip", "status": "success", "content": [{"text": "skipped"}]}},
            {"document": {"format": "pdf", "name": "r", "source": {"bytes": b"%PDF-1.4"}}},
        ],
    },
]


async def _stash_script(impl: Impl, storage: Any) -> list[Any]:
    """Drive one Stash through its whole API; return everything it answered."""
    stash = impl.module("stash").Stash(storage, "sess-1", "agent-1")
    answers: list[Any] = [stash.storage_type_name]
    answers.append(stash.refs_for(MESSAGES[2]["content"][0], MESSAGES[2], 0))
    answers.append(stash.refs_for(MESSAGES[0]["content"][1], MESSAGES[0], 1))
    answers.append(stash.refs_for(MESSAGES[2]["content"][2], MESSAGES[2], 2))  # no tracking id: "unknown"
    for message in MESSAGES:
        await stash.store_message(message, frozenset({"tu_skip"}))
    answers.append(sorted(await stash.list()))
    answers.append(await stash.store("t1", 0, b'{"text": "replaced"}'))
    await stash.store_message(MESSAGES[0], keep_existing=True)  # keeps "replaced"
    answers.append(await stash.retrieve("t1_0"))
    answers.append(await stash.retrieve("tu_a_1"))
    answers.append(await stash.retrieve("nothing_0"))
    snapshot = await stash.take_snapshot()
    answers.append(snapshot)
    await stash.delete("t1_0")
    answers.append(sorted(await stash.list()))
    await stash.clear()
    answers.append(await stash.list())
    await stash.load_snapshot(snapshot)
    answers.append(sorted(await stash.list()))
    return answers


@pytest.mark.parametrize("storage_class", [sdk_storage.InMemoryStorage, our_storage.InMemoryStorage])
def test_stash_api_matches_reference(impl: Impl, storage_class: Callable[[], Any]) -> None:
    expected_storage, actual_storage = storage_class(), storage_class()
    expected = run(_stash_script(REFERENCE, expected_storage))
    actual = run(_stash_script(impl, actual_storage))
    assert actual == expected
    assert run(storage_contents(actual_storage)) == run(storage_contents(expected_storage))
    stored = run(storage_contents(actual_storage))
    prefix = "context/sess-1/scopes/agent/agent-1/"
    assert all(key.startswith(prefix) for key in stored)
    # Bytes go in as base64 text inside default json.dumps output.
    assert json.loads(stored[prefix + "t1_1"])["image"]["source"]["bytes"] == base64.b64encode(PNG).decode()
    assert stored[prefix + "tu_a_1"] == b'{"json": {"k": [1, 2.5, null, "\\u00fc"]}}'


def test_clear_session_removes_every_agent_of_the_session(impl: Impl) -> None:
    storage = sdk_storage.InMemoryStorage()
    stash_class = impl.module("stash").Stash
    first, second = stash_class(storage, "s", "a1"), stash_class(storage, "s", "a2")
    other = stash_class(storage, "other", "a1")
    for stash in (first, second, other):
        run(stash.store_message(MESSAGES[0]))
    run(first.clear_session())
    assert run(storage.list("")) == ["context/other/scopes/agent/a1/t1_0", "context/other/scopes/agent/a1/t1_1"]


def test_explicit_namespaced_storage_is_the_exact_stash_root(impl: Impl) -> None:
    """A namespaced view given in StashConfig is shared as it is; agent-level storage always gets the prefix."""
    storage = sdk_storage.InMemoryStorage()
    agent = Agent(
        model=ContextModel(),
        messages=[dict(MESSAGES[0])],
        storage=storage,
        context_manager=impl.ContextManager(stash={"storage": storage.namespace("team")}),
        callback_handler=None,
    )
    run(agent.context_manager.stash.store_message(MESSAGES[0]))  # type: ignore[union-attr]
    assert run(storage.list("")) == ["team/t1_0", "team/t1_1"]
    assert agent.context_manager.stash_is_durable is False  # type: ignore[union-attr]
    run(agent.context_manager.stash.clear_session())  # type: ignore[union-attr]  # caller-scoped: left alone
    assert run(storage.list("")) == ["team/t1_0", "team/t1_1"]


# --------------------------------------------------------------------------------------------------
# Sessions: a log truncated on arrival, saved by the SDK's snapshot session manager, restored elsewhere


@tool
def read_log() -> str:
    """Read the access log."""
    return LOG


def _session_agent(impl: Impl, **agent_kwargs: Any) -> Agent:
    strategy = impl.Offload.truncate("tool_results", {"preview_tokens": 100}).when(threshold=400)
    model = ContextModel(replies(Reply("", [ToolCall("read_log", {}, "tu_log")]), Reply("500s at 3, 43, 83")))
    return Agent(
        model=model,
        tools=[read_log],
        context_manager=impl.ContextManager(strategies=[strategy]),
        callback_handler=None,
        **agent_kwargs,
    )


def _session_kwargs(session_id: str, storage: Any, agent_storage: bool) -> dict[str, Any]:
    """A snapshot session manager on ``storage``, or on the agent's storage when ``agent_storage``."""
    if agent_storage:
        return {"session_manager": SnapshotSessionManager(session_id), "storage": storage}
    return {"session_manager": SnapshotSessionManager(session_id, storage=storage)}


def _write_session(impl: Impl, session_id: str, storage: Any, *, agent_storage: bool) -> Agent:
    """One turn that stashes the log; the snapshot is saved after the invocation."""
    agent = _session_agent(impl, **_session_kwargs(session_id, storage, agent_storage))
    with fixed_tracking_ids():
        agent("any server errors?")
    preview = tool_results(agent.messages)[0]["content"][0]["text"]
    assert preview.startswith("[Truncated: ") and preview.endswith("[Stashed] [ref: tu_log_0]")
    return agent


def _read_session(impl: Impl, session_id: str, storage: Any, *, agent_storage: bool) -> Agent:
    return _session_agent(impl, **_session_kwargs(session_id, storage, agent_storage))


def _snapshot(storage: Any, session_id: str) -> dict[str, Any]:
    data = run(storage.read(f"session/{session_id}/scopes/agent/default/snapshots/snapshot_latest.json"))
    return json.loads(data)["data"]  # type: ignore[no-any-return]


def _assert_reads_the_log(agent: Agent) -> None:
    """The restored history points at the stash, and the stash answers for it."""
    assert tool_results(agent.messages)[0]["content"][0]["text"].endswith("[ref: tu_log_0]")
    assert run(agent.context_manager.stash.retrieve("tu_log_0")) == {"text": LOG}  # type: ignore[union-attr]
    found = retrieve(agent, reference="tu_log_0", pattern="500 ERROR", context_lines=0)
    assert found["status"] == "success"
    assert "00043 GET /api/items status=500 ERROR" in found["content"][0]["text"]


DIRECTIONS = ["written_by_reference", "written_by_impl"]


def _writer_reader(impl: Impl, direction: str) -> tuple[Impl, Impl]:
    return (REFERENCE, impl) if direction == "written_by_reference" else (impl, REFERENCE)


@pytest.mark.parametrize("direction", DIRECTIONS)
def test_in_memory_stash_is_saved_inline_and_restored(impl: Impl, direction: str) -> None:
    writer, reader = _writer_reader(impl, direction)
    session_storage = sdk_storage.InMemoryStorage()
    _write_session(writer, "inline-1", session_storage, agent_storage=False)
    stash_data = _snapshot(session_storage, "inline-1")["stash"]
    assert stash_data["location"] == "inline"
    assert stash_data["entries"]["tu_log_0"] == {"text": LOG}
    # A new process: the stash starts empty in memory and is refilled from the snapshot.
    restored = _read_session(reader, "inline-1", session_storage, agent_storage=False)
    assert restored.context_manager.stash_is_durable is False  # type: ignore[union-attr]
    _assert_reads_the_log(restored)


@pytest.mark.parametrize("storage_class", [sdk_storage.LocalFileStorage, our_storage.LocalFileStorage])
@pytest.mark.parametrize("direction", DIRECTIONS)
def test_durable_stash_is_referenced_and_read_in_place(
    impl: Impl, direction: str, storage_class: Callable[[str], Any], tmp_path: Any
) -> None:
    writer, reader = _writer_reader(impl, direction)
    _write_session(writer, "durable-1", storage_class(str(tmp_path)), agent_storage=True)
    storage = storage_class(str(tmp_path))  # another process, same directory
    assert _snapshot(storage, "durable-1")["stash"] == {"location": "external", "storage_type": "LocalFileStorage"}
    assert run(storage.read("context/durable-1/scopes/agent/default/tu_log_0")) == json.dumps({"text": LOG}).encode()
    restored = _read_session(reader, "durable-1", storage, agent_storage=True)
    assert restored.context_manager.stash_is_durable is True  # type: ignore[union-attr]
    _assert_reads_the_log(restored)


def test_deleting_the_session_deletes_its_stash(impl: Impl, tmp_path: Any) -> None:
    storage = our_storage.LocalFileStorage(str(tmp_path))
    manager = SnapshotSessionManager("gone-1")
    agent = _session_agent(impl, session_manager=manager, storage=storage)
    agent("any server errors?")
    assert run(storage.list("context/gone-1/"))
    run(manager.delete_session())
    assert run(storage.list("context/gone-1/")) == []
    assert run(storage.list("session/gone-1/")) == []


# --------------------------------------------------------------------------------------------------
# Every backend: the same keys and bytes as the reference, and readable both ways

BACKENDS = ["sdk-memory", "ours-memory", "sdk-local", "ours-local", "sdk-s3", "ours-s3"]


@pytest.fixture(params=BACKENDS)
def open_storage(request: pytest.FixtureRequest, tmp_path: Any) -> Callable[[str], Any]:
    """Opens a handle on one store per name: the same object in memory, a new client on files and S3."""
    package, kind = request.param.split("-")
    module = sdk_storage if package == "sdk" else our_storage
    if kind == "memory":
        stores: dict[str, Any] = {}
        return lambda name: stores.setdefault(name, module.InMemoryStorage())
    if kind == "local":
        return lambda name: module.LocalFileStorage(str(tmp_path / name))
    bucket, session = request.getfixturevalue("s3_bucket"), request.getfixturevalue("s3_session")
    run_prefix = uuid.uuid4().hex
    return lambda name: module.S3Storage(bucket, prefix=f"{run_prefix}/{name}", boto_session=session)


def test_stash_on_every_backend_matches_reference_and_reads_both_ways(
    impl: Impl, open_storage: Callable[[str], Any]
) -> None:
    """Each implementation writes a session; the keys and bytes agree, and each reads what the other wrote."""
    written: dict[str, dict[str, bytes]] = {}
    for which, name in ((REFERENCE, "by-reference"), (impl, "by-impl")):
        _write_session(which, "shared-1", open_storage(name), agent_storage=True)
        contents = run(storage_contents(open_storage(name)))
        written[name] = {key: value for key, value in contents.items() if key.startswith("context/")}
    assert written["by-impl"] == written["by-reference"]
    assert "context/shared-1/scopes/agent/default/tu_log_0" in written["by-reference"]
    _assert_reads_the_log(_read_session(impl, "shared-1", open_storage("by-reference"), agent_storage=True))
    _assert_reads_the_log(_read_session(REFERENCE, "shared-1", open_storage("by-impl"), agent_storage=True))
