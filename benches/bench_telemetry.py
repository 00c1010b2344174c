"""What the savings ledger costs: the offload hook with telemetry off, on, and on with an SDK exporter.

Two groups: the plugin's offload hook on a 1 MB JSON tool result that is offloaded, and a
context-manager model call that truncates one tool result (``bench_context_manager``'s acting
pipeline on its 200-message JSON conversation). Members:
``off`` (``telemetry=False``), ``on`` (the default, no provider configured: the OpenTelemetry API's
no-op) and ``in_memory`` (the SDK's in-memory metric reader and span exporter). Each round of
``on`` and ``in_memory`` follows one round of ``off`` (``paired.py``), so their ratio to ``off``
comes from the same stretch of time. Goal: ``on`` within 2% of ``off``.
``python benches/bench_telemetry.py`` runs both groups in alternate rounds and prints the ratios.

Run: ``pytest benches/bench_telemetry.py --benchmark-group-by=group`` then ``python benches/ratios.py``.
"""

from __future__ import annotations

from typing import Any

import pytest
import strands_offload.storage as our_storage
from bench_context_manager import Acting
from bench_plugin import _agent, _call, json_document
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from paired import Paired
from strands_offload.context_manager import ContextManager
from strands_offload.context_offloader import ContextOffloader

ROUNDS = 30


def _options(member: str) -> dict[str, Any]:
    if member == "off":
        return {"telemetry": False}
    if member == "on":
        return {}
    tracer_provider = TracerProvider()
    tracer_provider.add_span_processor(SimpleSpanProcessor(InMemorySpanExporter()))
    return {
        "meter_provider": MeterProvider(metric_readers=[InMemoryMetricReader()]),
        "tracer_provider": tracer_provider,
    }


def _plugin(member: str) -> ContextOffloader:
    return ContextOffloader(our_storage.InMemoryStorage(), **_options(member))


@pytest.mark.parametrize("member", ["off", "on", "in_memory"])
def test_offload_hook_1mb(benchmark: Any, member: str) -> None:
    benchmark.group = "telemetry_offload_hook_json_1mb"
    content = [{"json": json_document(1)}]
    plugin = _plugin(member)
    agent = _agent(plugin)
    baseline = None
    if member != "off":
        off = _plugin("off")
        off_agent = _agent(off)
        baseline = Paired("off", lambda: content, lambda blocks: _call(off, off_agent, blocks))

    def fresh() -> tuple[tuple[Any, ...], dict[str, Any]]:
        if baseline is not None:
            baseline.round()
        return (plugin, agent, content), {}

    result = benchmark.pedantic(_call, setup=fresh, rounds=ROUNDS, warmup_rounds=1)
    if baseline is not None:
        baseline.record(benchmark, ROUNDS)
    assert result["content"][0]["text"].startswith("[Offloaded: 1 blocks, ~")
    assert (plugin.savings().offloads > 0) == (member != "off")


def _acting(member: str) -> Acting:
    """The context manager's whole model-call hook, truncating a fresh tool result of a 200-message conversation."""
    return Acting("native", 200, ContextManager(**_options(member)))


@pytest.mark.parametrize("member", ["off", "on", "in_memory"])
def test_context_manager_truncating_call(benchmark: Any, member: str) -> None:
    benchmark.group = "telemetry_cm_truncating_call"
    acting = _acting(member)
    baseline = _acting("off") if member != "off" else None
    paired = Paired("off", baseline.prepare, baseline) if baseline is not None else None

    def fresh() -> tuple[tuple[Any, ...], dict[str, Any]]:
        if paired is not None:
            paired.round()
        acting.prepare()
        return (), {}

    acted = benchmark.pedantic(acting, setup=fresh, rounds=ROUNDS, warmup_rounds=1)
    if paired is not None:
        paired.record(benchmark, ROUNDS)
    assert acted is True
    assert (acting.pipeline.manager.savings().edits > 0) == (member != "off")


def _alternate(rounds: int) -> None:
    """Both groups, all three members in turn each round; medians of the per-round ratios to off."""
    import statistics
    import time

    content = [{"json": json_document(1)}]
    hooks = {member: (_plugin(member), None) for member in ("off", "on", "in_memory")}
    hooks = {member: (plugin, _agent(plugin)) for member, (plugin, _) in hooks.items()}
    managers = {member: _acting(member) for member in ("off", "on", "in_memory")}
    for label, run in (
        ("offload hook, 1 MB JSON", lambda m: _call(*hooks[m], content)),
        ("context-manager call that truncates", None),
    ):
        ratios: dict[str, list[float]] = {"on": [], "in_memory": []}
        for round_number in range(rounds + 1):
            seconds = {}
            order = ["off", "on", "in_memory"]
            if round_number % 2:
                order.reverse()
            for member in order:
                if run is None:
                    managers[member].prepare()
                started = time.perf_counter()
                run(member) if run is not None else managers[member]()
                seconds[member] = time.perf_counter() - started
            if round_number:  # the first round warms up
                for member in ratios:
                    ratios[member].append(seconds[member] / seconds["off"])
        summary = ", ".join(f"{m}/off {statistics.median(r):.3f}" for m, r in ratios.items())
        print(f"{label}: {summary} (median of {rounds} alternate rounds)")


if __name__ == "__main__":
    import sys

    _alternate(int(sys.argv[1]) if len(sys.argv) > 1 else 60)
