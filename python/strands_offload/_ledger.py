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
from collections.abc import Callable, Mapping
from dataclasses import dataclass, fields
from typing import Any

from opentelemetry import metrics, trace
from opentelemetry.trace import Status, StatusCode

from . import _seam
from .telemetry import METRICS, SAVINGS_METRICS, Savings

_SCOPE = "strands_offload"
_FIELDS = tuple(f.name for f in fields(Savings))
_MEASURE = {"strands_offload.operation": "measure"}
# The span of a request with hidden tool specs carries its figures under their metric names.
_SPECS_HIDDEN = SAVINGS_METRICS["tool_specs_hidden"][0]
_SPEC_TOKENS_HIDDEN = SAVINGS_METRICS["tool_spec_tokens_hidden"][0]
#: How often a ledger without a provider looks again for a global one, in seconds.
RECHECK_SECONDS = 1.0


def _version() -> str:
    from . import __version__

    return __version__


class _Instruments:
    """The instruments of ``METRICS`` on one meter, reached by the ``Savings`` field each reports."""

    def __init__(self, meter: metrics.Meter) -> None:
        made: dict[str, Any] = {}
        for name, (kind, unit, description) in METRICS.items():
            make = meter.create_histogram if kind == "histogram" else meter.create_counter
            made[name] = make(name, unit=unit, description=description)
        # Field -> (its instrument, the attributes that single it out, or None).
        self._by_field: dict[str, tuple[Any, dict[str, str] | None]] = {
            field: (made[name], dict(fixed) or None) for field, (name, fixed) in SAVINGS_METRICS.items()
        }

    def add(self, field: str, amount: float, attributes: Mapping[str, Any]) -> None:
        """Add ``amount`` to the counter of the ``Savings`` field ``field``."""
        instrument, fixed = self._by_field[field]
        instrument.add(amount, attributes if fixed is None else {**attributes, **fixed})

    def record(self, field: str, amount: float, attributes: Mapping[str, Any]) -> None:
        """Record ``amount`` in the histogram of the ``Savings`` field ``field``."""
        instrument, fixed = self._by_field[field]
        instrument.record(amount, attributes if fixed is None else {**attributes, **fixed})


class PerAgent:
    """One value per live agent, its entry gone when the agent goes.

    Read on every model call: unlike ``WeakKeyDictionary.get``, a lookup allocates no weak reference.
    """

    def __init__(self) -> None:
        self._slots: dict[int, list[Any]] = {}  # id(agent) -> [weak reference to it, value]

    def get(self, agent: Any) -> Any:
        slot = self._slots.get(id(agent))
        return slot[1] if slot is not None and slot[0]() is agent else None

    def set(self, agent: Any, value: Any) -> None:
        key = id(agent)
        slot = self._slots.get(key)
        if slot is not None and slot[0]() is agent:
            slot[1] = value
            return
        slots = self._slots
        # The id is free again only once the agent is gone, and the callback runs as it goes.
        self._slots[key] = [weakref.ref(agent, lambda _: slots.pop(key, None)), value]


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
        self._per_agent = PerAgent()
        self._total: dict[str, float] = dict.fromkeys(_FIELDS, 0)
        self._labels: dict[tuple[str, str], tuple[dict[str, str], dict[str, str]]] = {}
        self._next_check = 0.0  # the first call looks again: providers are often set up after plugins
        self._settlers: list[Callable[[], None]] = []
        self.tracing, self.metering = self._providers()

    def refresh(self) -> None:
        """See whether metrics and spans go anywhere (the plugin on each call, the manager per model call).

        Without a provider (ours or a global one) the API's instruments and spans are no-ops: none
        are made, and only the totals of ``savings()`` are kept. A global provider set later is
        seen within ``RECHECK_SECONDS``; one found is never looked for again (a process sets its
        global providers once). The look costs more than an edit's bookkeeping, hence the spacing.
        """
        if self.tracing and self.metering:
            return
        now = time.monotonic()
        if now < self._next_check:
            return
        self._next_check = now + RECHECK_SECONDS
        self.tracing, self.metering = self._providers()

    def _providers(self) -> tuple[bool, bool]:
        """Whether spans, and metrics, go to a provider: ours, or a global one set by now."""
        tracing = self._tracer_provider is not None or not isinstance(
            trace.get_tracer_provider(), trace.ProxyTracerProvider
        )
        return tracing, self._meter_provider is not None or not _seam.global_metrics_unset()

    # ------------------------------------------------------------------ totals

    def _add(self, agent: Any, amounts: Mapping[str, float]) -> None:
        with self._lock:
            mine = self._per_agent.get(agent)
            if mine is None:
                mine = dict.fromkeys(_FIELDS, 0)
                self._per_agent.set(agent, mine)
            for name, amount in amounts.items():
                mine[name] += amount
                self._total[name] += amount

    def count_edits(
        self,
        agent: Any,
        edits: int,
        tokens_removed: int,
        tokens_added: int,
        cache_invalidating: int,
        native_seconds: float,
    ) -> None:
        """Edits into the totals only (several at once: what the manager queued with no provider)."""
        with self._lock:
            mine = self._per_agent.get(agent)
            if mine is None:
                mine = dict.fromkeys(_FIELDS, 0)
                self._per_agent.set(agent, mine)
            for totals in (mine, self._total):
                totals["edits"] += edits
                totals["tokens_removed"] += tokens_removed
                totals["tokens_added"] += tokens_added
                totals["cache_invalidating_edits"] += cache_invalidating
                totals["native_seconds"] += native_seconds

    def settle_with(self, settle: Callable[[], None]) -> None:
        """Have ``settle`` put its queued records into the totals before they are read."""
        self._settlers.append(settle)

    def savings(self, agent: Any = None) -> Savings:
        """The totals of ``agent``, or of every agent recorded when ``None``."""
        for settle in self._settlers:
            settle()
        with self._lock:
            figures = self._total if agent is None else self._per_agent.get(agent)
            return Savings(**figures) if figures else Savings()

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
        ended_ns: int | None = None,
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
        span.end(end_time=ended_ns)

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
        if self.metering:
            instruments = self._meter()
            instruments.add("offloads", 1, labels)
            counted = {**labels, "strands_offload.counter": counter}
            instruments.add("tokens_kept_out", kept_out, counted)
            instruments.add("bytes_stored", bytes_stored, labels)
            instruments.record("native_seconds", native_seconds, _MEASURE)
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
        if self.metering:
            instruments = self._meter()
            instruments.add(
                "retrievals" if ok else "retrievals_failed", 1, {**labels, "gen_ai.tool.name": call.tool_name}
            )
            if tokens:
                counted = {**labels, "strands_offload.counter": counter}
                instruments.add("tokens_retrieved", tokens, counted)
            if native_seconds:
                operation = {"strands_offload.operation": mode}
                instruments.record("native_seconds", native_seconds, operation)
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
        native_seconds: float = 0.0,
        ended_ns: int | None = None,
    ) -> None:
        """One context edit: a block replaced, or a run of messages removed (with its marker).

        ``native_seconds``: the native counting the pass made up to this edit, not reported before;
        ``ended_ns``: when the edit was made (its span's end; ``None``: now).
        """
        self.count_edits(agent, 1, tokens_removed, tokens_added, int(cache_invalidating), native_seconds)
        if not (self.metering or self.tracing):
            return  # nothing made for no provider
        # Attribute sets are built once per action and counter.
        found = self._labels.get((action, counter))
        if found is None:
            labels = {"strands_offload.action": action}
            found = self._labels[(action, counter)] = (labels, {**labels, "strands_offload.counter": counter})
        labels, counted = found
        if self.metering:
            instruments = self._meter()
            instruments.add("edits", 1, labels)
            instruments.add("tokens_removed", tokens_removed, counted)
            instruments.add("tokens_added", tokens_added, counted)
            if cache_invalidating:
                instruments.add("cache_invalidating_edits", 1, labels)
            if native_seconds:
                instruments.record("native_seconds", native_seconds, _MEASURE)
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
            ended_ns=ended_ns,
        )

    def tool_specs_hidden(
        self, agent: Any, invocation_state: Mapping[str, Any] | None, specs: int, tokens: int
    ) -> None:
        """One model request that carried ``specs`` fewer tool specs (``tokens`` fewer tokens) than the registry."""
        started_ns = now_ns()
        self._add(agent, {"tool_specs_hidden": specs, "tool_spec_tokens_hidden": tokens})
        if self.metering:
            instruments = self._meter()
            instruments.add("tool_specs_hidden", specs, {})
            instruments.add("tool_spec_tokens_hidden", tokens, {})
        if self.tracing:
            self._span(
                "strands_offload.hide_tool_specs",
                invocation_state,
                started_ns,
                {_SPECS_HIDDEN: specs, _SPEC_TOKENS_HIDDEN: tokens},
            )

    def summary_ahead_unused(self, agent: Any) -> None:
        """A summary started ahead of its turn that no pass used (its call was made or cancelled)."""
        self._add(agent, {"summaries_ahead_unused": 1})
        if self.metering:
            self._meter().add("summaries_ahead_unused", 1, {})

    def summarizer_call(self, agent: Any, *, input_tokens: int, output_tokens: int) -> None:
        """One model call made by the summarizer, with the usage its response reported."""
        self._add(
            agent,
            {"summarizer_calls": 1, "summarizer_input_tokens": input_tokens, "summarizer_output_tokens": output_tokens},
        )
        if not self.metering:
            return
        instruments = self._meter()
        instruments.add("summarizer_calls", 1, {})
        instruments.add("summarizer_input_tokens", input_tokens, {})
        instruments.add("summarizer_output_tokens", output_tokens, {})


class NativeClock:
    """Adds up the wall time of the ``with`` blocks around native work (the ledger's native time)."""

    __slots__ = ("_started", "seconds")

    def __init__(self) -> None:
        self.seconds = 0.0
        self._started = 0.0

    def __enter__(self) -> None:
        self._started = time.perf_counter()

    def __exit__(self, *_: object) -> None:
        self.seconds += time.perf_counter() - self._started

    def take(self) -> float:
        """The time added up since the last take (each second is reported once)."""
        seconds, self.seconds = self.seconds, 0.0
        return seconds


class _Untimed:
    """The clock of work nobody records: times nothing."""

    __slots__ = ()
    seconds = 0.0

    def __enter__(self) -> None:
        return None

    def __exit__(self, *_: object) -> None:
        return None

    def take(self) -> float:
        return 0.0


UNTIMED = _Untimed()


def counter_name(original: str, added: str) -> str:
    """The ``counter`` attribute of a figure: who counted the original, then who counted what was added.

    One name when both are the same counter (``heuristic``), else both joined (``model+heuristic``).
    """
    return original if original == added else f"{original}+{added}"


def now_ns() -> int:
    """The clock spans are stamped with (OpenTelemetry's: nanoseconds since the epoch)."""
    return time.time_ns()
