"""Metric names and ``Savings`` fields are written once (``telemetry.SAVINGS_METRICS``), and each field's
figure is what its metric reports."""

from __future__ import annotations

import ast
from dataclasses import fields
from pathlib import Path

import pytest
import strands_offload._ledger
from _telemetry_support import Telemetry
from strands_offload._ledger import Ledger, ToolCall, now_ns
from strands_offload.telemetry import METRICS, SAVINGS_METRICS, Savings


def test_every_savings_field_is_reported_by_a_metric_of_the_table() -> None:
    assert [f.name for f in fields(Savings)] == list(SAVINGS_METRICS)
    assert {name for name, _ in SAVINGS_METRICS.values()} == set(METRICS)
    # Fields that share a metric are told apart by their attributes (one of them may take the rest).
    by_metric: dict[str, list[dict[str, str]]] = {}
    for name, fixed in SAVINGS_METRICS.values():
        by_metric.setdefault(name, []).append(dict(fixed))
    for name, attribute_sets in by_metric.items():
        if len(attribute_sets) > 1:
            assert sum(1 for fixed in attribute_sets if not fixed) <= 1, name
            assert len({tuple(sorted(fixed.items())) for fixed in attribute_sets}) == len(attribute_sets), name


def test_the_ledger_spells_no_metric_name() -> None:
    source = Path(strands_offload._ledger.__file__).read_text()
    literals = {
        node.value
        for node in ast.walk(ast.parse(source))
        if isinstance(node, ast.Constant) and isinstance(node.value, str)
    }
    assert literals & set(METRICS) == set()


class _Agent:
    """Stands for an agent: the ledger keys its totals by the object."""


def _figure(telemetry: Telemetry, field: str) -> float:
    """What the metrics say of ``field``: its points, less those of the fields that share its metric."""
    name, fixed = SAVINGS_METRICS[field]
    points = telemetry.points().get(name, [])
    if METRICS[name][0] == "histogram":
        return sum(point.sum for _labels, point in points)
    if fixed:
        return telemetry.total(name, **fixed)
    others = [dict(f) for n, f in SAVINGS_METRICS.values() if n == name and f]
    return telemetry.total(name) - sum(telemetry.total(name, **f) for f in others)


@pytest.mark.parametrize("rounds", [1, 3])
def test_each_field_equals_what_its_metric_reports(rounds: int) -> None:
    telemetry = Telemetry()
    ledger = Ledger(meter_provider=telemetry.meter_provider, tracer_provider=telemetry.tracer_provider)
    agent = _Agent()
    for n in range(rounds):
        call = ToolCall(agent, None, now_ns(), "fetch", f"call-{n}")
        ledger.offload(
            call,
            storage="InMemoryStorage",
            counter="heuristic",
            original_tokens=900 + n,
            shown_tokens=100,
            bytes_stored=4000 + n,
            blocks=1,
            native_seconds=0.25,
        )
        for outcome, tokens in (("ok", 70 + n), ("not_found", 0), ("refused", 0), ("ok", 5)):
            ledger.retrieval(call, mode="grep", outcome=outcome, counter="heuristic", tokens=tokens, native_seconds=0.5)
        for action, invalidating in (("truncate", True), ("summarize", False)):
            ledger.edit(
                agent,
                None,
                started_ns=now_ns(),
                action=action,
                counter="heuristic",
                tokens_removed=300 + n,
                tokens_added=40,
                cache_invalidating=invalidating,
                blocks=1,
                messages=1,
                native_seconds=0.125,
            )
        ledger.summarizer_call(agent, input_tokens=1200 + n, output_tokens=80)
        ledger.summary_ahead_unused(agent)
        ledger.tool_specs_hidden(agent, None, 7, 350 + n)
    savings = ledger.savings(agent)
    for field in SAVINGS_METRICS:
        value = getattr(savings, field)
        assert value, field  # the session above exercises every field
        assert _figure(telemetry, field) == pytest.approx(value), field
