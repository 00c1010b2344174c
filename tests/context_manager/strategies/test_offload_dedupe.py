"""``Offload.dedupe``: equal tool results kept once, through a real Agent."""

from __future__ import annotations

import asyncio
import copy
from pathlib import Path
from typing import Any

import pytest
from _cm_harness import ContextModel, Reply, ToolCall, replies
from _telemetry_support import recorded
from strands import Agent, tool
from strands.session.file_session_manager import FileSessionManager
from strands_offload import _native
from strands_offload.context_manager import ContextManager, Offload
from strands_offload.context_manager.strategies.offload.dedupe import DedupeStrategy, canonical
from strands_offload.storage import LocalFileStorage

_FILES = {"a.txt": "alpha " * 400, "b.txt": "beta " * 400}


@tool
def read_file(path: str) -> str:
    """Read a file."""
    return _FILES[path]


@tool
def read_status(path: str) -> dict[str, Any]:
    """Read a file; an error result for a missing one."""
    if path not in _FILES:
        return {"status": "error", "content": [{"text": "alpha " * 400}]}
    return {"status": "success", "content": [{"text": _FILES[path]}]}


def _image(path: str) -> dict[str, Any]:
    data = b"\x89PNG" + path.encode()
    return {
        "status": "success",
        "content": [{"text": "an image"}, {"image": {"format": "png", "source": {"bytes": data}}}],
    }


@tool
def read_image(path: str) -> dict[str, Any]:
    """Read an image."""
    return _image(path)


def _reads(*paths: str, name: str = "read_file") -> Any:
    return replies(*[Reply("", [ToolCall(name, {"path": p}, f"tu_{i}")]) for i, p in enumerate(paths)])


def _run(
    paths: tuple[str, ...],
    config: Any = None,
    *,
    cache: bool = False,
    name: str = "read_file",
    target: Any = "tool_results",
    **manager: Any,
) -> Agent:
    model = ContextModel(_reads(*paths, name=name))
    if cache:
        model.update_config(cache_prompt="default")
    agent = Agent(
        model=model,
        tools=[read_file, read_status, read_image],
        context_manager=ContextManager(strategies=[Offload.dedupe(target, config)], **manager),
        callback_handler=None,
    )
    agent("read the files")
    return agent


def _results(agent: Agent) -> dict[str, str]:
    out: dict[str, str] = {}
    for message in agent.messages:
        for block in message["content"]:
            if "toolResult" in block:
                result = block["toolResult"]
                out[result["toolUseId"]] = result["content"][0]["text"]
    return out


def _calls_and_results_pair(agent: Agent) -> bool:
    calls = [b["toolUse"]["toolUseId"] for m in agent.messages for b in m["content"] if "toolUse" in b]
    results = [b["toolResult"]["toolUseId"] for m in agent.messages for b in m["content"] if "toolResult" in b]
    return calls == results


def test_keep_last_rewrites_the_earlier_copy_without_prompt_caching() -> None:
    agent = _run(("a.txt", "b.txt", "a.txt"))
    results = _results(agent)
    assert results["tu_0"] == "[Duplicate of the result of read_file call tu_2] [ref: tu_0_0]"
    assert results["tu_1"] == _FILES["b.txt"] and results["tu_2"] == _FILES["a.txt"]
    assert _calls_and_results_pair(agent)


def test_keep_first_rewrites_the_new_copy_by_default_with_prompt_caching() -> None:
    agent = _run(("a.txt", "b.txt", "a.txt", "a.txt"), cache=True)
    results = _results(agent)
    assert results["tu_0"] == _FILES["a.txt"]
    assert results["tu_2"] == "[Duplicate of the result of read_file call tu_0] [ref: tu_2_0]"
    assert results["tu_3"] == "[Duplicate of the result of read_file call tu_0] [ref: tu_3_0]"


def test_keep_is_the_configured_one_whatever_the_caching() -> None:
    assert _results(_run(("a.txt", "a.txt"), {"keep": "first"}))["tu_1"].startswith("[Duplicate")
    assert _results(_run(("a.txt", "a.txt"), {"keep": "last"}, cache=True))["tu_0"].startswith("[Duplicate")
    with pytest.raises(ValueError, match="keep"):
        Offload.dedupe("tool_results", {"keep": "both"})  # type: ignore[typeddict-item]


def test_keep_last_chains_to_the_newest_copy() -> None:
    results = _results(_run(("a.txt", "a.txt", "a.txt")))
    assert results["tu_0"] == "[Duplicate of the result of read_file call tu_1] [ref: tu_0_0]"
    assert results["tu_1"] == "[Duplicate of the result of read_file call tu_2] [ref: tu_1_0]"
    assert results["tu_2"] == _FILES["a.txt"]


def test_status_is_part_of_the_content_compared() -> None:
    # An error result with the same text as a success: not a duplicate (target "*" sees both).
    agent = _run(("a.txt", "missing"), name="read_status", target="*")
    assert _results(agent) == {"tu_0": _FILES["a.txt"], "tu_1": "alpha " * 400}
    agent = _run(("a.txt", "missing", "a.txt"), name="read_status", target="*")
    assert _results(agent)["tu_0"].startswith("[Duplicate of the result of read_status call tu_2]")


def test_media_is_part_of_the_content_compared() -> None:
    one = {"status": "success", "content": [{"text": "x"}, {"image": {"format": "png", "source": {"bytes": b"1"}}}]}
    two = {"status": "success", "content": [{"text": "x"}, {"image": {"format": "png", "source": {"bytes": b"2"}}}]}
    assert canonical(one) != canonical(two)
    assert _native.content_hash(canonical(one)) != _native.content_hash(canonical(two))
    assert canonical(one) == canonical(copy.deepcopy(one))
    agent = _run(("a.png", "b.png", "a.png"), name="read_image")
    results = {r["toolUseId"]: r["content"] for m in agent.messages for b in m["content"] if (r := b.get("toolResult"))}
    assert results["tu_1"] == _image("b.png")["content"]  # same text, other image: kept
    assert results["tu_0"] == [{"text": "[Duplicate of the result of read_image call tu_2] [refs: tu_0_0, tu_0_1]"}]


def test_a_result_no_longer_in_the_conversation_is_not_matched() -> None:
    strategy = DedupeStrategy("tool_results")
    agent = Agent(model=ContextModel(), context_manager=ContextManager(strategies=[strategy]), callback_handler=None)

    def pair(tool_use_id: str) -> list[dict[str, Any]]:
        return [
            {
                "role": "assistant",
                "content": [{"toolUse": {"toolUseId": tool_use_id, "name": "read_file", "input": {}}}],
            },
            {
                "role": "user",
                "content": [
                    {"toolResult": {"toolUseId": tool_use_id, "status": "success", "content": [{"text": "same"}]}}
                ],
            },
        ]

    for message in pair("t1"):
        agent.messages.append(message)
        asyncio.run(strategy.arrived(agent, message))
    del agent.messages[:]  # the earlier copy left the conversation (a reduction removed it)
    for message in pair("t2"):
        agent.messages.append(message)
        assert asyncio.run(strategy.arrived(agent, message)) is False
    assert agent.messages[1]["content"][0]["toolResult"]["content"] == [{"text": "same"}]


def test_pinned_copies_are_never_rewritten() -> None:
    strategy = DedupeStrategy("tool_results", {"keep": "last"})
    agent = Agent(model=ContextModel(), context_manager=ContextManager(strategies=[strategy]), callback_handler=None)
    messages: list[dict[str, Any]] = [
        {"role": "user", "content": [{"text": "go"}]},
        {"role": "assistant", "content": [{"toolUse": {"toolUseId": "t1", "name": "read_file", "input": {}}}]},
        {
            "role": "user",
            "content": [{"toolResult": {"toolUseId": "t1", "status": "success", "content": [{"text": "same"}]}}],
            "metadata": {"custom": {"pinned": True}},
        },
        {"role": "assistant", "content": [{"toolUse": {"toolUseId": "t2", "name": "read_file", "input": {}}}]},
        {
            "role": "user",
            "content": [{"toolResult": {"toolUseId": "t2", "status": "success", "content": [{"text": "same"}]}}],
        },
    ]
    for message in messages:
        agent.messages.append(message)  # type: ignore[arg-type]
        asyncio.run(strategy.arrived(agent, message))
    assert messages[2]["content"][0]["toolResult"]["content"] == [{"text": "same"}]  # pinned: kept
    assert messages[4]["content"][0]["toolResult"]["content"] == [{"text": "same"}]


def test_each_rewrite_is_counted_by_the_ledger_and_the_copy_is_retrievable() -> None:
    agent = _run(("a.txt", "a.txt", "b.txt", "b.txt"), {"keep": "first"})
    manager = agent.context_manager
    savings = manager.savings(agent)  # type: ignore[union-attr]
    assert savings.edits == 2 and savings.tokens_removed > savings.tokens_added > 0
    stash = manager._stash  # type: ignore[union-attr]
    assert asyncio.run(stash.retrieve("tu_1_0")) == {"text": _FILES["a.txt"]}
    assert asyncio.run(stash.retrieve("tu_3_0")) == {"text": _FILES["b.txt"]}


def test_persist_reductions_restores_the_markers(tmp_path: Path) -> None:
    def session() -> FileSessionManager:
        return FileSessionManager(session_id="s1", storage_dir=str(tmp_path / "sessions"))

    def manager() -> ContextManager:
        return ContextManager(
            strategies=[Offload.dedupe("tool_results", {"keep": "last"})],
            stash={"storage": LocalFileStorage(str(tmp_path / "stash"))},
            persist_reductions=True,
        )

    first = Agent(
        model=ContextModel(_reads("a.txt", "b.txt", "a.txt")),
        tools=[read_file],
        context_manager=manager(),
        session_manager=session(),
        agent_id="main",
        callback_handler=None,
    )
    first("read the files")
    assert _results(first)["tu_0"].startswith("[Duplicate of the result of read_file call tu_2]")
    restored = Agent(
        model=ContextModel(),
        tools=[read_file],
        context_manager=manager(),
        session_manager=session(),
        agent_id="main",
        callback_handler=None,
    )
    assert restored.messages == first.messages


def test_without_dedupe_copies_stay() -> None:
    model = ContextModel(_reads("a.txt", "a.txt"))
    agent = Agent(model=model, tools=[read_file], context_manager=ContextManager(strategies=[]), callback_handler=None)
    agent("read the files")
    assert _results(agent) == {"tu_0": _FILES["a.txt"], "tu_1": _FILES["a.txt"]}


def test_name_and_when() -> None:
    strategy = Offload.dedupe("tool_results")
    assert strategy.name == "offload:dedupe"
    assert isinstance(strategy.when(threshold=10), DedupeStrategy)


@pytest.mark.parametrize("stash", [None, False], ids=["originals-read-from-the-stash", "no-stash-bytes-kept"])
def test_equal_hashes_are_compared_in_full(monkeypatch: pytest.MonkeyPatch, stash: Any) -> None:
    # Every result hashes alike: only the full comparison tells a.txt from b.txt.
    monkeypatch.setattr(_native, "content_hash", lambda data: 7)
    options = {} if stash is None else {"stash": stash}
    results = _results(_run(("a.txt", "b.txt", "a.txt", "b.txt"), {"keep": "first"}, **options))
    refs = {"tu_2": " [ref: tu_2_0]", "tu_3": " [ref: tu_3_0]"} if stash is None else {"tu_2": "", "tu_3": ""}
    assert results == {
        "tu_0": _FILES["a.txt"],
        "tu_1": _FILES["b.txt"],
        "tu_2": "[Duplicate of the result of read_file call tu_0]" + refs["tu_2"],
        "tu_3": "[Duplicate of the result of read_file call tu_1]" + refs["tu_3"],
    }


def test_rewrites_are_counted_as_dedupe_edits(monkeypatch: pytest.MonkeyPatch) -> None:
    telemetry = recorded(monkeypatch)
    model = ContextModel(_reads("a.txt", "a.txt", "b.txt", "b.txt"))
    manager = ContextManager(
        strategies=[Offload.dedupe("tool_results", {"keep": "first"})],
        meter_provider=telemetry.meter_provider,
        tracer_provider=telemetry.tracer_provider,
    )
    agent = Agent(model=model, tools=[read_file], context_manager=manager, callback_handler=None)
    agent("read the files")
    assert telemetry.total("strands_offload.context.edits", **{"strands_offload.action": "dedupe"}) == 2
