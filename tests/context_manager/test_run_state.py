"""What the manager keeps per agent and per call (issue 38): strategies shared by two managers, changes made
outside the pipeline between two calls."""

from __future__ import annotations

import asyncio
import dataclasses
import re
from collections.abc import AsyncIterable
from typing import Any

import pytest
from _cm_harness import REFERENCE, ContextModel, Reply, ToolCall, encode_for_compare, fixed_tracking_ids
from strands import Agent, tool
from strands.types.content import Messages
from strands.types.streaming import StreamEvent
from strands_offload.context_manager import ContextManager, Offload

# ---------------------------------------------------------------------------- shared strategy objects


class _YieldingModel(ContextModel):
    """A ContextModel that gives the event loop a turn at every event: two agents' calls interleave."""

    async def stream(self, messages: Messages, *args: Any, **kwargs: Any) -> AsyncIterable[StreamEvent]:
        async for event in super().stream(messages, *args, **kwargs):
            await asyncio.sleep(0)
            yield event


@tool
async def fetch(part: int) -> str:
    """Fetch one part of the records."""
    await asyncio.sleep(0.001)
    return f"part {part}: " + "record value " * 900


def _script(agent: int) -> Any:
    def script(messages: Messages) -> Reply:
        last = messages[-1]["content"]
        if any("toolResult" in block for block in last):
            return Reply("noted " * 20)
        turn = sum(1 for m in messages if m["role"] == "user" and any("text" in b for b in m["content"]))
        return Reply("", [ToolCall("fetch", {"part": turn}, f"a{agent}-t{turn}")])

    return script


def _strategies() -> list[Any]:
    return [
        Offload.truncate("tool_results", {"preview_tokens": 100}).when(threshold=600),
        Offload.summarize("*").when(utilization=0.5, preserve_recent=2),
    ]


def _without_ids(messages: Messages) -> str:
    return re.sub(r'"tracking_id": "[^"]*"', "", encode_for_compare(messages))


def _two_agents(shared: bool) -> list[tuple[str, Any, set[str]]]:
    """Two agents run concurrently, each with its own manager; the managers share strategy objects or not."""
    common = _strategies()
    managers = [ContextManager(strategies=common if shared else _strategies()) for _ in range(2)]
    agents = [
        Agent(
            model=_YieldingModel(_script(k), context_window_limit=1_500),
            tools=[fetch],
            context_manager=managers[k],
            callback_handler=None,
        )
        for k in range(2)
    ]

    async def session(k: int) -> None:
        for turn in range(5):
            await agents[k].invoke_async(f"agent {k}, turn {turn}: fetch the next part")

    async def both() -> None:
        await asyncio.gather(session(0), session(1))

    asyncio.run(both())
    outcome = []
    for k in range(2):
        stash = managers[k].stash
        assert stash is not None
        refs = set(re.findall(r"\[ref: ([^\]]+)\]", encode_for_compare(agents[k].messages)))
        resolved = {ref for ref in refs if asyncio.run(stash.retrieve_raw(ref)) is not None}
        assert resolved == refs, f"agent {k}: references its manager's stash does not hold: {refs - resolved}"
        savings = dataclasses.replace(managers[k].savings(), native_seconds=0.0)  # a time, not a count
        outcome.append((_without_ids(agents[k].messages), savings, refs))
    return outcome


def test_the_same_strategy_objects_serve_two_agents_as_two_separate_sets() -> None:
    separate = _two_agents(shared=False)
    shared = _two_agents(shared=True)
    for k in range(2):
        messages, savings, refs = shared[k]
        assert refs, "the session truncated nothing: the test would show nothing"
        assert savings.edits > 0 and savings.summarizer_calls > 0
        assert messages == separate[k][0]
        assert savings == separate[k][1]  # each manager counts its own agent's edits, none of the other's
        assert refs == separate[k][2]


# ---------------------------------------------------------------------------- changes outside the pipeline


def _call(tool_use_id: str) -> dict[str, Any]:
    return {"role": "assistant", "content": [{"toolUse": {"toolUseId": tool_use_id, "name": "read", "input": {}}}]}


def _result(tool_use_id: str, text: str) -> dict[str, Any]:
    result = {"toolUseId": tool_use_id, "status": "success", "content": [{"text": text}]}
    return {"role": "user", "content": [{"toolResult": result}]}


def _history() -> list[dict[str, Any]]:
    messages: list[dict[str, Any]] = []
    for n in range(6):
        messages.append({"role": "user", "content": [{"text": f"question {n}: SECRET-123 " + "why " * 40}]})
        messages.append(_call(f"t{n}"))
        messages.append(_result(f"t{n}", f"result {n}: " + "line of output " * 250))  # ~900 tokens
        messages.append({"role": "assistant", "content": [{"text": f"answer {n}"}]})
    return messages


EDITS = {
    # Grown in place past the truncation threshold (1,500): the next call truncates it.
    "grown past the threshold": lambda m: m[2]["content"][0]["toolResult"]["content"][0].__setitem__(
        "text", m[2]["content"][0]["toolResult"]["content"][0]["text"] * 3
    ),
    # A block replaced in place by a larger one in its content list.
    "a block replaced in its list": lambda m: m[6]["content"].__setitem__(0, _result("t1", "x " * 8_000)["content"][0]),
    # Redacted to a text of the same length (no count changes; the request must carry the redaction).
    "redacted, same length": lambda m: m[4]["content"][0].__setitem__(
        "text", m[4]["content"][0]["text"].replace("SECRET-123", "[REDACTED]")
    ),
    # Grown so that the conversation crosses the summarization condition.
    "grown past the utilization": lambda m: m[9]["content"].append({"text": "more detail " * 5_000}),
}


@pytest.mark.parametrize("preset", ["auto", "cache-optimized"])
@pytest.mark.parametrize("edit", list(EDITS))
def test_an_in_place_edit_between_two_calls_gives_the_references_next_request(edit: str, preset: str) -> None:
    def run(manager: Any) -> list[str]:
        with fixed_tracking_ids():
            model = ContextModel(context_window_limit=40_000)
            agent = Agent(model=model, messages=_history(), context_manager=manager, callback_handler=None)
            agent("first question")
            EDITS[edit](agent.messages)  # user code, a tool, a guardrail: not through the pipeline
            agent("second question")
        return [encode_for_compare(call) for call in model.calls]

    reference = run(REFERENCE.ContextManager.from_strategy("auto"))
    ours = run(ContextManager.from_strategy(preset))
    assert ours[-1] == reference[-1]
    assert ours == reference
