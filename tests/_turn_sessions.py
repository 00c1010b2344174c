"""Agent sessions for the accelerate()-of-the-turn tests and bench: a conversation of every block kind,
a model that records the exact requests it gets, and the spans an in-memory exporter receives.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterable, Iterator
from contextlib import contextmanager
from typing import Any

from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from strands import Agent, tool
from strands.agent.conversation_manager import NullConversationManager
from strands.models.model import Model
from strands.telemetry.tracer import get_tracer

PNG = bytes(range(256)) * 3
PDF = b"%PDF-1.4\n" + bytes(200)


def block_zoo(i: int) -> list[dict[str, Any]]:
    """Messages with every kind of block the SDK knows (images, documents, reasoning, citations, tools)."""
    use_id = f"tooluse_{i}"
    return [
        {"role": "user", "content": [{"text": f'Grüße {i} — 東京 😀 "quoted" \\ tab\t\u2028 \x7f ctl\x01'}]},
        {
            "role": "assistant",
            "content": [
                {"reasoningContent": {"reasoningText": {"text": f"thinking {i} ü", "signature": "sig=="}}},
                {"reasoningContent": {"redactedContent": b"\x00\xffredacted"}},
                {"text": "Let me look."},
                {"toolUse": {"toolUseId": use_id, "name": "lookup", "input": {"q": "naïve", "n": i, "f": 1.5}}},
            ],
        },
        {
            "role": "user",
            "content": [
                {
                    "toolResult": {
                        "toolUseId": use_id,
                        "status": "success",
                        "content": [
                            {"text": "résumé"},
                            {"json": {"rows": [1, 2.0, None, True, "ß"], "nested": {"k": [{"deep": "✓"}]}}},
                            {"image": {"format": "png", "source": {"bytes": PNG}}},
                            {"document": {"format": "pdf", "name": "doc", "source": {"bytes": PDF}}},
                        ],
                    }
                }
            ],
        },
        {
            "role": "assistant",
            "content": [
                {
                    "citationsContent": {
                        "citations": [
                            {
                                "title": "Source ☃",
                                "location": {"documentChar": {"documentIndex": 0, "start": 1, "end": 5}},
                                "sourceContent": [{"text": "cited ✓"}],
                            }
                        ],
                        "content": [{"text": "According to the doc…"}],
                    }
                }
            ],
        },
        {
            "role": "user",
            "content": [
                {"image": {"format": "jpeg", "source": {"bytes": PNG[:50]}}},
                {"document": {"format": "txt", "name": "notes", "source": {"bytes": "ünïcode".encode()}}},
                {"text": "and these?"},
            ],
        },
        {"role": "assistant", "content": [{"text": f"Seen {i}. 🙂"}]},
    ]


def plain_history(n: int) -> list[dict[str, Any]]:
    """``n`` plain text messages, alternating user and assistant (the bench's conversation)."""
    return [
        {"role": "user" if k % 2 == 0 else "assistant", "content": [{"text": f"message {k}: " + "lorem ipsum " * 8}]}
        for k in range(n)
    ]


class RecordingModel(Model):
    """A scripted model: a tool call on the first request of each invocation, then an answer; usage reported.

    Every request is kept as the exact text of what ``stream`` received (``repr``: bytes, key order
    and all), without the per-call state objects.
    """

    def __init__(self, *, tool_calls: bool = True, record: bool = True) -> None:
        self.requests: list[str] = []
        self._tool_calls = tool_calls
        self._record = record
        self._config: dict[str, Any] = {"model_id": "recording"}

    def update_config(self, **model_config: Any) -> None:
        self._config.update(model_config)

    def get_config(self) -> Any:
        return self._config

    def structured_output(self, *args: Any, **kwargs: Any) -> Any:
        raise NotImplementedError

    async def stream(
        self,
        messages: Any,
        tool_specs: Any = None,
        system_prompt: Any = None,
        **kwargs: Any,
    ) -> AsyncIterable[Any]:
        if self._record:
            sent = (messages, tool_specs, system_prompt, kwargs.get("tool_choice"), kwargs.get("system_prompt_content"))
            self.requests.append(repr(sent))
        last = messages[-1]["content"]
        wants_tool = self._tool_calls and not any("toolResult" in block for block in last)
        yield {"messageStart": {"role": "assistant"}}
        if wants_tool:
            start = {"toolUse": {"toolUseId": f"call_{len(messages)}", "name": "lookup"}}
            yield {"contentBlockStart": {"start": start}}
            yield {"contentBlockDelta": {"delta": {"toolUse": {"input": json.dumps({"q": "ça", "n": 1})}}}}
            yield {"contentBlockStop": {}}
            yield {"messageStop": {"stopReason": "tool_use"}}
        else:
            yield {"contentBlockStart": {"start": {}}}
            yield {"contentBlockDelta": {"delta": {"text": "Done — ✓"}}}
            yield {"contentBlockStop": {}}
            yield {"messageStop": {"stopReason": "end_turn"}}
        usage = {"inputTokens": 1000 + len(messages), "outputTokens": 12, "totalTokens": 1012 + len(messages)}
        yield {"metadata": {"usage": usage, "metrics": {"latencyMs": 1}}}


@tool
def lookup(q: str, n: int = 0) -> dict[str, Any]:
    """Look something up.

    Args:
        q: The query.
        n: How many.
    """
    return {
        "status": "success",
        "content": [
            {"text": f"found {q} ×{n} — ok"},
            {"json": {"q": q, "items": [n, n + 0.5, None], "ü": True}},
            {"image": {"format": "png", "source": {"bytes": PNG[:64]}}},
        ],
    }


def make_agent(messages: list[dict[str, Any]], model: Model, *, system_prompt: str | None = "Be brief. ✓") -> Agent:
    """An agent on ``messages`` with no conversation manager and the ``lookup`` tool."""
    return Agent(
        model=model,
        messages=messages,
        tools=[lookup],
        system_prompt=system_prompt,
        conversation_manager=NullConversationManager(),
        callback_handler=None,
    )


@contextmanager
def recorded_spans() -> Iterator[InMemorySpanExporter]:
    """The SDK's tracer pointed at a recording provider with an in-memory exporter, for the block only."""
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    tracer = get_tracer()
    before = tracer.tracer
    tracer.tracer = provider.get_tracer("strands.telemetry.tracer")
    try:
        yield exporter
    finally:
        tracer.tracer = before
        provider.shutdown()


# Span attributes that measure time or are random ids (cycle ids): left out of comparisons.
_TIMED = ("duration", "latency", "time_to_first", "_time", "Ms", "cycle_id")


def span_record(exporter: InMemorySpanExporter) -> list[Any]:
    """Names, attributes and events (name and attributes) of the finished spans; ids and times aside."""
    out = []
    for span in exporter.get_finished_spans():
        attributes = {k: v for k, v in (span.attributes or {}).items() if not any(t in k for t in _TIMED)}
        events = [(event.name, dict(event.attributes or {})) for event in span.events]
        out.append((span.name, str(span.status.status_code), attributes, events, span.dropped_events))
    return out
