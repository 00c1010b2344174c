"""The model fetching offloaded originals with ``retrieve_context``, on a real Agent with the scripted model."""

from __future__ import annotations

import asyncio
import functools
import importlib
import json
import re
from typing import Any

from _cm_harness import (
    REFERENCE,
    ContextModel,
    Impl,
    Reply,
    ToolCall,
    encode_for_compare,
    fixed_tracking_ids,
    tool_results,
    without_usage,
)
from strands import Agent, tool
from strands.types.content import Messages

LOG = "\n".join(f"line {i}: {'ERROR db timeout' if i % 50 == 7 else 'request ok'}" for i in range(1, 3001))
PNG = b"\x89PNG\r\n\x1a\n" + bytes(range(256)) * 8
_REFS = re.compile(r"\[refs?: ([^\]]+)\]$")


@tool
def read_log() -> str:
    """Read the service log."""
    return LOG


@tool
def screenshot() -> dict[str, Any]:
    """Capture the dashboard with its description."""
    return {
        "status": "success",
        "content": [{"text": "dashboard\n" * 400}, {"image": {"format": "png", "source": {"bytes": PNG}}}],
    }


def _refs_in(messages: Messages, tool_use_id: str) -> list[str]:
    """The stash references the preview of a tool result lists."""
    result = next(r for r in tool_results(messages) if r["toolUseId"] == tool_use_id)
    found = _REFS.search(result["content"][0]["text"])
    return found.group(1).split(", ") if found else []


def _script(messages: Messages) -> Reply:
    """Read the log, fetch it whole, by pattern and by lines, then fetch a screenshot's image back."""
    called = [b["toolUse"]["toolUseId"] for m in messages for b in m["content"] if "toolUse" in b]
    step = len(called)

    def fetch(arguments: dict[str, Any]) -> Reply:
        return Reply("", [ToolCall("retrieve_context", arguments, f"tu_get_{step}")])

    if step == 0:
        return Reply("", [ToolCall("read_log", {}, "tu_log")])
    if step <= 4:
        log_ref = _refs_in(messages, "tu_log")[0]
        return fetch(
            [
                {"reference": log_ref},
                {"reference": log_ref, "pattern": "ERROR", "context_lines": 1},
                {"reference": log_ref, "line_range": {"start": 10, "end": 12}},
                {"reference": "tu_nowhere_0"},
            ][step - 1]
        )
    if step == 5:
        return Reply("", [ToolCall("screenshot", {}, "tu_shot")])
    if step == 6:
        return fetch({"reference": _refs_in(messages, "tu_shot")[1]})
    return Reply("found the timeouts")


@functools.cache
def session(impl: Impl) -> tuple[Agent, ContextModel]:
    model = ContextModel(_script)
    strategy = impl.Offload.truncate("tool_results", {"preview_tokens": 100}).when(threshold=500)
    agent = Agent(
        model=model,
        tools=[read_log, screenshot],
        context_manager=impl.ContextManager(strategies=[strategy]),
        callback_handler=None,
    )
    with fixed_tracking_ids():
        agent("why is the service slow?")
    return agent, model


def _result(impl: Impl, tool_use_id: str) -> dict[str, Any]:
    agent, _ = session(impl)
    return next(r for r in tool_results(agent.messages) if r["toolUseId"] == tool_use_id)


def test_large_results_become_previews_with_references(impl: Impl) -> None:
    text = _result(impl, "tu_log")["content"][0]["text"]
    assert text.startswith(f"[Truncated: 1 block, ~{-(-len(LOG) // 4):,} tokens]\n\n")
    assert text.endswith("\n\n[Stashed] [ref: tu_log_0]")
    shot = _result(impl, "tu_shot")["content"]
    assert shot[0]["text"].endswith("[Stashed] [refs: tu_shot_0, tu_shot_1]")
    assert shot[1] == {"image": {"format": "png", "source": {"bytes": PNG}}}  # media stays beside the preview


def test_retrieval_by_reference_returns_the_original(impl: Impl) -> None:
    result = _result(impl, "tu_get_1")
    assert result["status"] == "success"
    assert result["content"] == [{"text": json.dumps({"text": LOG})[:40_000] + "\n\n[truncated]"}]


def test_retrieval_by_pattern_returns_matching_lines(impl: Impl) -> None:
    result = _result(impl, "tu_get_2")
    assert result["status"] == "success"
    text = result["content"][0]["text"]
    for number in (7, 57, 2957):
        assert f"line {number}: ERROR db timeout" in text
    assert "line 30: request ok" not in text


def test_retrieval_by_line_range_returns_those_lines(impl: Impl) -> None:
    result = _result(impl, "tu_get_3")
    assert result["status"] == "success"
    text = result["content"][0]["text"]
    assert all(f"line {n}: request ok" in text for n in (10, 11, 12))
    assert "line 9:" not in text and "line 13:" not in text


def test_unknown_reference_is_an_error_result(impl: Impl) -> None:
    result = _result(impl, "tu_get_4")
    assert result["status"] == "error"
    assert result["content"] == [{"text": "Error: reference not found: tu_nowhere_0"}]


def test_retrieval_restores_an_image(impl: Impl) -> None:
    result = _result(impl, "tu_get_6")
    assert result["status"] == "success"
    assert result["content"] == [{"image": {"format": "png", "source": {"bytes": PNG}}}]


def test_retrieval_results_are_neither_stashed_nor_offloaded(impl: Impl) -> None:
    agent, _ = session(impl)
    stash = agent.context_manager.stash  # type: ignore[union-attr]
    keys = asyncio.run(stash.list())
    assert sorted(key for key in keys if key.startswith("tu_")) == ["tu_log_0", "tu_shot_0", "tu_shot_1"]
    # The full retrieval is 40 KB, far over the threshold, and still whole in the history.
    assert len(_result(impl, "tu_get_1")["content"][0]["text"]) > 40_000


def test_retrieval_session_matches_reference(impl: Impl) -> None:
    agent, model = session(impl)
    reference_agent, reference_model = session(REFERENCE)
    assert encode_for_compare(tool_results(agent.messages)) == encode_for_compare(
        tool_results(reference_agent.messages)
    )
    assert without_usage(model.calls) == without_usage(reference_model.calls)


def _direct_calls(impl: Impl) -> list[Any]:
    """Greps and pages straight through the tool while originals are rewritten under one reference."""
    stash_module, tool_module = impl.module("stash"), impl.module("retrieval_tool")
    storage_module = "strands.storage" if impl is REFERENCE else "strands_offload.storage"
    storage = importlib.import_module(storage_module).InMemoryStorage()
    stash = stash_module.Stash(storage, "session", "agent")
    make = getattr(tool_module, "_create_retrieval_tool" if impl is REFERENCE else "create_retrieval_tool")
    retrieve = make(stash)

    async def call(**inputs: Any) -> Any:
        events = [
            e async for e in retrieve.stream({"toolUseId": "t1", "name": "retrieve_context", "input": inputs}, {})
        ]
        return events[-1]

    async def session() -> list[Any]:
        seen = []
        for original in ({"text": "alpha\nbeta\n"}, {"text": "alpha\ngamma\n"}, 42, None, {"json": {"beta": [1]}}):
            await stash.store("b", 0, json.dumps(original).encode())
            seen.append(await call(reference="b_0", pattern="beta"))
            seen.append(await call(reference="b_0", line_range={"start": 1, "end": 2}))
            seen.append(await call(reference="b_0"))
        return seen

    return asyncio.run(session())


def test_rewritten_null_and_non_text_originals_match_reference(impl: Impl) -> None:
    # The line index is cached per reference: each rewrite must be seen, never a stale index.
    assert encode_for_compare(_direct_calls(impl)) == encode_for_compare(_direct_calls(REFERENCE))
