"""What the manager keeps per agent and per call (issue 38): strategies shared by two managers, changes made
outside the pipeline between two calls."""

from __future__ import annotations

import asyncio
import re
from typing import Any

import pytest
from _cm_harness import REFERENCE, ContextModel, encode_for_compare, fixed_tracking_ids
from _two_agents import YieldingModel, outcomes, run_together, shared_as_separate, tool_each_turn
from strands import Agent, tool
from strands.types.content import Messages
from strands_offload.context_manager import ContextManager, Offload

# ---------------------------------------------------------------------------- shared strategy objects


@tool
async def fetch(part: int) -> str:
    """Fetch one part of the records."""
    await asyncio.sleep(0.001)
    return f"part {part}: " + "record value " * 900


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
            model=YieldingModel(
                tool_each_turn(k, "fetch", lambda turn: {"part": turn}, "noted " * 20), context_window_limit=1_500
            ),
            tools=[fetch],
            context_manager=managers[k],
            callback_handler=None,
        )
        for k in range(2)
    ]
    run_together(agents, lambda k: [f"agent {k}, turn {turn}: fetch the next part" for turn in range(5)])
    return outcomes(managers, agents, _without_ids)


def test_the_same_strategy_objects_serve_two_agents_as_two_separate_sets() -> None:
    for _, savings, refs in shared_as_separate(_two_agents):
        assert refs, "the session truncated nothing: the test would show nothing"
        assert savings.edits > 0 and savings.summarizer_calls > 0


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
