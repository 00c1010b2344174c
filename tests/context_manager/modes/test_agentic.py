"""The agentic mode: model-driven tools and the token-usage status, as the Agent wires them for ``"agentic"``.

The Agent adds ``summarize_context``, ``truncate_context``, ``pin_context`` and the token-usage
middleware only for the literal string, which always builds the reference's class. Ours must do
the same wiring itself when ``ContextManager.from_strategy("agentic")`` is passed as an instance,
so the reference runs with the string and ours with the instance, and both must behave alike.
"""

from __future__ import annotations

import functools
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
    replies,
    texts,
    tool_results,
    without_usage,
)
from strands import Agent, tool

LIMIT = 50_000
STATUS = re.compile(
    r"\n\n<context-status>\n<used>([\d,]+) / 50,000 tokens \((\d+\.\d)%\)</used>\n"
    r"<remaining>~([\d,]+) tokens</remaining>\n</context-status>\Z"
)


@tool
def lookup(item: int) -> str:
    """Look an item up.

    Args:
        item: Which item.
    """
    return f"item {item}: " + "detail " * 200


def _history() -> list[dict[str, Any]]:
    messages: list[dict[str, Any]] = [{"role": "user", "content": [{"text": "keep every price in euros"}]}]
    for turn in range(8):
        messages.append({"role": "assistant", "content": [{"text": f"step {turn}: " + "thinking " * 30}]})
        messages.append({"role": "user", "content": [{"text": f"continue with step {turn + 1}"}]})
    for index, message in enumerate(messages):
        message["tracking_id"] = f"a{index}"
    return messages


def _calls() -> list[Reply]:
    def call(name: str, arguments: dict[str, Any], number: int) -> Reply:
        return Reply("", [ToolCall(name, arguments, f"tu_{name}_{number}")])

    return [
        call("lookup", {"item": 1}, 1),
        call("pin_context", {"select": [0], "filter": "user"}, 2),
        call("pin_context", {"select": "last_turn"}, 3),
        call("truncate_context", {"keep_recent": 10, "message_type": "messages"}, 4),
        call("lookup", {"item": 2}, 5),
        call("summarize_context", {"keep_recent": 2, "summary_ratio": 0.5}, 6),
        call("pin_context", {"select": 2, "action": "unpin"}, 7),
        Reply("prices stay in euros"),
    ]


def _blank(block: dict[str, Any]) -> dict[str, Any]:
    """The block with the token numbers of a status blanked: tool specs count, and their prose differs."""
    return {**block, "text": STATUS.sub("<status>", block["text"])} if "text" in block else block


@functools.cache
def session(impl: Impl) -> tuple[Agent, ContextModel]:
    model = ContextModel(replies(*_calls()), context_window_limit=LIMIT)
    agent = Agent(
        model=model, messages=_history(), tools=[lookup], context_manager=impl.agentic(), callback_handler=None
    )
    with fixed_tracking_ids():
        agent("go on")
    return agent, model


def test_agentic_tools_are_registered(impl: Impl) -> None:
    agent, _ = session(impl)
    assert sorted(agent.tool_names) == [
        "lookup",
        "pin_context",
        "retrieve_context",
        "summarize_context",
        "truncate_context",
    ]


def test_every_model_call_sees_the_context_status(impl: Impl) -> None:
    agent, model = session(impl)
    assert len(model.calls) == len(_calls())
    for call in model.calls:
        status = STATUS.search(call[-1]["content"][-1]["text"])
        assert status, call[-1]["content"][-1]
        used, percent, remaining = (float(group.replace(",", "")) for group in status.groups())
        assert remaining == LIMIT - used
        assert percent == round(used / LIMIT * 100, 1)
    # The status goes to the model only; the history never holds it.
    assert not any("<context-status>" in text for text in texts(agent.messages))


def test_agentic_tools_act_on_the_history(impl: Impl) -> None:
    agent, model = session(impl)
    outputs = {r["toolUseId"]: r["content"][0]["text"] for r in tool_results(agent.messages)}
    assert outputs["tu_pin_context_2"] == "Pinned 1 message(s)."
    assert outputs["tu_truncate_context_4"].startswith("Dropped ")
    assert outputs["tu_summarize_context_6"].startswith("Summarized ")
    assert outputs["tu_pin_context_7"].startswith("Unpinned ")
    assert agent.messages[0]["metadata"] == {"custom": {"pinned": True}}  # the pinned first message survived
    assert agent.messages[0]["content"] == [{"text": "keep every price in euros"}]
    # One summarizer call, made by summarize_context with the aux model (the agent's model here).
    assert [r["messages"][-1]["content"] for r in model.summary_requests] == [
        [{"text": "Please summarize this conversation."}]
    ]
    assert any(text.startswith("summary of ") and " messages #" in text for text in texts(agent.messages))


def test_agentic_session_matches_reference(impl: Impl) -> None:
    """Same tool outputs, same history, same model inputs, with the token numbers of the status blanked."""
    agent, model = session(impl)
    reference_agent, reference_model = session(REFERENCE)

    def blank_status(calls: list[Any]) -> list[Any]:
        return [[{**m, "content": [_blank(block) for block in m["content"]]} for m in call] for call in calls]

    assert encode_for_compare(tool_results(agent.messages)) == encode_for_compare(
        tool_results(reference_agent.messages)
    )
    assert without_usage(agent.messages) == without_usage(reference_agent.messages)
    assert without_usage(blank_status(model.calls)) == without_usage(blank_status(reference_model.calls))
    assert without_usage(model.summary_requests) == without_usage(reference_model.summary_requests)
