"""The tracer's message events (``Tracer._add_event_messages``) with the serialization made natively.

The tracer writes every message of the conversation into span events at the start of the agent,
cycle and model spans: three times per model call, each message through its ``serialize`` (a
Python pass over the value that probes every leaf with ``json.dumps``, then ``json.dumps`` with
``ensure_ascii=False``). The replacement keeps the tracer's own steps and methods and changes two
things:

* The text is written by the native writer under the tracer's rules (``_native._span_json``,
  ``_native._span_message_events``; see ``rust/bindings/src/span_json.rs``): exact dicts, lists and
  tuples, exact ``str``, ``int``, ``float``, ``bool`` and ``None``, exact ``bytes`` written as
  ``"<replaced>"``, non-ASCII written as it is, the tracer's event names and redaction policy names.
  A value with anything else in it (a datetime, a subclass, an unknown object, a lone surrogate, a
  container inside :func:`max_depth` others) is given to the tracer's own ``serialize``,
  which writes it or raises its own error; so is every message after a message that is not a plain
  dict with a ``str`` role and a list of dict blocks.
* An OpenTelemetry SDK span keeps only its last events (128 by default) and counts the others as
  dropped: the events it would drop on arrival are counted as dropped without being built (seam
  feature ``span-events``); the messages behind them are still checked.
* When the events go nowhere (no span, or OpenTelemetry's ``NonRecordingSpan``: no tracer provider
  configured, or a sampler that dropped the span) no text is made: the messages are only checked
  natively to be ones the tracer's ``serialize`` accepts, and any message the check declines runs
  through the tracer's own code, which raises what it raises. The text would have gone nowhere.

Both are used only while the tracer is the one we know: its ``serialize``, its encoder, ``json.dumps``
and the ``Tracer`` methods the events go through (``_add_event``, ``_redact``, the event names, the
parts mapping) unchanged, on the class and not shadowed by the instance. Anything else runs the SDK's
own method, and an error of the native code itself (never expected) restores the SDK's method for
good (the breaker given by accelerate()).
"""

from __future__ import annotations

import functools
import sys
from collections.abc import Callable
from typing import Any

from .. import _native, _seam
from ._json import json_is_stdlib

__all__ = ["make_add_event_messages", "max_depth"]

#: Nesting (containers) from which a value goes to the tracer's own code whatever the recursion limit.
MAX_DEPTH = 64


def max_depth() -> int:
    """Nesting from which a value is left to the tracer's ``serialize``.

    Its encoder recurses in Python (two or three frames a level), so it gives up with
    ``RecursionError`` somewhere below the recursion limit over two: values nested in more than an
    eighth of the limit's containers (at most :data:`MAX_DEPTH`) are left to it, to fail or not as it does.
    """
    return min(MAX_DEPTH, sys.getrecursionlimit() // 8)


def make_add_event_messages(
    original: Callable[[Any, Any, Any], None], trip: Callable[[BaseException], None]
) -> Callable[[Any, Any, Any], None]:
    """A drop-in for ``Tracer._add_event_messages``.

    Args:
        original: The SDK's method.
        trip: Called with the error when the native code fails on its own (puts the SDK's method back).

    Returns:
        The replacement.
    """
    rules = _seam.tracer_rules()
    serialize = _seam.accelerate_fallback("serialize")
    add_event = _seam.accelerate_fallback("Tracer._add_event")
    redact = _seam.accelerate_fallback("Tracer._redact")
    methods = (
        add_event,
        redact,
        _seam.accelerate_fallback("Tracer._get_event_name_for_message"),
        _seam.accelerate_fallback("Tracer._map_content_blocks_to_otel_parts"),
    )
    map_parts = methods[3]
    non_recording = _seam.non_recording_span_class()

    def add_event_messages(self: Any, span: Any, messages: Any) -> None:
        if _seam.tracer_methods(self) != methods or _seam.tracer_rules() != rules or not json_is_stdlib():
            return original(self, span, messages)
        nowhere = span is None or type(span) is non_recording  # its events would go nowhere
        depth = max_depth()
        if self.use_latest_genai_conventions:
            return _latest(self, span, messages, nowhere, depth)
        # An SDK span keeps its last `room` events: the ones before would be dropped on arrival.
        room = None if nowhere else _seam.span_event_room(span)
        skip = max(0, len(messages) - room) if room is not None and type(messages) is list else 0
        try:
            events, done = _native._span_message_events(messages, write=not nowhere, max_depth=depth, write_from=skip)
            if skip and done < len(messages):  # a message for the SDK's code: every event is made
                skip = 0
                events, done = _native._span_message_events(messages, write=True, max_depth=depth)
        except Exception as error:  # the native code's own failure: the SDK's method from now on
            trip(error)
            return original(self, span, messages)
        if done == 0:
            return original(self, span, messages)
        if not nowhere:
            for name, policy, text in events:
                add_event(self, span, name, {"content": redact(self, policy, text)})
            if skip:
                _seam.count_dropped_events(span, skip)
        if done < len(messages):
            original(self, span, messages[done:])  # its own events, or its own error
        return None

    def _latest(self: Any, span: Any, messages: Any, nowhere: bool, depth: int) -> None:
        # The SDK's mapping of each message to parts, then one text of them all.
        parts = [{"role": message["role"], "parts": map_parts(self, message["content"])} for message in messages]
        text: str | None
        try:
            if nowhere:
                text = "" if _native._span_json_ok(parts, max_depth=depth) else None
            else:
                text = _native._span_json(parts, max_depth=depth)
        except Exception as error:
            trip(error)
            text = None
        if text is None:
            text = serialize(parts)
        if nowhere:
            return
        add_event(
            self,
            span,
            "gen_ai.client.inference.operation.details",
            {"gen_ai.input.messages": redact(self, "gen_ai.input.messages", text)},
            to_span_attributes=_seam.tracer_attributes_only(self),
        )

    replacement: Callable[[Any, Any, Any], None] = functools.update_wrapper(add_event_messages, original)
    return replacement
