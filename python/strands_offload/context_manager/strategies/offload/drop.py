"""Drop: blocks become a ``[Dropped]`` marker; at message level, old messages are removed."""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

from strands.experimental.context_manager import OffloadConditions, OffloadTarget

from ... import _media
from ...stash import format_refs
from .base import BaseOffloadStrategy

if TYPE_CHECKING:
    from strands.agent.agent import Agent

__all__ = ["DROPPED_MARKER", "DropStrategy"]

logger = logging.getLogger(__name__)

DROPPED_MARKER = "[Dropped]"


class DropStrategy(BaseOffloadStrategy):
    """Replaces matching blocks by ``[Dropped]`` and their stash references.

    Dropping is not idempotent, as in the reference: a dropped block still measures above a zero
    threshold and is replaced again by an equal block on the next pass.
    """

    def __init__(self, target: OffloadTarget | None = None, conditions: OffloadConditions | None = None) -> None:
        super().__init__(target, conditions)

    @property
    def name(self) -> str:
        """``offload:drop``."""
        return "offload:drop"

    def _rebuild(self, conditions: OffloadConditions) -> DropStrategy:
        clone = DropStrategy(self._target, conditions)
        clone._encoding = self._encoding
        return clone

    def _removal_marker(self, count: int) -> str:
        return f"[Dropped: {count} {'message' if count == 1 else 'messages'}]"

    async def _replace_block(
        self, block: Any, tokens: int, message: Any, agent: Agent, stash_refs: list[str]
    ) -> Any | None:
        marker = DROPPED_MARKER + format_refs(stash_refs)
        if "toolResult" in block:
            result = block["toolResult"]
            logger.debug("tool_use_id=<%s> | tool result dropped from context", result["toolUseId"])
            return {
                "toolResult": {
                    "toolUseId": result["toolUseId"],
                    "status": result["status"],
                    "content": [{"text": marker}],
                }
            }
        rule = _media.rule_of(agent)
        if rule is not None and _media.is_media(block):
            return _media.placeholder(block, rule, stash_refs)  # media_tokens: say what was there
        logger.debug("tracking_id=<%s> | block dropped from context", message.get("tracking_id"))
        return {"text": marker}
