"""The manager presets are one table (``presets.MANAGER_PRESETS``): the manager and the bench read it."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest
from strands.experimental.context_manager import ContextManager as RefContextManager
from strands_offload.bench import cache_sessions
from strands_offload.bench.prompt_cache import SimClock
from strands_offload.context_manager import ContextManager
from strands_offload.context_manager import context_manager as manager_module
from strands_offload.context_manager.presets import CONTEXT_MANAGER_PRESETS, MANAGER_PRESETS
from strands_offload.context_manager.strategies.hide.tool_specs import HideToolSpecsStrategy
from strands_offload.context_manager.strategies.offload import SummarizeStrategy, TruncateStrategy

# The settings both implementations keep on their strategy objects.
_SHARED = ("_target", "_threshold", "_utilization_threshold", "_preserve_recent")


def _settings(strategy: Any) -> tuple[Any, ...]:
    config = getattr(strategy, "_truncate_config", None)
    return (type(strategy).__name__, *(getattr(strategy, name, None) for name in _SHARED), config)


def _ours(strategy: Any) -> tuple[Any, ...]:
    return (*_settings(strategy), getattr(strategy, "_cache_aware", None), getattr(strategy, "_cache_aligned", None))


def test_every_preset_name_builds_what_its_row_says() -> None:
    assert set(MANAGER_PRESETS) == {"auto", "agentic", "cache-optimized", "tool_registry"}
    for name, preset in MANAGER_PRESETS.items():
        manager = ContextManager.from_strategy(name)
        *chosen, emergency = manager.strategies
        assert emergency.name == "offload:emergency-truncate"
        assert [_ours(s) for s in chosen] == [_ours(s) for s in preset.strategies()], name
        truncate, summarize, *rest = chosen
        assert isinstance(truncate, TruncateStrategy) and isinstance(summarize, SummarizeStrategy)
        assert truncate._threshold == preset.truncate_above and truncate._preview_tokens == preset.preview_tokens
        assert summarize._utilization_threshold == preset.summarize_at
        assert summarize._preserve_recent == preset.preserve_recent
        assert truncate._cache_aware is preset.cache_aware_truncation
        assert summarize._cache_aligned is summarize._cache_aware is preset.cache_aligned_summaries
        assert manager._agentic is preset.agentic
        if preset.hide_tool_specs is None:
            assert rest == []
            assert manager._follows_cache is (preset.cache_aware_truncation or preset.cache_aligned_summaries)
        else:
            (hide,) = rest
            assert isinstance(hide, HideToolSpecsStrategy)


def test_a_preset_builds_new_strategy_objects_each_time() -> None:
    for preset in MANAGER_PRESETS.values():
        first, second = preset.strategies(), preset.strategies()
        assert all(a is not b for a, b in zip(first, second, strict=True))


def test_the_references_presets_build_what_the_reference_builds() -> None:
    for name in CONTEXT_MANAGER_PRESETS:
        reference = RefContextManager.from_strategy(name)  # type: ignore[arg-type]
        assert reference is not None
        ours = ContextManager.from_strategy(name)
        assert [_settings(s) for s in ours.strategies] == [_settings(s) for s in reference._strategies], name
    # "auto" is also what a manager without strategies runs.
    default, auto = ContextManager(), ContextManager.from_strategy("auto")
    assert [_ours(s) for s in default.strategies] == [_ours(s) for s in auto.strategies]


@pytest.mark.parametrize("name", ["cache_optimized", "Auto", "", "proactive_summarization"])
def test_an_unknown_preset_fails_with_the_references_text(name: str) -> None:
    with pytest.raises(ValueError) as reference:
        RefContextManager.from_strategy(name)  # type: ignore[arg-type]
    with pytest.raises(ValueError) as ours:
        ContextManager.from_strategy(name)
    assert str(ours.value) == str(reference.value)


def test_options_pass_through_every_preset() -> None:
    for name in MANAGER_PRESETS:
        assert ContextManager.from_strategy(name, persist_reductions=True)._persist


def test_the_manager_and_the_bench_read_the_table(monkeypatch: pytest.MonkeyPatch) -> None:
    # A changed row changes what both build: neither keeps its own copy of a preset.
    table = dict(MANAGER_PRESETS)
    table["auto"] = replace(table["auto"], truncate_above=1234, preview_tokens=321, summarize_at=0.6)
    table["cache-optimized"] = replace(table["cache-optimized"], summarize_at=0.55, preserve_recent=6)
    monkeypatch.setattr(manager_module, "MANAGER_PRESETS", table)
    monkeypatch.setattr(cache_sessions, "MANAGER_PRESETS", table)
    clock = SimClock()
    truncate, summarize, _emergency = cache_sessions._policy("auto+options", clock).strategies
    assert (truncate._threshold, truncate._preview_tokens, summarize._utilization_threshold) == (1234, 321, 0.6)
    assert summarize._cache_aligned and summarize._cache_aware and not truncate._cache_aware
    optimized = cache_sessions._policy("cache-optimized", clock).strategies
    assert [_ours(s) for s in optimized[:-1]] == [_ours(s) for s in table["cache-optimized"].strategies()]
    assert optimized[1]._utilization_threshold == 0.55 and optimized[1]._preserve_recent == 6
    auto = ContextManager.from_strategy("auto").strategies
    assert auto[0]._threshold == 1234 and ContextManager().strategies[0]._threshold == 1234
