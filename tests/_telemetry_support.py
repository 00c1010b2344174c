"""In-memory OpenTelemetry providers for the savings-ledger tests, with the SDK's spans routed in too."""

from __future__ import annotations

from typing import Any

import pytest
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from strands.telemetry.tracer import get_tracer


class Telemetry:
    """An SDK meter provider with an in-memory reader and a tracer provider with an in-memory exporter."""

    def __init__(self) -> None:
        self.reader = InMemoryMetricReader()
        self.meter_provider = MeterProvider(metric_readers=[self.reader])
        self.exporter = InMemorySpanExporter()
        self.tracer_provider = TracerProvider()
        self.tracer_provider.add_span_processor(SimpleSpanProcessor(self.exporter))

    def points(self) -> dict[str, list[tuple[dict[str, Any], Any]]]:
        """Metric name -> (attributes, point) for every point of our scope."""
        out: dict[str, list[tuple[dict[str, Any], Any]]] = {}
        data = self.reader.get_metrics_data()
        if data is None:
            return out
        for resource in data.resource_metrics:
            for scope in resource.scope_metrics:
                if scope.scope.name != "strands_offload":
                    continue
                for metric in scope.metrics:
                    for point in metric.data.data_points:
                        out.setdefault(metric.name, []).append((dict(point.attributes), point))
        return out

    def total(self, name: str, **attributes: Any) -> float:
        """The sum of the points of ``name`` whose attributes include ``attributes``."""
        return sum(
            point.value
            for labels, point in self.points().get(name, [])
            if all(labels.get(k) == v for k, v in attributes.items())
        )

    def ours(self) -> list[Any]:
        """Our finished spans."""
        return [s for s in self.exporter.get_finished_spans() if s.name.startswith("strands_offload.")]


def recorded(monkeypatch: pytest.MonkeyPatch) -> Telemetry:
    """Fresh providers for the component under test; the SDK's own spans go to the same exporter.

    The SDK's tracer singleton is pointed at our provider for the test only (a process can set the
    global providers once), so our spans' parents, the event-loop cycle spans, are exported too.
    """
    telemetry = Telemetry()
    monkeypatch.setattr(get_tracer(), "tracer", telemetry.tracer_provider.get_tracer("strands.telemetry.tracer"))
    return telemetry
