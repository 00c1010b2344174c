"""Summary requests that read the agent's cached prefix (``Offload.summarize(..., cache_aligned=True)``).

A plain summary request sends its own system prompt, no tools and the span flattened into one user
message: the provider reads none of it from the cache, and with caching configured writes all of
it. The aligned request is the agent's own request cut short: the same system prompt and tool
specs, the conversation up to the last live cache point at or before the end of the span, and at
that point's message (a user message, where the SDK put the point) a cache point where it was,
then the instruction and the rest of the span as text. The provider serves everything up to the
point from the cache; roles still alternate and no tool call loses its result.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from .... import _seam
from ... import _prompt_cache
from ...methods.summarize import aligned_instruction, flatten_messages
from ..hide.tool_specs import last_request_tool_specs

__all__ = ["aligned_request"]


def aligned_request(agent: Any, group: Sequence[Any], config: Mapping[str, Any] | None) -> list[Any] | None:
    """The messages of the aligned request summarizing ``group``, or ``None`` when none can share the cache.

    ``None`` when the agent's model caches nothing, no live cache point lies at or before the end of
    the span, or the part of the span inside the cached prefix is not one unbroken run of messages
    (a pinned message in it).
    """
    messages = agent.messages
    view = _prompt_cache.known_view(agent)
    if view is None or view.cold() or not _prompt_cache.caching(agent.model, messages):
        return None
    position = {id(message): index for index, message in enumerate(messages)}
    indexes = sorted(position[id(message)] for message in group if id(message) in position)
    if not indexes:
        return None
    points = [point for point in view.live_points(messages) if point <= indexes[-1]]
    if not points:
        return None
    cut = points[-1]
    inside = [index for index in indexes if index <= cut]
    if not inside or inside != list(range(inside[0], cut + 1)):
        return None
    rest = [messages[index] for index in indexes if index > cut]
    closing: list[Any] = [*messages[cut]["content"], {"cachePoint": {"type": "default"}}]
    closing.append({"text": aligned_instruction(config, inside[0] + 1, cut + 1, bool(rest))})
    if rest:
        closing.extend([{"text": "<content>"}, *flatten_messages(rest), {"text": "</content>"}])
    return [*messages[:cut], {"role": messages[cut]["role"], "content": closing}]


def agent_request_parts(agent: Any) -> dict[str, Any]:
    """The tool specs and system prompt the agent's own requests carry (the specs of its last request)."""
    return {
        "tool_specs": last_request_tool_specs(agent),
        "system_prompt": agent.system_prompt,
        "system_prompt_content": _seam.system_prompt_content(agent),
    }
