"""A model that plays a prepared script instead of calling a provider.

Used by the demo and the end-to-end tests: it streams the same events a real
provider would (message start, content blocks, stop reason, usage metadata),
so a real ``strands.Agent`` runs its full event loop, hooks and tools against
it, with no network. It keeps the SDK's base ``count_tokens`` on purpose: that
is the estimate both the reference plugin and ours see by default.
"""

from __future__ import annotations

import json
from collections.abc import AsyncGenerator, AsyncIterable, Callable
from dataclasses import dataclass, field
from typing import Any, TypeVar

from pydantic import BaseModel
from strands.models.model import Model
from strands.types.content import Messages
from strands.types.streaming import StreamEvent
from strands.types.tools import ToolSpec

T = TypeVar("T", bound=BaseModel)


@dataclass
class ToolCall:
    """One tool call the script wants the model to make."""

    name: str
    input: dict[str, Any]
    tool_use_id: str


@dataclass
class Reply:
    """What the model says on one turn: optional text, then optional tool calls."""

    text: str = ""
    tool_calls: list[ToolCall] = field(default_factory=list)


Script = Callable[[Messages], Reply]
"""Decides the next reply from the conversation so far."""


class ScriptedModel(Model):
    """A provider stand-in whose replies come from a script function.

    Args:
        script: Called with the messages of each model call; returns the reply.
        model_id: Reported in the config, like a provider's model id.
    """

    def __init__(self, script: Script, *, model_id: str = "scripted-model") -> None:
        self._script = script
        self._config: dict[str, Any] = {"model_id": model_id}
        self.calls: list[Messages] = []

    def update_config(self, **model_config: Any) -> None:
        """Merge new settings into the config."""
        self._config.update(model_config)

    def get_config(self) -> dict[str, Any]:
        """Return the config."""
        return self._config

    def structured_output(
        self, output_model: type[T], prompt: Messages, system_prompt: str | None = None, **kwargs: Any
    ) -> AsyncGenerator[dict[str, T | Any], None]:
        """Not part of any script."""
        raise NotImplementedError("ScriptedModel does not produce structured output")

    async def stream(self, messages: Messages, *args: Any, **kwargs: Any) -> AsyncIterable[StreamEvent]:
        """Stream the script's next reply as provider events, with usage metadata."""
        # Tool specs and the system prompt may come positionally or by name; usage counts them.
        tool_specs: list[ToolSpec] | None = args[0] if args else kwargs.get("tool_specs")
        system_prompt: str | None = args[1] if len(args) > 1 else kwargs.get("system_prompt")
        self.calls.append(messages)
        reply = self._script(messages)
        input_tokens = await self.count_tokens(messages, tool_specs, system_prompt)
        async for event in reply_events(reply, input_tokens):
            yield event


async def reply_events(reply: Reply, input_tokens: int) -> AsyncIterable[StreamEvent]:
    """The provider events of one scripted reply: text, tool calls, stop reason, then usage."""
    yield {"messageStart": {"role": "assistant"}}
    output_chars = 0
    if reply.text:
        output_chars += len(reply.text)
        yield {"contentBlockStart": {"start": {}}}
        yield {"contentBlockDelta": {"delta": {"text": reply.text}}}
        yield {"contentBlockStop": {}}
    for call in reply.tool_calls:
        arguments = json.dumps(call.input)
        output_chars += len(arguments)
        yield {"contentBlockStart": {"start": {"toolUse": {"toolUseId": call.tool_use_id, "name": call.name}}}}
        yield {"contentBlockDelta": {"delta": {"toolUse": {"input": arguments}}}}
        yield {"contentBlockStop": {}}
    yield {"messageStop": {"stopReason": "tool_use" if reply.tool_calls else "end_turn"}}
    output_tokens = max(1, output_chars // 4)
    yield {
        "metadata": {
            "usage": {
                "inputTokens": input_tokens,
                "outputTokens": output_tokens,
                "totalTokens": input_tokens + output_tokens,
            },
            "metrics": {"latencyMs": 1},
        }
    }
