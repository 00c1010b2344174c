"""What the savings ledger costs: the offload hook with telemetry off, on, and on with an SDK exporter.

One group: the plugin's offload hook on a 1 MB JSON tool result that is offloaded. Members:
``off`` (``telemetry=False``), ``on`` (the default, no provider configured: the OpenTelemetry API's
no-op) and ``in_memory`` (the SDK's in-memory metric reader and span exporter). Each round of
``on`` and ``in_memory`` follows one round of ``off`` (``paired.py``), so their ratio to ``off``
comes from the same stretch of time. Goal: ``on`` within 2% of ``off``.

Run: ``pytest benches/bench_telemetry.py --benchmark-group-by=group`` then ``python benches/ratios.py``.
"""

from __future__ import annotations

from typing import Any

import pytest
import strands_offload.storage as our_storage
from bench_plugin import _agent, _call, json_document
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from paired import Paired
from strands_offload.context_offloader import ContextOffloader

ROUNDS = 30


def _plugin(member: str) -> ContextOffloader:
    if member == "off":
        return ContextOffloader(our_storage.InMemoryStorage(), telemetry=False)
    if member == "on":
        return ContextOffloader(our_storage.InMemoryStorage())
    tracer_provider = TracerProvider()
    tracer_provider.add_span_processor(SimpleSpanProcessor(InMemorySpanExporter()))
    meter_provider = MeterProvider(metric_readers=[InMemoryMetricReader()])
    return ContextOffloader(
        our_storage.InMemoryStorage(), meter_provider=meter_provider, tracer_provider=tracer_provider
    )


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
