"""strands' Bedrock and Anthropic models with stubbed clients, billed by a :class:`PromptCache`.

The model objects are the SDK's own: they format the request (cache points included, placed by
``cache_config`` exactly as in production) and parse the answer. Only the client is ours: it bills
the request through the simulated cache, records it, and answers with what a scripted responder
says. No network is touched.

The Bedrock stub needs only strands' own dependencies; the Anthropic stub also needs the
``anthropic`` package (a test extra), imported when an Anthropic stub is made: without it,
:class:`AnthropicUnavailable` says so. ``strands-offload bench`` uses the Bedrock stub alone.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from .prompt_cache import BilledCall, PromptCache, anthropic_units, bedrock_units, chars_over_four

if TYPE_CHECKING:
    from anthropic.types import ContentBlock, Message

__all__ = [
    "AnthropicUnavailable",
    "Reply",
    "StubAnthropicClient",
    "StubBedrockClient",
    "anthropic_model",
    "bedrock_model",
    "require_anthropic",
    "summary_request",
]


class AnthropicUnavailable(ImportError):
    """The Anthropic stub was asked for, and the ``anthropic`` package is not installed."""


def require_anthropic() -> None:
    """Check that the Anthropic stub can work.

    Raises:
        AnthropicUnavailable: When ``anthropic`` (or ``httpx``, which it uses) cannot be imported.
    """
    try:
        import anthropic  # noqa: F401
        import httpx  # noqa: F401
    except ImportError as error:
        raise AnthropicUnavailable(
            f"the Anthropic stub client needs the 'anthropic' package, a test extra "
            f"(pip install 'strands-offload[test]'): {error}. "
            "strands-offload bench does not need it (its sessions run on the Bedrock stub)."
        ) from error


@dataclass
class Reply:
    """A scripted answer: content blocks (Converse shape), its output tokens and a label for the bill."""

    content: list[dict[str, Any]]
    output_tokens: int | None = None
    label: str = "agent"


Responder = Callable[[dict[str, Any]], Reply]


def _texts(message: dict[str, Any]) -> list[str]:
    content = message["content"]
    if isinstance(content, str):
        return [content]
    return [block.get("text", "") for block in content if isinstance(block, dict)]


def summary_request(request: dict[str, Any]) -> str | None:
    """Which summarizer request a Converse or Messages API ``request`` is.

    ``"plain"``: the summarizer's own request (one user message opening with ``<content>``);
    ``"aligned"``: a ``cache_aligned`` one (its last message says what to summarize); ``None``:
    the agent's own request.
    """
    from ..context_manager.methods.summarize import ALIGNED_SCOPE

    texts = _texts(request["messages"][-1])
    if any(ALIGNED_SCOPE in text for text in texts):
        return "aligned"
    if len(request["messages"]) == 1 and texts and texts[0] == "<content>":
        return "plain"
    return None


def _output_tokens(reply: Reply) -> int:
    if reply.output_tokens is not None:
        return reply.output_tokens
    return chars_over_four(json.dumps(reply.content, ensure_ascii=False, default=repr))


@dataclass
class StubBedrockClient:
    """Stands for ``bedrock-runtime``: ``converse`` and ``converse_stream`` bill and answer.

    ``count_tokens`` is refused, as a region without the API refuses it, so the model counts with
    the SDK's heuristic.
    """

    cache: PromptCache
    responder: Responder
    requests: list[dict[str, Any]] = field(default_factory=list)

    def converse(self, **request: Any) -> dict[str, Any]:
        """Bill ``request`` and answer it in the non-streaming response shape."""
        self.requests.append(request)
        reply = self.responder(request)
        call = self.cache.bill(bedrock_units(request), output_tokens=_output_tokens(reply), label=reply.label)
        usage = {
            "inputTokens": call.input_tokens,
            "outputTokens": call.output_tokens,
            "totalTokens": call.prompt_tokens + call.output_tokens,
            "cacheReadInputTokens": call.cache_read,
            "cacheWriteInputTokens": call.cache_write,
        }
        stop = "tool_use" if any("toolUse" in block for block in reply.content) else "end_turn"
        return {
            "output": {"message": {"role": "assistant", "content": reply.content}},
            "stopReason": stop,
            "usage": usage,
            "metrics": {"latencyMs": 1},
        }

    def converse_stream(self, **request: Any) -> dict[str, Any]:
        """The streaming call, answered as events built from :meth:`converse`'s response."""
        from strands.models.bedrock import BedrockModel

        response = self.converse(**request)
        events = list(BedrockModel.convert_non_streaming_to_streaming(None, response))  # type: ignore[arg-type]
        return {"stream": iter(events)}

    def count_tokens(self, **_: Any) -> dict[str, Any]:
        """Refused, so the model counts with the SDK's heuristic."""
        raise RuntimeError("CountTokens is not available in this simulation")


def bedrock_model(
    cache: PromptCache,
    responder: Responder,
    *,
    model_id: str = "anthropic.claude-sonnet-4-20250514-v1:0",
    **config: Any,
) -> Any:
    """A ``BedrockModel`` whose client is a :class:`StubBedrockClient` (``streaming=False`` by default)."""
    from strands.models.bedrock import BedrockModel

    model = BedrockModel(model_id=model_id, region_name="us-east-1", **{"streaming": False, **config})
    model.client = StubBedrockClient(cache, responder)
    return model


#: The Messages API refuses a request with more ``cache_control`` blocks than this.
MAX_ANTHROPIC_CACHE_POINTS = 4


def _cache_control_count(request: dict[str, Any]) -> int:
    blocks: list[Any] = list(request.get("tools", []))
    system = request.get("system", [])
    if isinstance(system, list):
        blocks.extend(system)
    for message in request.get("messages", []):
        if isinstance(message["content"], list):
            blocks.extend(message["content"])
    return sum(1 for block in blocks if isinstance(block, dict) and "cache_control" in block)


def _bad_request(message: str) -> Exception:
    """The error the Anthropic client raises on a 400, so the model handles it as it would in production."""
    import anthropic
    import httpx

    body = {"type": "error", "error": {"type": "invalid_request_error", "message": message}}
    response = httpx.Response(400, json=body, request=httpx.Request("POST", "https://anthropic.invalid/v1/messages"))
    return anthropic.BadRequestError(message, response=response, body=body)


def _anthropic_message(reply: Reply, call: BilledCall, model_id: str, number: int) -> Message:
    """The final message of a streamed answer: ``reply``'s content as Anthropic blocks, ``call`` as usage."""
    from anthropic.types import CacheCreation, Message, TextBlock, ToolUseBlock, Usage

    content: list[ContentBlock] = []
    for block in reply.content:
        if "text" in block:
            content.append(TextBlock(type="text", text=block["text"]))
        elif "toolUse" in block:
            use = block["toolUse"]
            content.append(ToolUseBlock(type="tool_use", id=use["toolUseId"], name=use["name"], input=use["input"]))
        else:
            raise ValueError(f"the Anthropic stub answers text and toolUse blocks only, not {sorted(block)}")
    usage = Usage(
        input_tokens=call.input_tokens,
        output_tokens=call.output_tokens,
        cache_read_input_tokens=call.cache_read,
        cache_creation_input_tokens=call.cache_write,
        cache_creation=CacheCreation(
            ephemeral_5m_input_tokens=call.cache_write - call.hour_write,
            ephemeral_1h_input_tokens=call.hour_write,
        ),
    )
    return Message(
        id=f"msg_stub_{number:06d}",
        type="message",
        role="assistant",
        model=model_id,
        content=content,
        stop_reason="tool_use" if any(block.type == "tool_use" for block in content) else "end_turn",
        stop_sequence=None,
        usage=usage,
    )


def _stream_events(final: Message) -> list[Any]:
    """The events the client's message stream yields for ``final``, raw and derived, in wire order."""
    from anthropic.lib.streaming import ContentBlockStopEvent, InputJsonEvent, MessageStopEvent, TextEvent
    from anthropic.types import (
        InputJSONDelta,
        MessageDeltaUsage,
        RawContentBlockDeltaEvent,
        RawContentBlockStartEvent,
        RawMessageDeltaEvent,
        RawMessageStartEvent,
        TextBlock,
        TextDelta,
        ToolUseBlock,
    )
    from anthropic.types.raw_message_delta_event import Delta

    # message_start carries the input usage and no content yet; the output count arrives with message_delta.
    start_usage = final.usage.model_copy(update={"output_tokens": 0})
    events: list[Any] = [
        RawMessageStartEvent(
            type="message_start",
            message=final.model_copy(update={"content": [], "stop_reason": None, "usage": start_usage}),
        )
    ]
    for index, block in enumerate(final.content):
        if isinstance(block, TextBlock):
            empty: ContentBlock = TextBlock(type="text", text="")
            delta: Any = TextDelta(type="text_delta", text=block.text)
            derived: Any = TextEvent(type="text", text=block.text, snapshot=block.text)
        elif isinstance(block, ToolUseBlock):
            empty = ToolUseBlock(type="tool_use", id=block.id, name=block.name, input={})
            partial = json.dumps(block.input, ensure_ascii=False)
            delta = InputJSONDelta(type="input_json_delta", partial_json=partial)
            derived = InputJsonEvent(type="input_json", partial_json=partial, snapshot=block.input)
        else:  # pragma: no cover - _anthropic_message builds only the two kinds above
            raise TypeError(f"unexpected block {block.type}")
        events.append(RawContentBlockStartEvent(type="content_block_start", index=index, content_block=empty))
        events.append(RawContentBlockDeltaEvent(type="content_block_delta", index=index, delta=delta))
        events.append(derived)
        events.append(ContentBlockStopEvent(type="content_block_stop", index=index, content_block=block))
    events.append(
        RawMessageDeltaEvent(
            type="message_delta",
            delta=Delta(stop_reason=final.stop_reason, stop_sequence=None),
            usage=MessageDeltaUsage(output_tokens=final.usage.output_tokens),
        )
    )
    events.append(MessageStopEvent(type="message_stop", message=final))
    return events


class _StubMessageStream:
    """What ``messages.stream(...)`` gives: an async context manager, async-iterable, with the final message."""

    def __init__(self, events: list[Any], final: Message) -> None:
        self._events = events
        self._final = final

    async def __aenter__(self) -> _StubMessageStream:
        return self

    async def __aexit__(self, *_: object) -> None:
        return None

    def __aiter__(self) -> AsyncIterator[Any]:
        return self._iterate()

    async def _iterate(self) -> AsyncIterator[Any]:
        for event in self._events:
            yield event

    async def get_final_message(self) -> Message:
        """The accumulated message, usage included."""
        return self._final


class _StubMessages:
    """The ``messages`` resource of :class:`StubAnthropicClient`."""

    def __init__(self, client: StubAnthropicClient) -> None:
        self._client = client

    def stream(self, **request: Any) -> _StubMessageStream:
        """Bill ``request`` and answer it as the client's message stream would."""
        return self._client.answer(request)

    async def count_tokens(self, **_: Any) -> Any:
        """Refused, so the model counts with the SDK's heuristic."""
        raise RuntimeError("count_tokens is not available in this simulation")


@dataclass
class StubAnthropicClient:
    """Stands for ``anthropic.AsyncAnthropic``: ``messages.stream`` bills and answers.

    ``messages.count_tokens`` is refused, so the model counts with the SDK's heuristic. A request with
    more than four ``cache_control`` blocks is refused with the API's ``BadRequestError``.
    """

    cache: PromptCache
    responder: Responder
    requests: list[dict[str, Any]] = field(default_factory=list)
    default_headers: dict[str, str] = field(default_factory=dict)
    messages: _StubMessages = field(init=False, repr=False)

    def __post_init__(self) -> None:
        require_anthropic()
        self.messages = _StubMessages(self)

    def answer(self, request: dict[str, Any]) -> _StubMessageStream:
        """Bill ``request`` through the cache and build the stream of the responder's reply."""
        self.requests.append(request)
        points = _cache_control_count(request)
        if points > MAX_ANTHROPIC_CACHE_POINTS:
            raise _bad_request(
                f"A maximum of {MAX_ANTHROPIC_CACHE_POINTS} blocks with cache_control may be provided. Found {points}."
            )
        reply = self.responder(request)
        call = self.cache.bill(anthropic_units(request), output_tokens=_output_tokens(reply), label=reply.label)
        final = _anthropic_message(reply, call, str(request.get("model", "")), len(self.requests))
        return _StubMessageStream(_stream_events(final), final)


def anthropic_model(
    cache: PromptCache,
    responder: Responder,
    *,
    model_id: str = "claude-sonnet-4-20250514",
    max_tokens: int = 4096,
    **config: Any,
) -> Any:
    """An ``AnthropicModel`` whose client is a :class:`StubAnthropicClient`.

    Raises:
        AnthropicUnavailable: When the ``anthropic`` package is not installed.
    """
    require_anthropic()
    from strands.models.anthropic import AnthropicModel

    model = AnthropicModel(client_args={"api_key": "stub"}, model_id=model_id, max_tokens=max_tokens, **config)
    model.client = StubAnthropicClient(cache, responder)  # type: ignore[assignment]
    return model
