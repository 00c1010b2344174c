"""``persist_reductions`` and guardrail redactions: what a guardrail removed stays removed (issue 36, item 1).

When a model's guardrail intervenes, strands redacts the latest message in place (a tool result's
``content`` is replaced, a user text message's content list is replaced) and the session manager
rewrites that log message with the live one. A restored agent must then hold the redacted content
where the log was redacted, with no ``[ref: ...]`` to the original left in its messages: at the
end of the invocation and at every sync point during it. Each case runs a real Agent on
``FileSessionManager`` and on ``S3SessionManager`` (moto over HTTP), with an in-memory and a
durable stash.
"""

from __future__ import annotations

import asyncio
import copy
from collections.abc import AsyncIterable, Callable
from pathlib import Path
from typing import Any

import pytest
from _cm_harness import ContextModel, Reply, ToolCall, encode_for_compare, replies
from _s3_support import session_agent, session_managers
from strands import Agent, tool
from strands.hooks.events import MessageAddedEvent
from strands.types.content import Messages
from strands.types.streaming import StreamEvent
from strands_offload.context_manager import ContextManager, Offload
from strands_offload.context_manager._persist import RECIPE_KEY
from strands_offload.storage import LocalFileStorage

REDACTED = "[User input redacted.]"
SECRET = "SECRET-4711"


@tool
def read_records(part: int) -> str:
    """Read one part of the customer records."""
    return "\n".join(f"record {i} of part {part}: card {SECRET}-{i:04d} ok" for i in range(300))


class GuardrailModel(ContextModel):
    """A ContextModel whose agent-loop calls numbered in ``intervene_on`` meet a guardrail.

    Such a call streams what Bedrock streams when an input guardrail blocks: a refusal text, the
    stop reason ``guardrail_intervened``, then ``redactContent`` with the message that replaces
    the user's input (before the usage metadata).
    """

    def __init__(self, script: Any, intervene_on: set[int]) -> None:
        super().__init__(script, context_window_limit=200_000)
        self.intervene_on = intervene_on

    async def stream(self, messages: Messages, *args: Any, **kwargs: Any) -> AsyncIterable[StreamEvent]:
        if len(self.calls) + 1 not in self.intervene_on or not kwargs.get("tool_specs", args[0] if args else None):
            async for event in super().stream(messages, *args, **kwargs):
                yield event
            return
        self.calls.append(copy.deepcopy(messages))
        yield {"messageStart": {"role": "assistant"}}
        yield {"contentBlockStart": {"start": {}}}
        yield {"contentBlockDelta": {"delta": {"text": "Sorry, I cannot help with that."}}}
        yield {"contentBlockStop": {}}
        yield {"messageStop": {"stopReason": "guardrail_intervened"}}
        yield {"redactContent": {"redactUserContentMessage": REDACTED}}
        yield {
            "metadata": {
                "usage": {"inputTokens": 10, "outputTokens": 8, "totalTokens": 18},
                "metrics": {"latencyMs": 1},
            }
        }


@pytest.fixture(params=["file", "s3"])
def sessions(request: pytest.FixtureRequest, tmp_path: Path) -> Callable[[str], Any]:
    """Makes session managers of one kind for a session id (each call a fresh manager)."""
    return session_managers(request, tmp_path)


@pytest.fixture(params=["memory-stash", "durable-stash"])
def stash_dir(request: pytest.FixtureRequest, tmp_path: Path) -> Path | None:
    return tmp_path / "stash" if request.param == "durable-stash" else None


def _manager(strategies: list[Any], stash_dir: Path | None) -> ContextManager:
    stash: Any = {"storage": LocalFileStorage(str(stash_dir))} if stash_dir is not None else None
    return ContextManager(strategies=strategies, stash=stash, persist_reductions=True)


def _tool_results_truncated() -> list[Any]:
    return [Offload.truncate("tool_results", {"preview_tokens": 200}).when(threshold=1000)]


def _user_text_truncated() -> list[Any]:
    return [Offload.truncate("user_text", {"preview_tokens": 200}).when(threshold=1000)]


def _agent(manager: Any, model: ContextModel, session: Any) -> Agent:
    return session_agent(model, [read_records], manager, session)


def _leaks(messages: Any) -> list[str]:
    """What of the redacted content, or a way back to it, is left in ``messages``."""
    text = encode_for_compare(messages)
    return [needle for needle in (SECRET, "[ref: ", "[refs: ", "[Stashed]") if needle in text]


def _restore(sessions: Callable[[str], Any], session_id: str, strategies: list[Any], stash_dir: Path | None) -> Agent:
    return _agent(_manager(strategies, stash_dir), ContextModel(replies()), sessions(session_id))


def _check_every_sync(
    live: Agent,
    sessions: Callable[[str], Any],
    session_id: str,
    strategies: Callable[[], list[Any]],
    stash_dir: Path | None,
) -> list[list[str]]:
    """After each message the session manager stores (and syncs), restore the session and collect leaks.

    Only redacted messages count: before the guardrail intervenes the secret is in the log anyway.
    """
    found: list[list[str]] = []

    def after_sync(event: MessageAddedEvent) -> None:
        if not any(REDACTED in encode_for_compare(m) for m in event.agent.messages):
            return
        restored = _restore(sessions, session_id, strategies(), stash_dir)
        redacted = [m for m in restored.messages if REDACTED in encode_for_compare(m)]
        found.append(_leaks(redacted))

    live.hooks.add_callback(MessageAddedEvent, after_sync)  # after the session manager's append and sync
    return found


def test_a_redacted_tool_result_stays_redacted(sessions: Callable[[str], Any], stash_dir: Path | None) -> None:
    session_id = "guarded-tool"
    script = replies(Reply("", [ToolCall("read_records", {"part": 1}, "tu_records")]))
    model = GuardrailModel(script, intervene_on={2})
    live = _agent(_manager(_tool_results_truncated(), stash_dir), model, sessions(session_id))
    at_syncs = _check_every_sync(live, sessions, session_id, _tool_results_truncated, stash_dir)
    live("show me the customer records")

    # The preview truncated on arrival was redacted in place, and the log message rewritten.
    result = next(b["toolResult"] for m in live.messages for b in m["content"] if "toolResult" in b)
    assert result["content"] == [{"text": REDACTED}]
    assert at_syncs and all(leaks == [] for leaks in at_syncs), at_syncs

    restored = _restore(sessions, session_id, _tool_results_truncated(), stash_dir)
    assert encode_for_compare(restored.messages) == encode_for_compare(live.messages)
    assert _leaks(restored.messages) == []
    # The recipe itself keeps no copy of the redacted preview either.
    assert SECRET not in encode_for_compare(live.state.get(RECIPE_KEY))

    # The stash still holds the original under its key, as the reference's does (README).
    if stash_dir is not None:
        original = asyncio.run(restored.context_manager.stash.retrieve("tu_records_0"))  # type: ignore[union-attr]
        assert SECRET in str(original)

    # The restored agent goes on from the redacted conversation.
    restored("and now?")
    again = _restore(sessions, session_id, _tool_results_truncated(), stash_dir)
    assert encode_for_compare(again.messages) == encode_for_compare(restored.messages)
    assert _leaks(again.messages[: len(live.messages)]) == []


def test_a_redacted_user_text_we_truncated_stays_redacted(
    sessions: Callable[[str], Any], stash_dir: Path | None
) -> None:
    session_id = "guarded-text"
    model = GuardrailModel(replies(), intervene_on={2})
    live = _agent(_manager(_user_text_truncated(), stash_dir), model, sessions(session_id))
    live("hello")  # call 1: a plain answer
    at_syncs = _check_every_sync(live, sessions, session_id, _user_text_truncated, stash_dir)
    prompt = "please check these records:\n" + read_records(part=2)
    live(prompt)  # truncated on arrival, then redacted by the guardrail on call 2

    assert live.messages[2]["content"] == [{"text": REDACTED}]
    assert at_syncs and all(leaks == [] for leaks in at_syncs), at_syncs
    restored = _restore(sessions, session_id, _user_text_truncated(), stash_dir)
    assert encode_for_compare(restored.messages) == encode_for_compare(live.messages)
    assert _leaks(restored.messages) == []
    assert SECRET not in encode_for_compare(live.state.get(RECIPE_KEY))


def test_a_block_a_tool_rewrote_in_place_is_restored_as_rewritten(
    sessions: Callable[[str], Any], stash_dir: Path | None
) -> None:
    """A tool that redacts an earlier result in place: the log still holds the original, the recipe does not."""
    session_id = "tool-redacts"

    @tool
    def forget_records() -> str:
        """Remove the customer records from the conversation."""
        for message in live.messages:
            for block in message["content"]:
                if "toolResult" in block and block["toolResult"]["toolUseId"] == "tu_records":
                    block["toolResult"]["content"][0]["text"] = "[removed by forget_records]"
        return "done"

    script = replies(
        Reply("", [ToolCall("read_records", {"part": 1}, "tu_records")]),
        Reply("", [ToolCall("forget_records", {}, "tu_forget")]),
    )
    live = Agent(
        model=ContextModel(script),
        tools=[read_records, forget_records],
        context_manager=_manager([], stash_dir),  # nothing truncated: the result is kept whole, by identity
        session_manager=sessions(session_id),
        agent_id="main",
        callback_handler=None,
    )
    live("show me the records, then forget them")
    assert SECRET not in encode_for_compare(live.messages)
    restored = Agent(
        model=ContextModel(replies()),
        tools=[read_records, forget_records],
        context_manager=_manager([], stash_dir),
        session_manager=sessions(session_id),
        agent_id="main",
        callback_handler=None,
    )
    assert encode_for_compare(restored.messages) == encode_for_compare(live.messages)
