"""The strategy pipeline against the reference: same conversation, strategies and model in, same bytes out.

Each case runs on a real Agent driven through its hook registry (history given to the Agent,
later messages announced with ``MessageAddedEvent``, ``BeforeModelCallEvent`` before each model
call, ``AfterModelCallEvent`` carrying a context overflow), once on the reference and once on the
implementation under test. Compared: the messages, the stash (decoded snapshot and, when the
Agent owns the storage, every stored byte), ``retrieve_context`` outputs, what the summarizer was
sent, and the overflow retry decisions. Storage failures are left out on purpose (ours differs).
"""

from __future__ import annotations

import functools
from typing import Any

import pytest
from _cm_conversations import (
    RETRIEVALS,
    TARGETS,
    Outcome,
    PipelineCase,
    StrategySpec,
    assert_same_outcome,
    pipeline_cases,
    run_case,
    sweep_conversation,
)
from _cm_harness import REFERENCE, Impl
from hypothesis import HealthCheck, Phase, given, settings


def _examples(count: int) -> settings:
    # Generated cases are large by hypothesis' standards (tens of KB of text per conversation), and
    # shrinking one takes minutes on a small box; the failure message names the first differing path.
    return settings(
        max_examples=count,
        deadline=None,
        phases=(Phase.explicit, Phase.reuse, Phase.generate),
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
    )


@_examples(25)
@given(case=pipeline_cases(kind="threshold"))
def test_threshold_strategies_match_reference(impl: Impl, case: PipelineCase) -> None:
    """Per-block strategies that also act eagerly on arrival."""
    assert_same_outcome(run_case(REFERENCE, case), run_case(impl, case))


@_examples(20)
@given(case=pipeline_cases(kind="preserve"))
def test_preserve_recent_strategies_match_reference(impl: Impl, case: PipelineCase) -> None:
    """Per-block strategies limited to the oldest matches, acting only at model calls."""
    assert_same_outcome(run_case(REFERENCE, case), run_case(impl, case))


@_examples(30)
@given(case=pipeline_cases(kind="utilization"))
def test_utilization_strategies_match_reference(impl: Impl, case: PipelineCase) -> None:
    """Message-level removal, summaries and markers, emergency truncation, overflow retries."""
    assert_same_outcome(run_case(REFERENCE, case), run_case(impl, case))


@_examples(30)
@given(case=pipeline_cases())
def test_mixed_pipelines_match_reference(impl: Impl, case: PipelineCase) -> None:
    """Up to three strategies of any kind in one pipeline, stash on, off or without its tool."""
    assert_same_outcome(run_case(REFERENCE, case), run_case(impl, case))


# --------------------------------------------------------------------------------------------------
# A deterministic sweep: every method, every target, every kind of condition, on one conversation

WHENS: dict[str, dict[str, Any] | None] = {
    "always": None,
    "threshold": {"threshold": 1_300},
    "preserve_ratio": {"threshold": 1_300, "preserve_recent": 0.5},
    "utilization": {"utilization": 0.5},
    "utilization_all": {"utilization": 0.5, "threshold": 1_300, "preserve_recent": 2},
}
CONFIGS: dict[str, dict[str, Any] | None] = {"truncate": {"preview_tokens": 100}, "summarize": None, "drop": None}


@functools.cache
def _sweep_messages() -> list[dict[str, Any]]:
    return sweep_conversation()  # runs copy it, so one instance serves every case


def _sweep_case(method: str, target: Any, when: dict[str, Any] | None, overflow_rounds: int = 1) -> PipelineCase:
    messages = _sweep_messages()
    return PipelineCase(
        history=messages[:10],
        arrivals=messages[10:],
        strategies=[StrategySpec(method, target, CONFIGS[method], when)],
        context_window_limit=60_000,
        overflow_rounds=overflow_rounds,
        retrievals=RETRIEVALS[:4],
        storage="sdk",
    )


@functools.cache
def _reference_sweep(method: str, target_index: int, when: str) -> Outcome:
    return run_case(REFERENCE, _sweep_case(method, TARGETS[target_index], WHENS[when]))


@pytest.mark.parametrize("when", list(WHENS))
@pytest.mark.parametrize("target_index", range(len(TARGETS)), ids=[str(t) for t in TARGETS])
@pytest.mark.parametrize("method", ["truncate", "summarize", "drop"])
def test_every_method_target_and_condition_matches_reference(
    impl: Impl, method: str, target_index: int, when: str
) -> None:
    """Each case ends with one overflow, so the emergency truncation and the retry decision run too."""
    case = _sweep_case(method, TARGETS[target_index], WHENS[when])
    assert_same_outcome(_reference_sweep(method, target_index, when), run_case(impl, case))


@pytest.mark.parametrize(
    ("method", "when", "markers"),
    [
        # Per block: previews, drop markers and summaries carry the refs of the stashed originals.
        ("truncate", "threshold", ["[Truncated: 1 block, ~", "[Stashed] [ref: tu1_0]", "[Stashed] [ref: m9_0]"]),
        ("drop", "threshold", ["[Dropped] [ref: tu1_0]", "[Dropped] [ref: m0_0]"]),
        ("summarize", "threshold", ["[Summarized: tool result, ~3,", "[Summarized: text block, ~"]),
        # Message level: whole messages go, one marker takes their place.
        ("drop", "utilization", ["[Dropped: "]),
        ("truncate", "utilization", [" messages elided ...]"]),
        ("summarize", "utilization", ["[Summarized: ", " messages, ~"]),
    ],
)
def test_sweep_cases_act(impl: Impl, method: str, when: str, markers: list[str]) -> None:
    """The sweep exercises the strategies, it does not compare two untouched conversations."""
    outcome = run_case(impl, _sweep_case(method, "*", WHENS[when], overflow_rounds=0))
    assert outcome.error is None
    for marker in markers:
        assert marker in outcome.messages
