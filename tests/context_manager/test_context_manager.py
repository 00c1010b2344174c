"""ContextManager on a real Agent driven by the scripted model: sessions, overflow recovery, wiring, errors."""

from __future__ import annotations

import asyncio
import functools
from typing import Any

import pytest
import strands.experimental.context_manager as public_reference
from _cm_harness import (
    REFERENCE,
    ContextModel,
    Impl,
    Reply,
    ToolCall,
    fixed_tracking_ids,
    replies,
    texts,
    without_usage,
)
from strands import Agent, tool
from strands.models.model import Model, _estimate_tokens_with_heuristic
from strands.types.exceptions import ContextWindowOverflowException

# --------------------------------------------------------------------------------------------------
# A long session: big logs truncated on arrival, failed deploys dropped at 50 %, history summarized at 70 %

LIMIT = 5_000
ROUNDS = 10


def _log(part: int) -> str:
    return "\n".join(f"part {part} line {i} {'ERROR timeout' if i % 17 == 0 else 'ok'}" for i in range(300))


@tool
def read_log(part: int) -> str:
    """Read one part of the service log.

    Args:
        part: Which part.
    """
    return _log(part)


@tool
def deploy(target: str) -> dict[str, Any]:
    """Deploy the service.

    Args:
        target: Where to.
    """
    return {"status": "error", "content": [{"text": f"deploy to {target} failed\n" + "  at frame\n" * 150}]}


def _session_replies() -> list[Reply]:
    steps: list[Reply] = []
    for part in range(ROUNDS):
        steps.append(Reply("", [ToolCall("read_log", {"part": part}, f"tu_log_{part}")]))
        if part % 2:
            steps.append(Reply("", [ToolCall("deploy", {"target": f"env{part}"}, f"tu_deploy_{part}")]))
        steps.append(Reply(f"part {part} reviewed: " + "note " * 60))
    return steps


@functools.cache
def long_session(impl: Impl) -> tuple[Agent, ContextModel, list[list[str]]]:
    """Run the session once per implementation; returns the agent, its model and the markers after each turn."""
    strategies = [
        impl.Offload.truncate("tool_results", {"preview_tokens": 150}).when(threshold=600),
        impl.Offload.drop("tool_result_errors").when(utilization=0.45),
        impl.Offload.summarize("*").when(utilization=0.6, preserve_recent=4),
    ]
    model = ContextModel(replies(*_session_replies()), context_window_limit=LIMIT, overflow_above=LIMIT)
    agent = Agent(
        model=model,
        tools=[read_log, deploy],
        context_manager=impl.ContextManager(strategies=strategies),
        callback_handler=None,
    )
    markers: list[list[str]] = []
    with fixed_tracking_ids():
        for part in range(ROUNDS):
            agent(f"review part {part}")
            markers.append([text.split("]", 1)[0] + "]" for text in texts(agent.messages) if text.startswith("[")])
    return agent, model, markers


def _first_turn_with(markers: list[list[str]], prefix: str) -> int:
    return next(turn for turn, found in enumerate(markers) if any(m.startswith(prefix) for m in found))


def test_long_session_truncates_drops_and_summarizes_in_turn(impl: Impl) -> None:
    agent, model, markers = long_session(impl)
    # The SDK's own estimate: the one providers without a native counter fall back to.
    assert type(model).count_tokens is Model.count_tokens
    # Truncation acts on arrival, the drop once utilization passes 50 %, the summary once it passes 70 %.
    assert markers[0] == ["[Truncated: 1 block, ~1,447 tokens]"]
    dropped = _first_turn_with(markers, "[Dropped: 2 messages]")
    summarized = _first_turn_with(markers, "[Summarized: ")
    assert 0 < dropped < summarized
    assert len(model.summary_requests) >= 1
    # The provider never saw more than it accepts, and the history stays alternating after the edits.
    assert model.overflows == 0
    assert max(_estimate_tokens_with_heuristic(call) for call in model.calls) < LIMIT
    roles = [message["role"] for message in agent.messages]
    assert all(a != b for a, b in zip(roles, roles[1:], strict=False))
    # Originals of everything offloaded stay in the stash, even for messages summarized away.
    stash = agent.context_manager.stash  # type: ignore[union-attr]
    snapshot = asyncio.run(stash.take_snapshot())
    assert snapshot["tu_log_0_0"] == {"text": _log(0)}
    assert snapshot["tu_deploy_1_0"]["text"].startswith("deploy to env1 failed\n")
    assert not any("tu_log_0" in text for text in texts(agent.messages))


def test_long_session_matches_reference(impl: Impl) -> None:
    """What the model saw at each call, the final history and the summarizer's inputs equal the reference's."""
    agent, model, markers = long_session(impl)
    reference_agent, reference_model, reference_markers = long_session(REFERENCE)
    assert markers == reference_markers
    assert without_usage(model.calls) == without_usage(reference_model.calls)
    assert without_usage(agent.messages) == without_usage(reference_agent.messages)
    assert without_usage(model.summary_requests[0]["messages"]) == without_usage(
        reference_model.summary_requests[0]["messages"]
    )


# --------------------------------------------------------------------------------------------------
# Overflow recovery


def _history(rounds: int, size: int = 6_000) -> list[dict[str, Any]]:
    """A user request, then ``rounds`` tool calls with ``size``-character results, then a follow-up."""
    messages: list[dict[str, Any]] = [{"role": "user", "content": [{"text": "investigate the outage"}]}]
    for turn in range(rounds):
        tool_use_id = f"tu_hist_{turn}"
        messages.append(
            {"role": "assistant", "content": [{"toolUse": {"toolUseId": tool_use_id, "name": "read_log", "input": {}}}]}
        )
        text = (f"turn {turn} " * (size // 7 + 1))[:size]
        result = {"toolUseId": tool_use_id, "status": "success", "content": [{"text": text}]}
        messages.append({"role": "user", "content": [{"toolResult": result}]})
        messages.append({"role": "assistant", "content": [{"text": f"turn {turn} checked"}]})
        messages.append({"role": "user", "content": [{"text": "go on"}]})
    for index, message in enumerate(messages):
        message["tracking_id"] = f"h{index}"
    return messages


def _overflow_agent(impl: Impl, model: ContextModel, strategies: list[Any], rounds: int = 6) -> Agent:
    return Agent(
        model=model,
        messages=_history(rounds),
        tools=[read_log],
        context_manager=impl.ContextManager(strategies=strategies),
        callback_handler=None,
    )


def test_overflow_is_recovered_by_a_user_strategy(impl: Impl) -> None:
    # Utilization stays far below 0.95 of the configured window: the strategy acts only on overflow.
    model = ContextModel(replies(Reply("recovered")), context_window_limit=200_000, overflow_above=4_000)
    strategy = impl.Offload.truncate("tool_results", {"preview_tokens": 100}).when(utilization=0.95)
    agent = _overflow_agent(impl, model, [strategy])
    result = agent("and now?")
    assert str(result).strip() == "recovered"
    assert model.overflows == 1
    assert len(model.calls) == 2
    assert len(model.calls[0]) == 26 and len(model.calls[1]) < 26
    assert any(text.endswith(" messages elided ...]") for text in texts(model.calls[1]))


def test_overflow_is_recovered_by_repeated_emergency_truncation(impl: Impl) -> None:
    """With no user strategy, each overflow cuts the oldest fifth until the provider accepts the input."""
    model = ContextModel(replies(Reply("recovered")), context_window_limit=200_000, overflow_above=6_000)
    agent = _overflow_agent(impl, model, [])
    assert str(agent("and now?")).strip() == "recovered"
    assert model.overflows == 2
    sizes = [len(call) for call in model.calls]
    assert sizes[0] > sizes[1] > sizes[2]
    assert model.calls[-1][0]["content"] == _history(6)[0]["content"]  # the first message is never cut


def test_overflow_retries_stop_after_three(impl: Impl) -> None:
    model = ContextModel(replies(Reply("never")), context_window_limit=200_000, overflow_first=99)
    agent = _overflow_agent(impl, model, [])
    with pytest.raises(ContextWindowOverflowException):
        agent("and now?")
    assert len(model.calls) == 4  # the call and three retries, each after the history was cut
    assert len({len(call) for call in model.calls}) == 4


def test_overflow_retry_budget_is_renewed_after_a_successful_call(impl: Impl) -> None:
    # Calls 1-3 overflow, 4 succeeds (a tool call), 5-7 overflow, 8 succeeds: only with a fresh budget.
    script = replies(Reply("", [ToolCall("read_log", {"part": 1}, "tu_again")]), Reply("finished"))
    model = ContextModel(script, context_window_limit=200_000, overflow_calls={1, 2, 3, 5, 6, 7})
    agent = _overflow_agent(impl, model, [], rounds=12)
    assert str(agent("and now?")).strip() == "finished"
    assert len(model.calls) == 8


def test_overflow_without_room_to_make_is_not_retried(impl: Impl) -> None:
    model = ContextModel(replies(Reply("never")), context_window_limit=200_000, overflow_first=99)
    agent = Agent(
        model=model,
        messages=[{"role": "user", "content": [{"text": "hello"}]}],
        context_manager=impl.ContextManager(strategies=[]),
        callback_handler=None,
    )
    with pytest.raises(ContextWindowOverflowException):
        agent("again")
    assert len(model.calls) == 1


def test_overflow_recovery_matches_reference(impl: Impl) -> None:
    def run(which: Impl) -> tuple[str, str]:
        model = ContextModel(replies(Reply("recovered")), context_window_limit=200_000, overflow_above=6_000)
        strategies = [which.Offload.summarize("tool_results").when(utilization=0.99, preserve_recent=2)]
        agent = _overflow_agent(which, model, strategies)
        with fixed_tracking_ids():
            agent("and now?")
        return without_usage(model.calls), without_usage(agent.messages)

    assert run(impl) == run(REFERENCE)


# --------------------------------------------------------------------------------------------------
# Wiring into the Agent and the checks it makes


def test_manager_is_the_agents_and_a_reference_context_manager(impl: Impl) -> None:
    manager = impl.ContextManager()
    agent = Agent(model=ContextModel(), context_manager=manager, callback_handler=None)
    assert agent.context_manager is manager
    assert isinstance(manager, public_reference.ContextManager)
    assert manager.name == "strands:context-manager"
    assert agent.tool_names == ["retrieve_context"]


@pytest.mark.parametrize(
    ("stash", "tools", "has_stash"),
    [(None, ["retrieve_context"], True), (False, [], False), ({"retrieval_tool": False}, [], True)],
)
def test_stash_settings_decide_stash_and_tool(impl: Impl, stash: Any, tools: list[str], has_stash: bool) -> None:
    manager = impl.ContextManager(stash=stash)
    assert manager.stash is None and manager.stash_is_durable is False  # nothing before init
    agent = Agent(model=ContextModel(), context_manager=manager, callback_handler=None)
    assert agent.tool_names == tools
    assert (manager.stash is not None) is has_stash
    assert manager.stash_is_durable is False  # in memory


def test_from_strategy_resolves_every_accepted_value(impl: Impl) -> None:
    cls = impl.ContextManager
    assert cls.from_strategy(None) is None
    assert cls.from_strategy(False) is None
    manager = cls()
    assert cls.from_strategy(manager) is manager
    assert type(cls.from_strategy("auto")) is cls
    assert type(cls.from_strategy("agentic")) is cls
    configured = cls.from_strategy({"strategies": [], "stash": False})
    assert type(configured) is cls
    Agent(model=ContextModel(), context_manager=configured, callback_handler=None)
    assert configured.stash is None


def test_unknown_preset_is_refused(impl: Impl) -> None:
    with pytest.raises(ValueError) as error:
        impl.ContextManager.from_strategy("aggressive")
    assert str(error.value) == "Unknown context_manager preset: \"aggressive\". Valid presets: 'auto', 'agentic'"


@pytest.mark.parametrize("value", [42, ["auto"], 0.5])
def test_unsupported_value_is_refused(impl: Impl, value: Any) -> None:
    with pytest.raises(ValueError) as error:
        impl.ContextManager.from_strategy(value)
    assert str(error.value) == (
        f"Unsupported context_manager value: {value!r}. "
        "Supported: 'auto', 'agentic', ContextManagerConfig dict, ContextManager instance, or False"
    )


def test_config_with_an_unknown_key_is_refused(impl: Impl) -> None:
    with pytest.raises(TypeError):
        impl.ContextManager.from_strategy({"strategy": []})


def test_context_manager_in_plugins_is_refused(impl: Impl) -> None:
    with pytest.raises(ValueError) as error:
        Agent(model=ContextModel(), plugins=[impl.ContextManager()], callback_handler=None)
    assert str(error.value) == (
        "A ContextManager was passed via plugins; pass it through the context_manager parameter instead "
        "so session persistence can detect it"
    )


@pytest.mark.parametrize("which", ["instance", "agentic"])
def test_stateful_model_is_refused(impl: Impl, which: str) -> None:
    manager = impl.ContextManager() if which == "instance" else impl.agentic()
    with pytest.raises(ValueError) as error:
        Agent(model=ContextModel(stateful=True), context_manager=manager, callback_handler=None)
    assert str(error.value) == (
        "context_manager and conversation_manager cannot be used with a stateful model. "
        "The model manages conversation state server-side."
    )
    # Without a context manager the same model is accepted.
    Agent(model=ContextModel(stateful=True), context_manager=False, callback_handler=None)
