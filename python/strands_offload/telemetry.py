"""What offloading and context editing saved: the totals of :meth:`ContextOffloader.savings`.

The same figures go out as OpenTelemetry metrics and spans (see ``_ledger`` and the README's
table of metric names); this module holds the summary a user can print without OpenTelemetry, the
metrics (:data:`METRICS`) and which metric reports each of its fields (:data:`SAVINGS_METRICS`):
the one place either is written.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, fields

__all__ = ["METRICS", "SAVINGS_METRICS", "Savings"]


@dataclass(frozen=True)
class Savings:
    """Totals for one agent (or all agents a plugin or manager served).

    Attributes:
        offloads: Tool results moved to storage.
        tokens_kept_out: Tokens of the originals minus tokens of what the model saw instead.
        bytes_stored: Bytes written to storage by those offloads.
        retrievals: Calls of the retrieval tool that returned content.
        tokens_retrieved: Tokens those calls returned to the model.
        retrievals_failed: Calls that found nothing to read or were refused.
        edits: Context edits (blocks replaced, runs of messages removed).
        tokens_removed: Tokens the edits took out of the conversation.
        tokens_added: Tokens the edits put in (previews, markers, summaries).
        cache_invalidating_edits: Edits of content a prompt-cached model request had already sent.
        summarizer_calls: Model calls made to write summaries.
        summarizer_input_tokens: Input tokens those calls reported.
        summarizer_output_tokens: Output tokens those calls reported.
        summaries_ahead_unused: Summaries started ahead of their turn (``ahead=True``) that no pass
            used: the span changed, the turn ended early, or the condition did not hold after all.
        native_seconds: Time spent in the native core for the above (counting, dumping, grep).
        tool_specs_hidden: Tool specs ``Hide.tool_specs`` left out of model requests (counted per request).
        tool_spec_tokens_hidden: Tokens of those specs, by the model's count of a spec.
    """

    offloads: int = 0
    tokens_kept_out: int = 0
    bytes_stored: int = 0
    retrievals: int = 0
    tokens_retrieved: int = 0
    retrievals_failed: int = 0
    edits: int = 0
    tokens_removed: int = 0
    tokens_added: int = 0
    cache_invalidating_edits: int = 0
    summarizer_calls: int = 0
    summarizer_input_tokens: int = 0
    summarizer_output_tokens: int = 0
    summaries_ahead_unused: int = 0
    native_seconds: float = 0.0
    tool_specs_hidden: int = 0
    tool_spec_tokens_hidden: int = 0

    def __add__(self, other: Savings) -> Savings:
        if not isinstance(other, Savings):
            return NotImplemented
        return Savings(**{f.name: getattr(self, f.name) + getattr(other, f.name) for f in fields(self)})

    @property
    def net_tokens_saved(self) -> int:
        """Tokens kept out, removed and of hidden tool specs, less what retrievals and edits put back."""
        kept_out = self.tokens_kept_out + self.tokens_removed + self.tool_spec_tokens_hidden
        return kept_out - self.tokens_retrieved - self.tokens_added

    def __str__(self) -> str:
        lines = [
            f"offloads: {self.offloads:,} ({self.bytes_stored:,} bytes stored, "
            f"{self.tokens_kept_out:,} tokens kept out of context)",
            f"retrievals: {self.retrievals:,} ({self.tokens_retrieved:,} tokens returned, "
            f"{self.retrievals_failed:,} failed)",
        ]
        if self.edits or self.summarizer_calls:
            lines.append(
                f"context edits: {self.edits:,} ({self.tokens_removed:,} tokens removed, "
                f"{self.tokens_added:,} added, {self.cache_invalidating_edits:,} invalidated a prompt cache)"
            )
            unused = f"; {self.summaries_ahead_unused:,} started ahead unused" if self.summaries_ahead_unused else ""
            lines.append(
                f"summarizer calls: {self.summarizer_calls:,} ({self.summarizer_input_tokens:,} input, "
                f"{self.summarizer_output_tokens:,} output tokens{unused})"
            )
        if self.tool_specs_hidden:
            lines.append(
                f"tool specs hidden: {self.tool_specs_hidden:,} over all requests "
                f"({self.tool_spec_tokens_hidden:,} tokens)"
            )
        lines.append(f"net tokens saved: {self.net_tokens_saved:,}; native time: {self.native_seconds * 1000:.1f} ms")
        return "\n".join(lines)


# Metric name -> (instrument kind, unit, what it counts). The README's table is made from this.
METRICS: dict[str, tuple[str, str, str]] = {
    "strands_offload.offloads": ("counter", "{offload}", "tool results moved to storage"),
    "strands_offload.offload.tokens_kept_out": (
        "counter",
        "{token}",
        "tokens of the originals minus tokens of the notices the model saw instead",
    ),
    "strands_offload.offload.bytes_stored": ("counter", "By", "bytes written to storage by offloads"),
    "strands_offload.retrievals": (
        "counter",
        "{retrieval}",
        "retrieval tool calls, by mode and outcome (ok, not_found, refused, error)",
    ),
    "strands_offload.retrieval.tokens_returned": ("counter", "{token}", "tokens retrievals returned to the model"),
    "strands_offload.context.edits": (
        "counter",
        "{edit}",
        "context-manager edits (a block replaced, a run of messages removed), by action",
    ),
    "strands_offload.context.tokens_removed": ("counter", "{token}", "tokens the edits took out of the conversation"),
    "strands_offload.context.tokens_added": (
        "counter",
        "{token}",
        "tokens the edits put in (previews, markers, summaries)",
    ),
    "strands_offload.context.cache_invalidating_edits": (
        "counter",
        "{edit}",
        "edits of messages a prompt-cached model request had already sent",
    ),
    "strands_offload.summarizer.calls": ("counter", "{call}", "model calls made to write summaries"),
    "strands_offload.summarizer.tokens": (
        "counter",
        "{token}",
        "tokens the summarizer's responses reported, by gen_ai.token.type (input, output)",
    ),
    "strands_offload.summarizer.ahead_unused": (
        "counter",
        "{summary}",
        "summaries started ahead of their turn (ahead=True) that no pass used",
    ),
    "strands_offload.tool_specs.hidden": (
        "counter",
        "{spec}",
        "tool specs Hide.tool_specs left out of a model request, summed over requests",
    ),
    "strands_offload.tool_specs.tokens_hidden": ("counter", "{token}", "tokens of the tool specs left out"),
    "strands_offload.native.duration": (
        "histogram",
        "s",
        "time in the native core per operation (measure, grep, line_range, json_query, full, stash_search)",
    ),
}

# Savings field -> (the metric that reports it, the attributes that single the field out of a metric
# several fields share). The ledger adds each figure to the totals and to its metric through this.
SAVINGS_METRICS: Mapping[str, tuple[str, Mapping[str, str]]] = {
    "offloads": ("strands_offload.offloads", {}),
    "tokens_kept_out": ("strands_offload.offload.tokens_kept_out", {}),
    "bytes_stored": ("strands_offload.offload.bytes_stored", {}),
    "retrievals": ("strands_offload.retrievals", {"strands_offload.retrieval.outcome": "ok"}),
    "tokens_retrieved": ("strands_offload.retrieval.tokens_returned", {}),
    # Every outcome but "ok" (not_found, refused, error).
    "retrievals_failed": ("strands_offload.retrievals", {}),
    "edits": ("strands_offload.context.edits", {}),
    "tokens_removed": ("strands_offload.context.tokens_removed", {}),
    "tokens_added": ("strands_offload.context.tokens_added", {}),
    "cache_invalidating_edits": ("strands_offload.context.cache_invalidating_edits", {}),
    "summarizer_calls": ("strands_offload.summarizer.calls", {}),
    "summarizer_input_tokens": ("strands_offload.summarizer.tokens", {"gen_ai.token.type": "input"}),
    "summarizer_output_tokens": ("strands_offload.summarizer.tokens", {"gen_ai.token.type": "output"}),
    "summaries_ahead_unused": ("strands_offload.summarizer.ahead_unused", {}),
    "native_seconds": ("strands_offload.native.duration", {}),
    "tool_specs_hidden": ("strands_offload.tool_specs.hidden", {}),
    "tool_spec_tokens_hidden": ("strands_offload.tool_specs.tokens_hidden", {}),
}
