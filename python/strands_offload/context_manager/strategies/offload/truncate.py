"""Truncate: long blocks become previews; at message level, old messages are elided.

Also the emergency truncation the manager always runs last: when the window is still full, the
oldest fifth of the conversation goes, pins or not, so the next call can be made at all.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

from strands.experimental.context_manager import OffloadConditions, OffloadTarget, TruncateConfig

from ..._edits import now_ns
from ..._measure import Measure
from ..._run import run_of
from ...methods.truncate import preview_tokens_of, requested_preview_tokens, truncated_block
from ...stash import Stash, format_refs
from ...types import ContextState, is_text_block
from ._messages import place_marker, remove_with_partners, removed_messages, restore_alternation
from .base import BaseOffloadStrategy

if TYPE_CHECKING:
    from strands.agent.agent import Agent

__all__ = ["EmergencyTruncateStrategy", "TruncateStrategy"]

logger = logging.getLogger(__name__)


def elided_marker(count: int) -> str:
    """The marker left where ``count`` messages were truncated away."""
    return f"[... {count} {'message' if count == 1 else 'messages'} elided ...]"


class TruncateStrategy(BaseOffloadStrategy):
    """Cuts each matching block down to a preview (the original goes to the stash), or elides old messages.

    The preview shows, by default, the block's first and last tokens.

    Args:
        target: Which blocks or messages may be cut.
        config: The preview's size, ``preview_tokens`` (default 1,000), and which part it shows,
            ``preview`` (default ``"head_tail"``).
        conditions: The thresholds that set it off, as ``.when()`` builds them.

    Raises:
        ValueError: For a threshold not above the preview size (truncating would not converge).
    """

    def __init__(
        self,
        target: OffloadTarget | None = None,
        config: TruncateConfig | None = None,
        conditions: OffloadConditions | None = None,
    ) -> None:
        super().__init__(target, conditions)
        self._truncate_config: TruncateConfig = config or {}
        # A threshold at or under the preview size would leave results no shorter: refuse it.
        requested = requested_preview_tokens(config)
        threshold = (conditions or {}).get("threshold")
        if isinstance(threshold, (int, float)) and threshold <= requested:
            raise ValueError(
                f"threshold ({threshold}) must be greater than preview_tokens ({requested}) "
                "to ensure truncation converges"
            )
        self._preview_tokens = preview_tokens_of(config)

    @property
    def name(self) -> str:
        """``offload:truncate``."""
        return "offload:truncate"

    def _expected_freed(self, tokens: int) -> int:
        return max(0, tokens - self._preview_tokens)

    def _rebuild(self, conditions: OffloadConditions) -> TruncateStrategy:
        clone = TruncateStrategy(self._target, self._truncate_config, conditions)
        clone._encoding = self._encoding
        return clone

    def _removal_marker(self, count: int) -> str:
        return elided_marker(count)

    async def _replace_block(
        self, block: Any, tokens: int, message: Any, agent: Agent, stash_refs: list[str]
    ) -> Any | None:
        refs = format_refs(stash_refs)
        if "toolResult" in block or is_text_block(block):
            cut = truncated_block(block, self._truncate_config, self._encoding, refs)
            if cut is None:
                return block
            if "toolResult" in block:
                logger.debug(
                    "tool_use_id=<%s>, tokens=<%s> | tool result truncated", block["toolResult"]["toolUseId"], tokens
                )
            else:
                logger.debug("tracking_id=<%s>, tokens=<%s> | text block truncated", message.get("tracking_id"), tokens)
            return cut
        logger.debug("tracking_id=<%s>, tokens=<%s> | block offloaded", message.get("tracking_id"), tokens)
        return {"text": f"[Offloaded: ~{tokens} tokens]{refs}"}


_EMERGENCY_SHARE = 0.2


class EmergencyTruncateStrategy(TruncateStrategy):
    """The pipeline's last step: drops the oldest fifth of the conversation while it overflows."""

    def __init__(self) -> None:
        super().__init__("*", {"preview": "tail"})

    @property
    def name(self) -> str:
        """``offload:emergency-truncate``."""
        return "offload:emergency-truncate"

    def init(self, agent: Agent, stash: Stash | None = None) -> None:
        """Remember the stash; no arrival hook."""
        self._stash = stash

    async def apply(self, context: ContextState) -> bool:
        """Act on overflow, or when the conversation alone fills the window."""
        if len(context.messages) <= 3:
            return False
        if not context.overflow:
            model = context.agent.model
            tokens = await self._measure_messages(context)
            if model.estimate_utilization(tokens) < 1.0:
                return False
        return await self._elide_oldest(context)

    async def _measure_messages(self, context: ContextState) -> int:
        run = run_of(context)
        measure = run.measure if run is not None and run.measure is not None else Measure(context.agent.model)
        return await measure.messages(context.messages)

    async def _elide_oldest(self, context: ContextState) -> bool:
        messages = context.messages
        if len(messages) <= 3:
            return False
        older = messages[1:]
        started, before = now_ns(), list(messages)
        count = max(1, int(len(older) * _EMERGENCY_SHARE))
        # End the cut before an assistant message: it orphans no tool result and never merges into message 0.
        if older[count]["role"] != "assistant":
            count += 1
        removed, lowest = remove_with_partners(messages, older[:count])
        if removed == 0:
            return False
        gone = removed_messages(before, messages)
        place_marker(messages, lowest, elided_marker(removed))
        restore_alternation(messages)
        self._record_removal(context, before, gone, elided_marker(removed), started)
        return True
