"""Summarize: a model's summary replaces long blocks, or many old messages at once."""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from strands.experimental.context_manager import OffloadConditions, OffloadTarget, SummarizeConfig
from strands.hooks.events import AfterInvocationEvent, BeforeInvocationEvent, BeforeToolsEvent

from .... import _native
from ... import _media
from ..._edits import now_ns
from ..._measure import Measure
from ..._run import PerAgent, bound, current_state
from ...methods.summarize import (
    DEFAULT_SYSTEM_PROMPT,
    flatten_messages,
    format_summarized,
    summarize,
    summarize_aligned,
    tool_result_blocks,
)
from ...stash import Stash, format_refs
from ...types import ContextState
from . import _ahead, _aligned
from ._messages import (
    place_marker,
    removable_with_partner,
    remove_with_partners,
    removed_messages,
    restore_alternation,
)
from .base import BaseOffloadStrategy, _tool_names

if TYPE_CHECKING:
    from strands.agent.agent import Agent

__all__ = ["SummarizeStrategy"]

logger = logging.getLogger(__name__)


class SummarizeStrategy(BaseOffloadStrategy):
    """A model writes the text that stands in for each matching block, or for a run of old messages.

    The model is ``config["model"]`` if set, else the agent's auxiliary one.

    Args:
        target: Which blocks or messages may be summarized.
        config: Optional ``model`` (who summarizes) and ``system_prompt`` (its instructions).
        conditions: The thresholds that set it off, as ``.when()`` builds them.
        ahead: Beyond the reference: a message-level summary starts while the tools run, when the
            results to come are expected to cross the condition (see ``_ahead``).
        cache_aligned: Beyond the reference: when the summarizer is the agent's own model and its
            prompt cache holds a prefix of the span, a message-level summary is asked for in a
            request that starts as the agent's (see ``_aligned``), so the provider reads that
            prefix from its cache.
    """

    #: A summary started ahead (``ahead=True``), per agent.
    _pending: PerAgent[_ahead.Ahead | None] = PerAgent("pending")

    def __init__(
        self,
        target: OffloadTarget | None = None,
        config: SummarizeConfig | None = None,
        conditions: OffloadConditions | None = None,
        *,
        ahead: bool = False,
        cache_aligned: bool = False,
    ) -> None:
        super().__init__(target, conditions)
        self._config: SummarizeConfig = config or {}
        self._ahead = ahead
        self._cache_aligned = cache_aligned
        self._pending = None

    @property
    def name(self) -> str:
        """``offload:summarize``."""
        return "offload:summarize"

    def _rebuild(self, conditions: OffloadConditions) -> SummarizeStrategy:
        clone = SummarizeStrategy(
            self._target, self._config, conditions, ahead=self._ahead, cache_aligned=self._cache_aligned
        )
        clone._encoding = self._encoding
        return clone

    @property
    def uses_prompt_cache(self) -> bool:
        """Whether ``cache_aware`` or ``cache_aligned`` is on."""
        return self._cache_aware or self._cache_aligned

    def _model(self, agent: Agent) -> Any:
        return self._config.get("model") or agent.aux_model

    async def apply(self, context: ContextState) -> bool:
        """Summarize when a model is there to do it (a warning otherwise)."""
        try:
            if not self._model(context.agent):
                logger.warning("strategy=<%s> | no model to summarize with", self.name)
                return False
            return await super().apply(context)
        finally:
            # A summary started ahead serves this pass or none.
            await self._settle_ahead(context.agent)

    def init(self, agent: Agent, stash: Stash | None = None) -> None:
        """As every strategy; with ``ahead``, also start summaries while tools run and settle them."""
        super().init(agent, stash)
        if not (self._ahead and self._is_message_level):
            return

        state = current_state()  # the manager's for this agent: the hooks read this agent's values

        async def _before_tools(event: BeforeToolsEvent) -> None:
            with bound(state):
                await self._start_ahead(event)

        async def _settle(event: AfterInvocationEvent | BeforeInvocationEvent) -> None:
            with bound(state):
                await self._settle_ahead(event.agent)

        agent.hooks.add_callback(BeforeToolsEvent, _before_tools)
        agent.hooks.add_callback(AfterInvocationEvent, _settle)
        # Also when the next one starts: a hook of AfterInvocationEvent that raised stops the others.
        agent.hooks.add_callback(BeforeInvocationEvent, _settle)

    async def _span(self, context: ContextState, measure: Measure) -> list[Any]:
        """The messages a message-level pass over ``context`` would summarize (empty: none)."""
        messages = context.messages
        eligible = await self._eligible_messages(context, measure)
        if not eligible:
            return []
        position = {id(m): i for i, m in enumerate(messages)}
        chosen: set[int] = set()
        for message in eligible:
            index = position.get(id(message))
            if index is not None:
                chosen.update(id(m) for m in removable_with_partner(messages, index))
        return [m for m in messages if id(m) in chosen]

    async def _start_ahead(self, event: BeforeToolsEvent) -> None:
        """At a tool batch: start the summary the next model call is expected to ask for."""
        agent = event.agent
        model = self._model(agent)
        if self._pending is not None and not _ahead.on_running_loop(self._pending):
            await self._settle_ahead(agent)  # left by an invocation whose loop is gone
        if self._pending is not None or event.cancel or not model or self._utilization_threshold is None:
            return
        try:
            messages = agent.messages
            calls = [block["toolUse"] for block in event.message["content"] if "toolUse" in block]
            if not calls or not messages or messages[-1] is not event.message:
                return
            measure = Measure(agent.model, self._encoding, media=_media.rule_of(agent))
            names = _tool_names(messages)
            future = [*messages, _ahead.placeholder_results(calls)]
            # As the next model call's hooks will see it: the event loop's projection (the system
            # prompt and tool specs included), with the results to come at their expected size.
            tokens = await _media.projected_input_tokens(agent, future)
            tokens += await _ahead.expected_result_tokens(messages, calls, names, measure)
            utilization = agent.model.estimate_utilization(tokens)
            if utilization < self._utilization_threshold:
                return
            context = ContextState(future, agent, utilization, False, self._stash)  # type: ignore[arg-type]
            group = await self._span(context, measure)
            if not group or (self._clear_at_least and await Measure(model).messages(group) < self._clear_at_least):
                return
            key = _ahead.span_key(group)  # before the work starts: it summarizes what the key holds, or is dropped
            self._pending = _ahead.start(key, self._summarize_span(group, model, agent))
            logger.debug("strategy=<%s>, messages=<%d> | summary started ahead", self.name, len(group))
        except Exception:
            logger.warning("strategy=<%s> | starting a summary ahead failed", self.name, exc_info=True)

    async def _settle_ahead(self, agent: Agent) -> None:
        """Cancel and await a summary started ahead that nothing used; count it."""
        pending, self._pending = self._pending, None
        if pending is None:
            return
        await _ahead.settle(pending)
        if self._recorder is not None:
            self._recorder.ledger.summary_ahead_unused(agent)
        logger.debug("strategy=<%s> | summary started ahead was not used", self.name)

    async def _summary_of(self, group: list[Any], model: Any, agent: Agent) -> str | None:
        """The summary of ``group``: the one started ahead for exactly this span, else a new one."""
        pending = self._pending
        if pending is not None and _ahead.on_running_loop(pending) and pending.key.matches(group):
            self._pending = None
            try:
                return await pending.task
            except Exception as error:
                # Not retried ahead: summarizing now fails or succeeds as it would have.
                logger.warning("strategy=<%s>, error=<%s> | the summary started ahead failed", self.name, error)
        else:
            await self._settle_ahead(agent)
        return await self._summarize_span(group, model, agent)

    async def _summarize_span(self, group: list[Any], model: Any, agent: Agent) -> str | None:
        """A summary of the messages ``group``: cache-aligned when the option and the cache allow."""
        usage = self._usage(agent)
        rule = _media.rule_of(agent)
        if rule is not None and _native.media_tokens(group, rule):
            # media_tokens: the request holds the span's media only while they fit the summarizer's window.
            refs = _media.stash_refs(group) if self._stash is not None else None
            blocks = await self._fitted(flatten_messages(group), model, agent, rule, refs)
            return await summarize(blocks, model, self._config, on_usage=usage)
        if self._cache_aligned and model is agent.model:
            request = _aligned.aligned_request(agent, group, self._config)
            if request is not None:
                parts = _aligned.agent_request_parts(agent)
                summary = await summarize_aligned(request, model, **parts, on_usage=usage)
                if summary is not None:
                    return summary
        return await summarize(flatten_messages(group), model, self._config, on_usage=usage)

    async def _fitted(
        self, blocks: list[Any], model: Any, agent: Agent, rule: str, refs: dict[int, str] | None
    ) -> list[Any]:
        """``blocks`` with the media that do not fit the summarizer's window as placeholders."""
        window = getattr(model, "context_window_limit", None) or getattr(agent.model, "context_window_limit", None)
        if not window:
            return blocks  # no window to plan against
        text = [block for block in blocks if not _media.is_media(block)]
        request = [{"role": "user", "content": [{"text": "<content>"}, *text, {"text": "</content>"}]}]
        prompt = self._config.get("system_prompt", DEFAULT_SYSTEM_PROMPT)
        used = await Measure(model).messages(request) + -(-len(prompt) // 4)
        return _media.fit_summarizer_blocks(blocks, rule, int(window) - used, refs)

    async def _apply_messages(self, context: ContextState, measure: Measure) -> bool:
        model = self._model(context.agent)
        messages = context.messages
        if not model or len(messages) <= 1:
            return False
        group = await self._span(context, measure)
        if not group:
            return False
        started, before = now_ns(), list(messages)
        tokens = await Measure(model, media=_media.rule_of(context.agent)).messages(group)
        budget = self._clear_at_least > 0 and not context.overflow
        if budget and tokens < self._clear_at_least:
            # Removing the span frees at most what it holds: the summary would be thrown away.
            logger.debug("strategy=<%s>, held=<%s> | messages hold less than clear_at_least", self.name, tokens)
            return False
        summary = await self._summary_of(group, model, context.agent)
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
        self._record_removal(context, before, gone, marker, started, removed_tokens=tokens)
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
            content = tool_result_blocks(result["content"])
            rule = _media.rule_of(agent)
            if rule is not None and any(_media.is_media(item) for item in content):
                # media_tokens: the request holds the result's media only while they fit the window.
                refs_by_block = _media.stash_refs([{"content": [block]}]) if self._stash is not None else None
                content = await self._fitted(content, model, agent, rule, refs_by_block)
            summary = await self._summary_or_none(content, model, message, agent)
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
        rule = _media.rule_of(agent)
        if rule is not None and _media.is_media(block):
            return _media.placeholder(block, rule, stash_refs)
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
        """Summarize one block's ``content``; if the model call raises, log it and give ``None`` (block kept)."""
        try:
            return await summarize(content, model, self._config, on_usage=self._usage(agent))
        except Exception as error:
            logger.warning(
                "tracking_id=<%s>, error=<%s> | summarizing a block failed", message.get("tracking_id"), error
            )
            return None
