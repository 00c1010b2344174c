"""The savings ledger: per-agent totals, OpenTelemetry metrics and spans of what was offloaded.

One ledger per plugin (or context manager). Every figure is recorded after the work it describes,
so a call where nothing was offloaded or retrieved emits nothing, and nothing recorded here
changes what the model sees. Spans are made after the fact with the start time of the work and the
event-loop cycle's span as parent (from the invocation state, through the seam: the current
context does not follow the SDK's async generators reliably). Attributes carry counts, sizes,
tool names and call ids, never payloads, keys or paths.
"""

from __future__ import annotations

import threading
import time
import weakref
from collections.abc import Mapping
from dataclasses import dataclass, fields
from typing import Any

from opentelemetry import metrics, trace
from opentelemetry.trace import Status, StatusCode

from . import _seam
from .telemetry import METRICS, Savings

_SCOPE = "strands_offload"
_FIELDS = tuple(f.name for f in fields(Savings))


def _version() -> str:
    from . import __version__

    return __version__


class _Instruments:
    """The instruments of ``METRICS`` on one meter."""

    def __init__(self, meter: metrics.Meter) -> None:
        self.by_name: dict[str, Any] = {}
        for name, (kind, unit, description) in METRICS.items():
            make = meter.create_histogram if kind == "histogram" else meter.create_counter
            self.by_name[name] = make(name, unit=unit, description=description)

    def add(self, name: str, amount: float, attributes: Mapping[str, Any]) -> None:
        self.by_name[name].add(amount, attributes)

    def record(self, name: str, amount: float, attributes: Mapping[str, Any]) -> None:
        self.by_name[name].record(amount, attributes)


@dataclass(frozen=True)
class ToolCall:
    """The tool call a record belongs to: its agent, cycle (through the invocation state), start, tool and id."""

    agent: Any
    invocation_state: Mapping[str, Any] | None
    started_ns: int
    tool_name: str
    call_id: str


class Ledger:
    """Totals per agent and in all, plus their OpenTelemetry metrics and spans.

    Args:
        enabled: ``False`` records nothing at all (``savings()`` stays at zero).
        meter_provider: Where metrics go; ``None``: the global provider (a no-op until one is set).
        tracer_provider: Where spans go; ``None``: the global provider.
    """

    def __init__(self, *, enabled: bool = True, meter_provider: Any = None, tracer_provider: Any = None) -> None:
        self.enabled = enabled
        self._meter_provider, self._tracer_provider = meter_provider, tracer_provider
        self._instruments: _Instruments | None = None
        self._tracer: trace.Tracer | None = None
        self._lock = threading.Lock()
        self._per_agent: weakref.WeakKeyDictionary[Any, dict[str, float]] = weakref.WeakKeyDictionary()
        self._total: dict[str, float] = dict.fromkeys(_FIELDS, 0)
        self._labels: dict[tuple[str, str], tuple[dict[str, str], dict[str, str]]] = {}
        self.tracing = _spans_go_somewhere(tracer_provider)

    def refresh(self) -> None:
        """Check again whether spans go anywhere (the plugin on each call, the manager per model call).

        Without a tracer provider (ours or a global one) the API's spans are no-ops: none are made.
        A global provider set later is seen at the next check.
        """
        self.tracing = _spans_go_somewhere(self._tracer_provider)

    # ------------------------------------------------------------------ totals

    def _add(self, agent: Any, amounts: Mapping[str, float]) -> None:
        with self._lock:
            mine = self._per_agent.get(agent)
            if mine is None:
                mine = self._per_agent[agent] = dict.fromkeys(_FIELDS, 0)
            for name, amount in amounts.items():
                mine[name] += amount
                self._total[name] += amount

    def savings(self, agent: Any = None) -> Savings:
        """The totals of ``agent``, or of every agent recorded when ``None``."""
        with self._lock:
            figures = self._total if agent is None else self._per_agent.get(agent)
            return Savings(**figures) if figures else Savings()  # type: ignore[arg-type]

    # ------------------------------------------------------------------ OpenTelemetry

    def _meter(self) -> _Instruments:
        if self._instruments is None:
            meter = metrics.get_meter(_SCOPE, _version(), meter_provider=self._meter_provider)
            self._instruments = _Instruments(meter)
        return self._instruments

    def _span(
        self,
        name: str,
        invocation_state: Mapping[str, Any] | None,
        started_ns: int,
        attributes: Mapping[str, Any],
        error_type: str | None = None,
    ) -> None:
        if not self.tracing:
            return
        if self._tracer is None:
            # Without a provider this is the API's proxy: its spans cost little and follow a provider set later.
            self._tracer = trace.get_tracer(_SCOPE, _version(), tracer_provider=self._tracer_provider)
        parent = _seam.cycle_span(invocation_state)
        context = trace.set_span_in_context(parent) if parent is not None else None
        span = self._tracer.start_span(name, context=context, start_time=started_ns, attributes=attributes)
        if error_type is not None:
            span.set_attribute("error.type", error_type)
            span.set_status(Status(StatusCode.ERROR))
        span.end()

    # ------------------------------------------------------------------ what is recorded

    def offload(
        self,
        call: ToolCall,
        *,
        storage: str,
        counter: str,
        original_tokens: int,
        shown_tokens: int,
        bytes_stored: int,
        blocks: int,
        native_seconds: float,
    ) -> None:
        """One tool result (or ``offload()`` call) moved to storage."""
        kept_out = max(0, original_tokens - shown_tokens)
        totals = {"offloads": 1, "tokens_kept_out": kept_out, "bytes_stored": bytes_stored}
        self._add(call.agent, {**totals, "native_seconds": native_seconds})
        labels = {"gen_ai.tool.name": call.tool_name, "strands_offload.storage": storage}
        instruments = self._meter()
        instruments.add("strands_offload.offloads", 1, labels)
        counted = {**labels, "strands_offload.counter": counter}
        instruments.add("strands_offload.offload.tokens_kept_out", kept_out, counted)
        instruments.add("strands_offload.offload.bytes_stored", bytes_stored, labels)
        instruments.record("strands_offload.native.duration", native_seconds, {"strands_offload.operation": "measure"})
        self._span(
            "strands_offload.offload",
            call.invocation_state,
            call.started_ns,
            {
                **labels,
                "gen_ai.tool.call.id": call.call_id,
                "strands_offload.counter": counter,
                "strands_offload.tokens.original": original_tokens,
                "strands_offload.tokens.shown": shown_tokens,
                "strands_offload.tokens.kept_out": kept_out,
                "strands_offload.bytes_stored": bytes_stored,
                "strands_offload.blocks": blocks,
            },
        )

    def retrieval(
        self,
        call: ToolCall,
        *,
        mode: str,
        outcome: str,
        counter: str,
        tokens: int,
        native_seconds: float,
        error_type: str | None = None,
    ) -> None:
        """One call of a retrieval tool; ``outcome`` is ``ok``, ``not_found``, ``refused`` or ``error``."""
        ok = outcome == "ok"
        self._add(
            call.agent,
            {
                "retrievals": int(ok),
                "retrievals_failed": int(not ok),
                "tokens_retrieved": tokens,
                "native_seconds": native_seconds,
            },
        )
        labels = {"strands_offload.retrieval.mode": mode, "strands_offload.retrieval.outcome": outcome}
        instruments = self._meter()
        instruments.add("strands_offload.retrievals", 1, {**labels, "gen_ai.tool.name": call.tool_name})
        if tokens:
            instruments.add(
                "strands_offload.retrieval.tokens_returned", tokens, {**labels, "strands_offload.counter": counter}
            )
        if native_seconds:
            instruments.record("strands_offload.native.duration", native_seconds, {"strands_offload.operation": mode})
        self._span(
            "strands_offload.retrieve",
            call.invocation_state,
            call.started_ns,
            {
                **labels,
                "gen_ai.tool.name": call.tool_name,
                "gen_ai.tool.call.id": call.call_id,
                "strands_offload.counter": counter,
                "strands_offload.tokens.returned": tokens,
            },
            error_type,
        )

    def edit(
        self,
        agent: Any,
        invocation_state: Mapping[str, Any] | None,
        *,
        started_ns: int,
        action: str,
        counter: str,
        tokens_removed: int,
        tokens_added: int,
        cache_invalidating: bool,
        blocks: int,
        messages: int,
    ) -> None:
        """One context edit: a block replaced, or a run of messages removed (with its marker)."""
        # The manager's hot path (a model call): one lock, prebuilt attribute sets, no span without a tracer.
        with self._lock:
            mine = self._per_agent.get(agent)
            if mine is None:
                mine = self._per_agent[agent] = dict.fromkeys(_FIELDS, 0)
            for totals in (mine, self._total):
                totals["edits"] += 1
                totals["tokens_removed"] += tokens_removed
                totals["tokens_added"] += tokens_added
                totals["cache_invalidating_edits"] += cache_invalidating
        found = self._labels.get((action, counter))
        if found is None:
            labels = {"strands_offload.action": action}
            found = self._labels[(action, counter)] = (labels, {**labels, "strands_offload.counter": counter})
        labels, counted = found
        instruments = (self._instruments or self._meter()).by_name
        instruments["strands_offload.context.edits"].add(1, labels)
        instruments["strands_offload.context.tokens_removed"].add(tokens_removed, counted)
        instruments["strands_offload.context.tokens_added"].add(tokens_added, counted)
        if cache_invalidating:
            instruments["strands_offload.context.cache_invalidating_edits"].add(1, labels)
        if not self.tracing:
            return
        self._span(
            "strands_offload.context_edit",
            invocation_state,
            started_ns,
            {
                **counted,
                "strands_offload.tokens.removed": tokens_removed,
                "strands_offload.tokens.added": tokens_added,
                "strands_offload.cache_invalidating": cache_invalidating,
                "strands_offload.blocks": blocks,
                "strands_offload.messages": messages,
            },
        )

    def summarizer_call(self, agent: Any, *, input_tokens: int, output_tokens: int) -> None:
        """One model call made by the summarizer, with the usage its response reported."""
        self._add(
            agent,
            {"summarizer_calls": 1, "summarizer_input_tokens": input_tokens, "summarizer_output_tokens": output_tokens},
        )
        instruments = self._meter()
        instruments.add("strands_offload.summarizer.calls", 1, {})
        instruments.add("strands_offload.summarizer.tokens", input_tokens, {"gen_ai.token.type": "input"})
        instruments.add("strands_offload.summarizer.tokens", output_tokens, {"gen_ai.token.type": "output"})


def _spans_go_somewhere(tracer_provider: Any) -> bool:
    return tracer_provider is not None or not isinstance(trace.get_tracer_provider(), trace.ProxyTracerProvider)


def now_ns() -> int:
    """The clock spans are stamped with (OpenTelemetry's: nanoseconds since the epoch)."""
    return time.time_ns()
