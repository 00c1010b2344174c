"""``Offload`` builders: names, ``.when()``, and the construction errors users see."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from _cm_conversations import sweep_conversation
from _cm_harness import ContextModel, Impl, before_model_call, texts
from strands import Agent

METHODS = ("truncate", "summarize", "drop")


@pytest.mark.parametrize("method", METHODS)
def test_empty_list_target_is_refused(impl: Impl, method: str) -> None:
    with pytest.raises(ValueError) as error:
        getattr(impl.Offload, method)([])
    assert str(error.value) == "Empty array target matches nothing \u2014 provide at least one target"


@pytest.mark.parametrize(
    ("config", "threshold", "shown"),
    [
        (None, 1_000, "threshold (1000) must be greater than preview_tokens (1000)"),
        (None, 10, "threshold (10) must be greater than preview_tokens (1000)"),
        ({"preview_tokens": 200}, 200, "threshold (200) must be greater than preview_tokens (200)"),
        ({"preview_tokens": 200}, 150.0, "threshold (150.0) must be greater than preview_tokens (200)"),
        ({"preview_tokens": 0}, 0, "threshold (0) must be greater than preview_tokens (0)"),
        ({"preview_tokens": 250.5}, 250, "threshold (250) must be greater than preview_tokens (250.5)"),
        ({"preview_tokens": float("nan")}, 900, "threshold (900) must be greater than preview_tokens (1000)"),
    ],
)
def test_truncate_threshold_must_exceed_the_preview(
    impl: Impl, config: dict[str, Any] | None, threshold: float, shown: str
) -> None:
    strategy = impl.Offload.truncate("tool_results", config)
    with pytest.raises(ValueError) as error:
        strategy.when(threshold=threshold)
    assert str(error.value) == f"{shown} to ensure truncation converges"


@pytest.mark.parametrize(("config", "threshold"), [(None, 1_001), ({"preview_tokens": 200}, 201)])
def test_truncate_threshold_above_the_preview_is_accepted(
    impl: Impl, config: dict[str, Any] | None, threshold: int
) -> None:
    assert impl.Offload.truncate("*", config).when(threshold=threshold).name == "offload:truncate"


def test_strategy_names(impl: Impl) -> None:
    assert impl.Offload.truncate("*").name == "offload:truncate"
    assert impl.Offload.summarize("*").name == "offload:summarize"
    assert impl.Offload.drop("*").name == "offload:drop"
    emergency = impl.module("strategies.offload.truncate").EmergencyTruncateStrategy()
    assert emergency.name == "offload:emergency-truncate"


@pytest.mark.parametrize("method", METHODS)
def test_when_returns_a_new_strategy_of_the_same_kind(impl: Impl, method: str) -> None:
    strategy = getattr(impl.Offload, method)("tool_results")
    conditioned = strategy.when(threshold=5_000, preserve_recent=2)
    assert type(conditioned) is type(strategy)
    assert conditioned is not strategy
    assert type(conditioned.when(utilization=0.5)) is type(strategy)
    assert isinstance(conditioned, impl.public.ContextStrategy)


def test_a_second_when_replaces_the_first(impl: Impl) -> None:
    """Conditions are not merged: the huge threshold of the first call no longer applies."""
    strategy = impl.Offload.drop("tool_results").when(threshold=10**9).when(preserve_recent=1)
    agent = Agent(
        model=ContextModel(),
        messages=sweep_conversation(),
        context_manager=impl.ContextManager(strategies=[strategy]),
        callback_handler=None,
    )
    asyncio.run(before_model_call(agent))
    dropped = [text for text in texts(agent.messages) if text.startswith("[Dropped]")]
    assert dropped == ["[Dropped] [ref: tu1_0]", "[Dropped] [refs: tu3_0, tu3_1]"]
