"""Summarize: a model's summary replaces long blocks, or many old messages at once."""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from strands.experimental.context_manager import OffloadConditions, OffloadTarget, SummarizeConfig

from ..._edits import now_ns
from ..._measure import Measure
from ...methods.summarize import flatten_messages, format_summarized, summarize, tool_result_blocks
from ...stash import format_refs
from ...types import ContextState
from ._messages import (
    place_marker,
    removable_with_partner,
    remove_with_partners,
    removed_messages,
    restore_alternation,
)
from .base import BaseOffloadStrategy

if TYPE_CHECKING:
    from strands.agent.agent import Agent

__all__ = ["SummarizeStrategy"]

logger = logging.getLogger(__name__)


class SummarizeStrategy(BaseOffloadStrategy):
    """Replaces content by a summary from ``config["model"]``, else the agent's auxiliary model.

    Args:
        target: What to summarize.
        config: ``model`` and ``system_prompt`` (both optional).
        conditions: When (see ``.when()``).
    """

    def __init__(
        self,
        target: OffloadTarget | None = None,
        config: SummarizeConfig | None = None,
        conditions: OffloadConditions | None = None,
    ) -> None:
        super().__init__(target, conditions)
        self._config: SummarizeConfig = config or {}

    @property
    def name(self) -> str:
        """``offload:summarize``."""
        return "offload:summarize"

    def _rebuild(self, conditions: OffloadConditions) -> SummarizeStrategy:
        clone = SummarizeStrategy(self._target, self._config, conditions)
        clone._encoding = self._encoding
        return clone

    def _model(self, agent: Agent) -> Any:
        return self._config.get("model") or agent.aux_model

    async def apply(self, context: ContextState) -> bool:
        """Summarize when a model is there to do it (a warning otherwise)."""
        if not self._model(context.agent):
            logger.warning("strategy=<%s> | no model to summarize with", self.name)
            return False
        return await super().apply(context)

    async def _apply_messages(self, context: ContextState, measure: Measure) -> bool:
        model = self._model(context.agent)
        messages = context.messages
        if not model or len(messages) <= 1:
            return False
        eligible = await self._eligible_messages(context, measure)
        if not eligible:
            return False
        position = {id(m): i for i, m in enumerate(messages)}
        chosen: set[int] = set()
        for message in eligible:
            index = position.get(id(message))
            if index is not None:
                chosen.update(id(m) for m in removable_with_partner(messages, index))
        group = [m for m in messages if id(m) in chosen]
        if not group:
            return False
        started, before = now_ns(), list(messages)
        tokens = await Measure(model).messages(group)
        budget = self._clear_at_least > 0 and not context.overflow
        if budget and tokens < self._clear_at_least:
            # Removing the span frees at most what it holds: the summary would be thrown away.
            logger.debug("strategy=<%s>, held=<%s> | messages hold less than clear_at_least", self.name, tokens)
            return False
        summary = await summarize(flatten_messages(group), model, self._config, on_usage=self._usage(context.agent))
        if not summary:
            return False
        if budget:
            marker_tokens = await measure.block("assistant", {"text": format_summarized("x", tokens, summary)})
            if tokens - marker_tokens < self._clear_at_least:
                return False
        removed, lowest = remove_with_partners(messages, group)
        if removed == 0:
            return False
        gone = removed_messages(before, messages)
        marker = format_summarized(f"{removed} messages", tokens, summary)
        place_marker(messages, lowest, marker)
        restore_alternation(messages)
        self._report_removal(context.agent, gone, marker, started, removed_tokens=tokens)
        logger.debug("summarized=<%s>, tokens=<%s> | messages summarized", removed, tokens)
        return True

    async def _replace_block(
        self, block: Any, tokens: int, message: Any, agent: Agent, stash_refs: list[str]
    ) -> Any | None:
        model = self._model(agent)
        if not model:
            return None
        refs = format_refs(stash_refs)
        if "toolResult" in block:
            result = block["toolResult"]
            summary = await self._summary_or_none(tool_result_blocks(result["content"]), model, message, agent)
            if not summary:
                return None
            logger.debug("tool_use_id=<%s>, tokens=<%s> | tool result summarized", result["toolUseId"], tokens)
            text = format_summarized("tool result", tokens, summary) + refs
            return {
                "toolResult": {
                    "toolUseId": result["toolUseId"],
                    "status": result["status"],
                    "content": [{"text": text}],
                }
            }
        if "text" in block:
            summary = await self._summary_or_none([{"text": block["text"]}], model, message, agent)
            if not summary:
                return None
            logger.debug("tracking_id=<%s>, tokens=<%s> | text block summarized", message.get("tracking_id"), tokens)
            return {"text": format_summarized("text block", tokens, summary) + refs}
        if "image" in block or "document" in block:
            summary = await self._summary_or_none([block], model, message, agent)
            if summary:
                return {"text": format_summarized("media block", tokens, summary) + refs}
        logger.debug("tracking_id=<%s>, tokens=<%s> | block offloaded", message.get("tracking_id"), tokens)
        return {"text": f"[Offloaded: ~{tokens} tokens]{refs}"}

    def _usage(self, agent: Agent) -> Callable[[Mapping[str, Any] | None], None] | None:
        """What reports a summarizer call's usage to the ledger (``None`` when nothing records)."""
        recorder = self._recorder
        if recorder is None:
            return None
        return lambda usage: recorder.summarizer_call(agent, usage)

    async def _summary_or_none(self, content: list[Any], model: Any, message: Any, agent: Agent) -> str | None:
        """A summary of one block; a failure is logged and leaves the block as it is."""
        try:
            return await summarize(content, model, self._config, on_usage=self._usage(agent))
        except Exception as error:
            logger.warning(
                "tracking_id=<%s>, error=<%s> | summarizing a block failed", message.get("tracking_id"), error
            )
            return None
