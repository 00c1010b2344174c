"""The "cache-optimized" preset: what it builds, where the reference refuses it, and that it pays."""

from __future__ import annotations

import random
from typing import Any

import pytest
from strands import Agent, tool
from strands.experimental.context_manager import ContextManager as RefContextManager
from strands.models.model import CacheConfig
from strands_offload.bench.prompt_cache import PromptCache, SimClock
from strands_offload.bench.stub_clients import Reply, bedrock_model, summary_request
from strands_offload.context_manager import ContextManager
from strands_offload.context_manager.context_manager import CONTEXT_MANAGER_PRESETS
from strands_offload.context_manager.strategies.offload import SummarizeStrategy, TruncateStrategy


def test_the_preset_keeps_autos_previews_and_turns_the_cache_options_on() -> None:
    manager = ContextManager.from_strategy("cache-optimized")
    truncate, summarize, emergency = manager.strategies
    assert isinstance(truncate, TruncateStrategy) and isinstance(summarize, SummarizeStrategy)
    assert emergency.name == "offload:emergency-truncate"
    assert truncate._preview_tokens == 750 and truncate._threshold == 1500
    assert truncate._cache_aware and summarize._cache_aware and summarize._cache_aligned
    assert summarize._utilization_threshold == 0.7 and summarize._preserve_recent == 4
    assert manager._follows_cache
    # Our keyword options pass through, as for the other presets.
    assert ContextManager.from_strategy("cache-optimized", persist_reductions=True)._persist


def test_the_reference_does_not_know_the_name() -> None:
    assert CONTEXT_MANAGER_PRESETS == ("auto", "agentic")
    with pytest.raises(ValueError, match='Unknown context_manager preset: "cache-optimized"'):
        Agent(context_manager="cache-optimized", callback_handler=None)
    agent = Agent(context_manager=ContextManager.from_strategy("cache-optimized"), callback_handler=None)
    assert isinstance(agent.context_manager, ContextManager)


def test_without_the_options_nothing_follows_the_cache() -> None:
    assert not ContextManager()._follows_cache
    assert not ContextManager.from_strategy("agentic")._follows_cache


@tool
def fetch(part: int) -> str:
    """Fetch one part of a report.

    Args:
        part: Which part.
    """
    rng = random.Random(part)
    return " ".join(rng.choice(["alpha", "beta", "gamma", "delta"]) for _ in range(rng.randint(300, 1200)))


def _billed(build: Any) -> tuple[float, int]:
    clock = SimClock()
    manager = build(clock)  # ours reads the simulated clock
    cache = PromptCache(clock)
    turn = {"n": 0}

    def respond(request: dict[str, Any]) -> Reply:
        clock.advance(5)
        last = request["messages"][-1]["content"]
        if summary_request(request) is not None:
            return Reply([{"text": "summary " * 60}], label="summary")
        if any("toolResult" in block for block in last):
            return Reply([{"text": "noted " * 80}])
        turn["n"] += 1
        return Reply([{"toolUse": {"toolUseId": f"t{turn['n']}", "name": "fetch", "input": {"part": turn["n"]}}}])

    model = bedrock_model(cache, respond, cache_config=CacheConfig(strategy="auto"), context_window_limit=16_000)
    agent = Agent(model=model, tools=[fetch], context_manager=manager, callback_handler=None)
    largest = 0
    for number in range(30):
        agent(f"part {number}, please: " + "context " * 40)
        clock.advance(20)
    for request in model.client.requests:
        largest = max(largest, len(str(request["messages"])))
    assert sum(1 for call in cache.calls if call.label == "summary") >= 2
    return cache.billed(), largest


def test_the_preset_bills_less_than_the_references_auto_with_no_larger_context() -> None:
    auto, auto_largest = _billed(lambda clock: RefContextManager.from_strategy("auto"))
    preset, preset_largest = _billed(lambda clock: ContextManager.from_strategy("cache-optimized", clock=clock))
    assert preset < 0.85 * auto
    assert preset_largest <= auto_largest
