"""Presets: the ``"auto"`` manager and the strategy preset names, on a real Agent."""

from __future__ import annotations

import functools
from typing import Any

import pytest
from _cm_conversations import PipelineCase, assert_same_outcome, run_case, sweep_conversation, tool_result, tool_use
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

PRESET_NAMES = ("proactive_summarization", "large_tool_offloading", "overflow_protection", "stale_tool_cleanup")
REPORT = "".join(f"row {i:05d} status=ok latency={i % 97}ms\n" for i in range(400))  # 13,150 chars


@tool
def fetch_report(day: int) -> str:
    """Fetch one day's report.

    Args:
        day: Which day.
    """
    return REPORT


def test_strategy_preset_names(impl: Impl) -> None:
    assert impl.public.STRATEGY_PRESET_NAMES == PRESET_NAMES
    assert impl.public.StrategyPresetName is str


def test_unknown_strategy_preset_is_refused(impl: Impl) -> None:
    with pytest.raises(ValueError) as error:
        impl.ContextManager(strategies=["large_tool_offloading", "tidy_up"])
    assert str(error.value) == (
        'Unknown strategy preset: "tidy_up". Valid presets: '
        "proactive_summarization, large_tool_offloading, overflow_protection, stale_tool_cleanup"
    )


def _preset_case(strategies: list[Any]) -> PipelineCase:
    """The sweep conversation plus five more tool rounds, so that every preset finds something to do."""
    messages = sweep_conversation()
    for turn in range(5):
        messages.append({"role": "assistant", "content": [tool_use(f"tu_more_{turn}", "read_file")]})
        text = "ok\n" * (50 if turn else 5_000)  # one result over the 2,500-token preset threshold
        messages.append({"role": "user", "content": [tool_result(f"tu_more_{turn}", "success", {"text": text})]})
    messages.append({"role": "user", "content": [{"text": "summing up?"}]})
    for index, message in enumerate(messages):
        message["tracking_id"] = f"p{index}"
    return PipelineCase(
        history=messages[:10],
        arrivals=messages[10:],
        strategies=strategies,
        context_window_limit=60_000,
        overflow_rounds=1,
        storage="sdk",
    )


@pytest.mark.parametrize("preset", PRESET_NAMES)
def test_strategy_preset_matches_reference(impl: Impl, preset: str) -> None:
    """Each name, given as it is among strategies, acts as the reference's expansion does."""
    expected = run_case(REFERENCE, _preset_case([preset]))
    assert expected.messages != run_case(REFERENCE, _preset_case([])).messages  # the preset acted
    assert_same_outcome(expected, run_case(impl, _preset_case([preset])))


# --------------------------------------------------------------------------------------------------
# "auto": results over 1,500 tokens cut to 750-token previews, history summarized at 85 % utilization


def _auto_replies() -> list[Reply]:
    steps: list[Reply] = []
    for day in range(8):
        steps.append(Reply("", [ToolCall("fetch_report", {"day": day}, f"tu_day_{day}")]))
        steps.append(Reply(f"day {day}: " + "all rows ok " * 40))
    return steps


@functools.cache
def auto_session(impl: Impl) -> tuple[Agent, ContextModel]:
    model = ContextModel(replies(*_auto_replies()), context_window_limit=8_000)
    agent = Agent(model=model, tools=[fetch_report], context_manager=impl.auto(), callback_handler=None)
    with fixed_tracking_ids():
        for day in range(8):
            agent(f"check day {day}")
    return agent, model


def test_auto_preset_previews_large_results_and_summarizes(impl: Impl) -> None:
    agent, model = auto_session(impl)
    found = texts(agent.messages)
    preview = next(text for text in found if text.startswith("[Truncated: "))
    head, rest = preview.removeprefix(f"[Truncated: 1 block, ~{-(-len(REPORT) // 4):,} tokens]\n\n").split(
        "\n\n[... ", 1
    )
    assert head == REPORT[:1_800]  # 750 tokens x 4 chars x 60 % head
    assert rest.startswith(f"{len(REPORT) - 3_000:,} chars elided ...]\n\n{REPORT[-1_200:]}\n\n[Stashed] [ref: tu_day_")
    assert any(text.startswith("[Summarized: ") for text in found)
    assert model.summary_requests


def test_auto_preset_matches_reference(impl: Impl) -> None:
    agent, model = auto_session(impl)
    reference_agent, reference_model = auto_session(REFERENCE)
    assert without_usage(model.calls) == without_usage(reference_model.calls)
    assert without_usage(agent.messages) == without_usage(reference_agent.messages)


def test_auto_from_strategy_is_the_default_pipeline(impl: Impl) -> None:
    """``from_strategy("auto")`` and ``ContextManager()`` build the same pipeline."""

    def run(manager: Any) -> str:
        model = ContextModel(replies(*_auto_replies()), context_window_limit=8_000)
        agent = Agent(model=model, tools=[fetch_report], context_manager=manager, callback_handler=None)
        with fixed_tracking_ids():
            for day in range(3):
                agent(f"check day {day}")
        return without_usage(agent.messages)

    assert run(impl.ContextManager.from_strategy("auto")) == run(impl.ContextManager())
