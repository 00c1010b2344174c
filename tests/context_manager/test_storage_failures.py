"""A deliberate difference: a block whose original cannot be stashed stays in the context as it was.

The reference logs the failed write and offloads anyway, leaving a reference to nothing. Ours keeps
the block unchanged and logs why. The differential tests leave storage failures out for this reason.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any

import pytest
import strands.storage as sdk_storage
from _cm_harness import (
    OURS_ONLY,
    REFERENCE,
    ContextModel,
    Impl,
    Reply,
    ToolCall,
    before_model_call,
    replies,
    tool_results,
)
from strands import Agent, tool
from strands.types.exceptions import StorageError

LOG = "".join(f"{i:05d} worker heartbeat ok\n" for i in range(2_000))


class RefusingStorage(sdk_storage.InMemoryStorage):
    """Reads and lists like memory; every write fails, as a full disk or a revoked bucket policy would."""

    def __init__(self) -> None:
        super().__init__()
        self.refused = 0

    async def write(self, key: str, data: bytes) -> None:
        self.refused += 1
        raise StorageError(f"write refused: {key}")


@tool
def read_log() -> str:
    """Read the worker log."""
    return LOG


def _eager_session(impl: Impl) -> tuple[Agent, ContextModel, RefusingStorage]:
    storage = RefusingStorage()
    strategy = impl.Offload.truncate("tool_results", {"preview_tokens": 100}).when(threshold=400)
    model = ContextModel(replies(Reply("", [ToolCall("read_log", {}, "tu_log")]), Reply("all healthy")))
    agent = Agent(
        model=model,
        tools=[read_log],
        context_manager=impl.ContextManager(strategies=[strategy], stash={"storage": storage}),
        callback_handler=None,
    )
    agent("are the workers healthy?")
    return agent, model, storage


def _warnings_about(caplog: pytest.LogCaptureFixture, what: str) -> list[str]:
    return [
        record.getMessage()
        for record in caplog.records
        if record.name.startswith("strands_offload.context_manager")
        and record.levelno >= logging.WARNING
        and what in record.getMessage()
    ]


@pytest.mark.parametrize("impl", OURS_ONLY)
def test_result_is_kept_whole_when_its_original_cannot_be_stashed(impl: Impl, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.WARNING)
    agent, model, storage = _eager_session(impl)
    assert storage.refused > 0
    assert tool_results(agent.messages)[0]["content"] == [{"text": LOG}]
    # The model got the whole result too, not a preview pointing at nothing.
    sent = [r for call in model.calls for r in tool_results(call)]
    assert sent and all(r["content"] == [{"text": LOG}] for r in sent)
    assert _warnings_about(caplog, "tu_log")


@pytest.mark.parametrize("impl", OURS_ONLY)
@pytest.mark.parametrize(
    ("target", "when"),
    [("tool_results", {"preserve_recent": 1}), ("*", {"threshold": 400}), ("*", {"utilization": 0.0})],
    ids=["per-block-oldest", "per-block-threshold", "message-level"],
)
def test_history_is_kept_when_originals_cannot_be_stashed(
    impl: Impl, target: str, when: dict[str, Any], caplog: pytest.LogCaptureFixture
) -> None:
    """At a model call (backfill failed too): nothing that would need a stashed original is replaced."""
    caplog.set_level(logging.WARNING)
    history: list[dict[str, Any]] = [
        {"role": "user", "content": [{"text": "check the workers"}], "tracking_id": "f0"},
        {
            "role": "assistant",
            "content": [{"toolUse": {"toolUseId": "tu_old", "name": "read_log", "input": {}}}],
            "tracking_id": "f1",
        },
        {
            "role": "user",
            "content": [{"toolResult": {"toolUseId": "tu_old", "status": "success", "content": [{"text": LOG}]}}],
            "tracking_id": "f2",
        },
        {"role": "assistant", "content": [{"text": LOG}], "tracking_id": "f3"},
        {"role": "user", "content": [{"text": "and now?"}], "tracking_id": "f4"},
    ]
    strategy = impl.Offload.truncate(target, {"preview_tokens": 100}).when(**when)
    agent = Agent(
        model=ContextModel(),
        messages=[dict(m) for m in history],
        context_manager=impl.ContextManager(strategies=[strategy], stash={"storage": RefusingStorage()}),
        callback_handler=None,
    )
    asyncio.run(before_model_call(agent))
    if "utilization" in when:
        # Whole messages removed with an elision marker need no stashed original: that still happens.
        assert any("elided" in block.get("text", "") for m in agent.messages for block in m["content"])
    else:
        assert agent.messages == history
        assert _warnings_about(caplog, "tu_old")


def test_reference_offloads_despite_a_failed_stash_write() -> None:
    """What ours deliberately does not do: a preview whose reference leads nowhere."""
    agent, _, storage = _eager_session(REFERENCE)
    text = tool_results(agent.messages)[0]["content"][0]["text"]
    assert text.startswith("[Truncated: ") and text.endswith("[Stashed] [ref: tu_log_0]")
    assert asyncio.run(agent.context_manager.stash.retrieve("tu_log_0")) is None  # type: ignore[union-attr]
    assert storage.refused > 0
