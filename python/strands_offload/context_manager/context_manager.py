"""``ContextManager``: the strategy pipeline bound to an agent.

It is a subclass of the SDK's public ``ContextManager`` because ``strands.Agent`` accepts only
instances of that class (and the session manager looks for it there); everything it does is
ours: the stash, the pipeline run on each model call, overflow recovery, the retrieval tool.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any, Literal, cast

from strands.hooks.events import (
    AfterInvocationEvent,
    AfterModelCallEvent,
    AgentInitializedEvent,
    BeforeModelCallEvent,
    MessageAddedEvent,
)
from strands.plugins import Plugin
from strands.types.exceptions import ContextWindowOverflowException

from .. import _seam
from .._heuristic import counter_for
from .._ledger import Ledger, PerAgent
from ..storage.in_memory_storage import InMemoryStorage
from ..storage.storage import is_ephemeral
from ..telemetry import Savings
from . import _media, _prompt_cache
from ._edits import EditRecorder
from ._measure import Measure, is_ours
from ._persist import (
    RECIPE_KEY,
    ReductionLog,
    drop_rule,
    rebuild,
    restore_stash,
    still_describes,
    truncate_rule,
)
from ._run import AgentState, Edit, Run, bound
from .presets import CONTEXT_MANAGER_PRESETS, MANAGER_PRESETS, resolve_strategies
from .retrieval_tool import create_retrieval_tool, track_retrieval_calls
from .stash import Stash
from .strategies.hide.tool_specs import decide_tool_specs
from .strategies.offload.base import BaseOffloadStrategy
from .strategies.offload.drop import DropStrategy
from .strategies.offload.truncate import EmergencyTruncateStrategy, TruncateStrategy
from .types import ContextState, ContextStrategy, StashConfig

if TYPE_CHECKING:
    from strands.agent.agent import Agent

__all__ = ["CONTEXT_MANAGER_PRESETS", "ContextManager", "ContextManagerStrategy"]

logger = logging.getLogger(__name__)

ContextManagerStrategy = Literal["auto", "agentic"]

_MAX_OVERFLOW_RETRIES = 3
_TOKENIZERS = ("cl100k_base", "o200k_base", "auto")


def _bind_strategy(strategy: Any, agent: Any, stash: Stash | None) -> None:
    """Call a strategy's optional ``init``: with the stash, or with the agent alone when it refuses that."""
    init = getattr(strategy, "init", None)
    if init is None:
        return
    try:
        init(agent, stash=stash)
    except TypeError:
        init(agent)


class ContextManager(_seam.reference_context_manager_class()):  # type: ignore[misc]
    """Keeps an agent's conversation within its context window with an ordered strategy pipeline.

    Pass it as ``Agent(context_manager=...)``. On each model call the strategies run in order
    (the emergency truncation always last); on a context-window overflow they run again and the
    call is retried, at most three times in a row.

    Args:
        strategies: Strategies and preset names, in order. ``None``: truncate tool results above
            1,500 tokens to 750-token previews, then summarize all but the 4 most recent messages
            at 85% utilization.
        stash: ``None`` / ``True``: keep originals (in the agent's storage, else in memory) and
            offer ``retrieve_context``; ``False``: neither; a ``StashConfig`` to choose the storage
            or turn the tool off.
        tokenizer: Beyond the reference: ``"cl100k_base"``, ``"o200k_base"`` or ``"auto"`` (from
            the agent's model) measure block thresholds and cut previews in exact BPE tokens.
            Utilization still comes from the usage the provider reports.
        stash_search: Beyond the reference: ``retrieve_context`` also takes a ``query`` without a
            reference and answers with up to 10 references to matching stashed originals.
        telemetry: Beyond the reference: record edits, retrievals and summarizer calls as
            OpenTelemetry metrics and spans and in :meth:`savings`; ``False`` records nothing.
        meter_provider: The OpenTelemetry meter provider to use (default: the global one).
        tracer_provider: The OpenTelemetry tracer provider to use (default: the global one).
        persist_reductions: Beyond the reference: with a message-log session manager (file, S3,
            AgentCore memory), record the pipeline's edits in the agent state, so that an agent
            restored from the session starts with the messages the live one had after its last
            reduction (and summarizes nothing twice). Stashed originals are rebuilt from the log
            where the stash did not outlive the process; a reference neither holds, a recipe not
            of ours, and a stash storage that fails twice (retried once) raise
            :class:`ReductionRestoreError` when the agent is restored.
        media_tokens: Beyond the reference: ``"auto"``, ``"anthropic"``, ``"openai"`` or ``"gemini"``
            count images, documents and videos as that provider bills them (``"auto"``: from the
            agent's model; see ``docs/design/media-tokens.md``) in every utilization decision, and
            keep the summarizer's request within the window. Per-block thresholds still count text.
        clock: Beyond the reference: seconds for the prompt cache's lifetimes (``cache_aware``,
            ``cache_aligned``); default a clock that counts the time the system spends suspended,
            as the provider's cache does. Simulations pass their own.
    """

    def __init__(
        self,
        *,
        strategies: list[ContextStrategy | str] | None = None,
        stash: StashConfig | bool | None = None,
        tokenizer: str | None = None,
        stash_search: bool = False,
        telemetry: bool = True,
        meter_provider: Any = None,
        tracer_provider: Any = None,
        persist_reductions: bool = False,
        media_tokens: str | None = None,
        clock: Callable[[], float] | None = None,
    ) -> None:
        if tokenizer is not None and tokenizer not in _TOKENIZERS:
            raise ValueError(f"tokenizer must be one of {', '.join(_TOKENIZERS)} or None, not {tokenizer!r}")
        chosen = resolve_strategies(strategies) if strategies is not None else MANAGER_PRESETS["auto"].strategies()
        self._strategies: list[Any] = [*chosen, EmergencyTruncateStrategy()]
        config: StashConfig | None = stash if isinstance(stash, dict) else None
        self._stash_disabled = stash is False
        self._stash_explicit_storage: Any = config.get("storage") if config else None
        self._enable_retrieval_tool = stash is not False and (config.get("retrieval_tool", True) if config else True)
        self._tokenizer = tokenizer
        self._stash_search = stash_search
        self._agentic = False
        self._stash: Stash | None = None
        self._stash_is_durable = False
        self._retrieval_tool_use_ids: set[str] = set()
        self._backfill_done = False
        self._ledger = Ledger(enabled=telemetry, meter_provider=meter_provider, tracer_provider=tracer_provider)
        self._recorder: EditRecorder | None = None
        self._persist = bool(persist_reductions)
        self._media_tokens = _media.check_option(media_tokens)
        # Some strategy follows the provider's prompt cache (cache_aware, cache_aligned).
        self._follows_cache = any(getattr(s, "uses_prompt_cache", False) for s in self._strategies)
        self._reductions: ReductionLog | None = None
        self._rule_of: dict[int, int] = {}
        self._recipe: Any = None
        self._clock = clock if clock is not None else _prompt_cache.suspend_counting_clock()
        self._agents = PerAgent()  # agent -> AgentState
        Plugin.__init__(self)

    @property
    def stash(self) -> Stash | None:
        """The stash, once bound to an agent (``None`` when disabled)."""
        return self._stash

    @property
    def stash_is_durable(self) -> bool:
        """Whether the stash outlives the process (its storage is not marked ephemeral)."""
        return self._stash_is_durable

    def _agent_state(self, agent: Any) -> AgentState:
        """This manager's state for ``agent`` (made on first use; the cache view with its model's lifetime)."""
        state: AgentState | None = self._agents.get(agent)
        if state is None:
            state = AgentState()
            if self._follows_cache:
                state.view = _prompt_cache.CacheView(_prompt_cache.lifetime(agent.model), self._clock, state.changes)
            self._agents.set(agent, state)
        return state

    def cache_view_of(self, agent: Any) -> _prompt_cache.CacheView | None:
        """The prompt cache view this manager keeps for ``agent`` (``None`` when no strategy follows the cache)."""
        return self._agent_state(agent).view if self._follows_cache else None

    def savings(self, agent: Agent | None = None) -> Savings:
        """What this manager's edits removed and added, and what was retrieved, for one agent or all."""
        return self._ledger.savings(agent)

    @property
    def strategies(self) -> list[Any]:
        """The pipeline, in order (the emergency truncation last)."""
        return list(self._strategies)

    @staticmethod
    def from_strategy(strategy: Any, **options: Any) -> Any:
        """A manager for an ``Agent(context_manager=...)`` value.

        Args:
            strategy: ``"auto"``, ``"agentic"``, a ``ContextManagerConfig`` dict, a manager
                (returned as is), or ``False`` / ``None`` (no manager).
            **options: Beyond the reference: keyword options of ours (``persist_reductions``,
                ``tokenizer``, ...) for the manager a preset or a dict builds.

        Raises:
            ValueError: For an unknown preset string or an unsupported value.
            TypeError: For a dict with keys a manager does not take, or options given with a
                manager or with no manager.
        """
        if options and (strategy is None or strategy is False or not isinstance(strategy, (str, dict))):
            raise TypeError(f"options apply to a preset name or a config dict, not to {strategy!r}")
        if strategy is None or strategy is False:
            return None
        if isinstance(strategy, _seam.reference_context_manager_class()):
            return strategy  # ours or the SDK's: the Agent takes either as it is
        if isinstance(strategy, str):
            preset = MANAGER_PRESETS.get(strategy)
            if preset is None:
                valid = ", ".join(repr(p) for p in CONTEXT_MANAGER_PRESETS)
                raise ValueError(f'Unknown context_manager preset: "{strategy}". Valid presets: {valid}')
            manager = ContextManager(strategies=preset.strategies(), **options)
            manager._agentic = preset.agentic  # registers the agentic tools and middleware when bound
            return manager
        if not isinstance(strategy, dict):
            raise ValueError(
                f"Unsupported context_manager value: {strategy!r}. "
                "Supported: 'auto', 'agentic', ContextManagerConfig dict, ContextManager instance, or False"
            )
        return ContextManager(**strategy, **options)

    # ------------------------------------------------------------------ binding

    def init_agent(self, agent: Agent) -> None:
        """Bind to ``agent``: stash, arrival hooks, retrieval tool, model-call hooks."""
        _media.bind(agent, self._media_tokens)
        if not self._stash_disabled:
            storage = self._stash_storage(agent)
            self._stash_is_durable = not is_ephemeral(storage)
            # A configured storage (even a falsy one, passed over above) makes a namespaced view the root.
            caller_root = self._stash_explicit_storage is not None
            self._stash = Stash(storage, agent.session_id, agent.agent_id, custom_stash_namespace=caller_root)
        encoding = counter_for(self._tokenizer, agent.model)
        if self._ledger.enabled:
            self._recorder = EditRecorder(self._ledger, encoding)
        self._bind_persistence(agent, encoding)
        if self._stash is not None:
            # Registered before the strategies' arrival hooks: originals are stored before any edit.
            stash, calls = self._stash, self._retrieval_tool_use_ids

            async def _stash_arrival(event: MessageAddedEvent) -> None:
                track_retrieval_calls(event.message, calls)
                await stash.store_message(event.message, frozenset(calls))

            agent.hooks.add_callback(MessageAddedEvent, _stash_arrival)
            if self._enable_retrieval_tool:
                self._tools.append(create_retrieval_tool(stash, search=self._stash_search, recorder=self._recorder))

        # What a strategy keeps for this agent goes into this manager's state for it (not on the
        # strategy object, which another manager may share).
        with bound(self._agent_state(agent)):
            for strategy in self._strategies:
                if isinstance(strategy, BaseOffloadStrategy):
                    strategy.set_tokenizer(encoding)
                    strategy.record_edits(self._recorder)
                _bind_strategy(strategy, agent, self._stash)

        async def _settle_arrival(event: MessageAddedEvent) -> None:
            # After the strategies' arrival hooks: the edits they made as the message arrived.
            state = self._agent_state(event.agent)
            if state.outside:
                self._settle(event.agent, state, [])

        agent.hooks.add_callback(MessageAddedEvent, _settle_arrival)

        if self._agentic:
            self._bind_agentic(agent)

        async def _before_model_call(event: BeforeModelCallEvent) -> None:
            await self._model_call(event.agent, event.invocation_state, event.projected_input_tokens)

        agent.hooks.add_callback(BeforeModelCallEvent, _before_model_call)

        retries = 0

        async def _after_model_call(event: AfterModelCallEvent) -> None:
            nonlocal retries
            if not isinstance(event.exception, ContextWindowOverflowException):
                retries = 0
                return
            if retries >= _MAX_OVERFLOW_RETRIES:
                logger.warning("agent_id=<%s> | overflow retries exhausted, not retrying", event.agent.agent_id)
                retries = 0
                return
            recovered = await self._run(event.agent, overflow=True)
            if not recovered:
                logger.warning("agent_id=<%s> | no strategy could make room, not retrying", event.agent.agent_id)
                return
            retries += 1
            event.retry = True

        agent.hooks.add_callback(AfterModelCallEvent, _after_model_call)

    # ------------------------------------------------------------------ persisted reductions

    def _bind_persistence(self, agent: Agent, encoding: Any) -> None:
        """Hooks of ``persist_reductions``; without it, only the warning for a session that used it."""
        if not self._persist or _seam.message_log_session_manager(agent) is None:

            def _warn_if_recorded(event: AgentInitializedEvent) -> None:
                if event.agent.state.get(RECIPE_KEY) is not None:
                    logger.warning(
                        "session_id=<%s> | this session recorded context reductions, but this agent's "
                        "context manager has persist_reductions off: the whole history is restored "
                        "and reduced again",
                        event.agent.session_id,
                    )

            agent.hooks.add_callback(AgentInitializedEvent, _warn_if_recorded)
            return
        refs = not self._stash_disabled
        ruled = [
            s
            for s in self._strategies
            if isinstance(s, (TruncateStrategy, DropStrategy)) and not isinstance(s, EmergencyTruncateStrategy)
        ]
        rules = [
            truncate_rule(s._truncate_config, encoding, refs) if isinstance(s, TruncateStrategy) else drop_rule(refs)
            for s in ruled
        ]
        reductions = self._reductions = ReductionLog(rules)  # how our previews are made: recorded as derived
        self._rule_of = {id(s): number for number, s in enumerate(ruled)}  # strategy -> its rule in the log

        async def _log_arrival(event: MessageAddedEvent) -> None:
            # Registered before every other arrival hook of ours, after the session manager's:
            # the blocks recorded are the ones it stored.
            reductions.arrived(event.message)

        agent.hooks.add_callback(MessageAddedEvent, _log_arrival)
        agent.hooks.add_callback(AgentInitializedEvent, lambda event: self._restore(event.agent))
        # Once per invocation, at its end: after-invocation callbacks run in reverse, so this one runs
        # before the session manager's sync (registered first), which writes the recipe with the state.
        agent.hooks.add_callback(AfterInvocationEvent, lambda event: self._record_reductions(event.agent))

    def _restore(self, agent: Agent) -> None:
        """After the session manager restored the log: rebuild the reduced messages and the stash."""
        reductions = self._reductions
        assert reductions is not None
        log = list(agent.messages)
        recipe = agent.state.get(RECIPE_KEY)
        if recipe is None:
            for message in log:  # a new session's first messages, or a session never reduced
                reductions.arrived(message)
            return
        restored = rebuild(recipe, log, agent.session_id)
        restore_stash(lambda: self._stash_originals(log, restored.references), agent.session_id)
        for message in restored.log:
            reductions.arrived(message)
        for position, index, rule in restored.derived:
            block = restored.log[position]["content"][index]
            reductions.derived_at(position, index, block, reductions.rule_index(rule))
        agent.messages[:] = restored.messages
        self._recipe = recipe  # what the session holds; the live messages are it plus the log's tail
        self._backfill_done = True  # the stash holds the log's originals; never stash a preview in their place

    async def _stash_originals(self, log: list[Any], references: list[str]) -> list[str]:
        """Stash the originals the log holds (keeping what a durable stash has); return the unresolved.

        The originals go in as their arrival put them; of ``references``, those no stash entry
        answers even then are returned.
        """
        stash = self._stash
        if stash is None:
            return references
        for message in log:
            track_retrieval_calls(message, self._retrieval_tool_use_ids)
        skip = frozenset(self._retrieval_tool_use_ids)
        for message in log:
            await stash.store_message(message, skip, keep_existing=True)
        return [key for key in references if await stash.retrieve_raw(key) is None]

    def _record_reductions(self, agent: Agent) -> None:
        """Write the recipe to the agent state when it changed (the session manager saves it at its next sync)."""
        reductions = self._reductions
        assert reductions is not None
        state = self._agent_state(agent)
        if state.outside:
            self._settle(agent, state, [])  # edits made since the last run, not settled yet
        changes = state.changes
        try:
            # The identity pass: what changed since the last model call (the answer, a redaction in place).
            changes.observe(agent.messages)
            # The journal's replacements are in the log already (_settle): only what the identity passes
            # saw change is looked through for derived blocks.
            epoch = state.recipe_epoch
            recipe = reductions.recipe(agent.messages, changes.stable_since(epoch), changes.seen_stable_since(epoch))
        except Exception:
            reductions.reuse_nothing()
            logger.warning("agent_id=<%s> | recording the reductions failed", agent.agent_id, exc_info=True)
            return
        finally:
            state.recipe_epoch = changes.epoch()
        if still_describes(self._recipe, recipe):
            return  # new messages only (or nothing reduced yet): what is recorded still holds
        try:
            agent.state.set(RECIPE_KEY, recipe)  # the state checks that the value is JSON
        except ValueError:
            logger.warning(
                "agent_id=<%s> | a reduced message holds values the agent state cannot keep (not JSON); "
                "the last recorded reductions stay, and a restore reduces the rest again",
                agent.agent_id,
            )
            return
        self._recipe = recipe

    def _stash_storage(self, agent: Agent) -> Any:
        """The configured stash storage, else the agent's, else a new in-memory one (first truthy wins)."""
        for candidate in (self._stash_explicit_storage, getattr(agent, "storage", None)):
            if candidate:
                return candidate
        return InMemoryStorage()

    def _bind_agentic(self, agent: Agent) -> None:
        """What ``Agent(context_manager="agentic")`` adds: the context tools and the usage middleware."""
        from strands.middleware.stages import InvokeModelStage

        known = agent.tool_registry.registry
        self._tools.extend(t for t in _seam.agentic_tools() if t.tool_name not in known)
        agent.add_middleware(InvokeModelStage.Input, _seam.token_usage_middleware())

    # ------------------------------------------------------------------ the pipeline

    async def _backfill(self, agent: Agent) -> None:
        """Stash, once, the messages that never passed the arrival hook (given or restored ones).

        Values already stored stay: after a restore they are the originals of today's previews.
        """
        stash = self._stash
        if stash is None or self._backfill_done:
            return
        self._backfill_done = True  # once per manager, even when a message below fails
        skip = frozenset(self._retrieval_tool_use_ids)
        for message in agent.messages:
            try:
                await stash.store_message(message, skip, keep_existing=True)
            except Exception:
                logger.warning("agent_id=<%s> | stashing an earlier message failed", agent.agent_id, exc_info=True)

    async def _model_call(
        self, agent: Agent, invocation_state: Mapping[str, Any] | None, projected_tokens: int | None
    ) -> bool:
        """What runs before each model request: the strategies, between the ledger's bookkeeping."""
        recorder = self._recorder
        if recorder is not None and recorder.ledger.tracing:
            recorder.before_request(agent, invocation_state)  # the parent of this request's edit spans
        # Hide.tool_specs chooses the request's specs first: the pipeline sees the projection of what is sent.
        ledger = self._ledger if self._ledger.enabled else None
        with bound(self._agent_state(agent)):  # what Hide.tool_specs keeps for this agent: in this manager's state
            projected_tokens = await decide_tool_specs(
                self._strategies, agent, invocation_state, projected_tokens, ledger
            )
        run = await self._pipeline(agent, projected_tokens)
        if recorder is not None:
            recorder.request_sent(agent, agent.messages)
        if run is not None and run.view is not None:
            self._note_request(agent, run)
        return run is not None and run.acted

    def _note_request(self, agent: Agent, run: Run) -> None:
        """Tell the agent's cache view what this request sends (the prefix the provider will cache)."""
        assert run.view is not None
        places = _prompt_cache.places_message_points(agent.model)
        run.view.sent(agent.messages, run.message_tokens, places_points=places)

    async def _run(self, agent: Agent, projected_tokens: int | None = None, *, overflow: bool = False) -> bool:
        """Run the strategies in order; ``True`` when any of them changed the conversation."""
        run = await self._pipeline(agent, projected_tokens, overflow=overflow)
        return run is not None and run.acted

    async def _pipeline(
        self, agent: Agent, projected_tokens: int | None = None, *, overflow: bool = False
    ) -> Run | None:
        """The strategies in order over one :class:`Run`; ``None`` when the conversation could not be counted."""
        await self._backfill(agent)
        messages = agent.messages
        model = agent.model
        state = self._agent_state(agent)
        state.changes.observe(messages)  # the one identity pass: what changed since the last run, whoever changed it
        measure = Measure(model, media=_media.rule_of(agent))
        measure.follow(messages, state)
        if projected_tokens is not None:
            tokens = projected_tokens + measure.media_after_baseline(messages)
        else:
            try:
                tokens = await measure.messages(messages)
            except Exception:
                logger.warning("agent_id=<%s> | counting tokens failed, strategies skipped", agent.agent_id)
                return None
        view = state.view
        # The SDK annotates its own Stash; strategies use ours by duck typing.
        run = Run(
            messages,
            agent,
            model.estimate_utilization(tokens),
            overflow,
            cast(Any, self._stash),
            measure=measure,
            view=view,
            state=state,
        )
        cached_end = -1
        if view is not None:
            try:
                # Growth is counted over the messages alone, as the request is noted; a retry after an
                # overflow is the same request again, no growth.
                run.message_tokens = tokens if projected_tokens is None else await measure.messages(messages)
            except Exception:
                run.message_tokens = None
            view.begin_run(None if overflow else run.message_tokens)
            cached_end = view.cached_end()
        try:
            with bound(state):  # the strategies' per-agent values: this agent's
                for strategy in self._strategies:
                    if run.acted and isinstance(strategy, EmergencyTruncateStrategy):
                        run.overflow = False  # earlier strategies made room: re-measure first
                    run.acted |= await self._apply(strategy, run, measure)
                    if view is not None and cached_end >= 0 and view.cached_end() < cached_end:
                        run.broken = True  # the cached prefix is paid for again: what waited may apply
                if view is not None and run.broken:
                    for strategy in run.held_back():
                        run.acted |= await self._apply(strategy, run, measure)
        finally:
            state.changes.settle(messages)
            self._settle(agent, state, run.journal)
        return run

    def _settle(self, agent: Agent, state: AgentState, journal: list[Edit]) -> None:
        """Settle the edits our strategies journaled, once: the agent's edits outside a run, then ``journal``.

        Into the savings ledger (counts), and into the reduction log (the previews a rule made, with
        the references the journal names).
        """
        outside = state.outside
        if outside:
            state.outside = []
            self._settle_edits(agent, outside)
        if journal:
            self._settle_edits(agent, journal)

    def _settle_edits(self, agent: Agent, edits: list[Edit]) -> None:
        recorder = self._recorder
        if recorder is not None:
            recorder.settle_journal(agent, edits)
        reductions = self._reductions
        if reductions is None:
            return
        rule_of = self._rule_of
        try:
            for edit in edits:
                if edit.kind == "replace" and edit.index is not None:
                    reductions.replaced(edit.message, edit.index, rule_of.get(id(edit.strategy)), edit.refs)
        except Exception:
            logger.warning("agent_id=<%s> | recording a reduction failed", agent.agent_id, exc_info=True)

    async def _apply(self, strategy: Any, context: ContextState, measure: Measure) -> bool:
        """One strategy's pass; a failure is logged and the pipeline goes on."""
        agent = context.agent
        try:
            acted = bool(await strategy.apply(context))
        except Exception:
            measure.forget()  # it may have changed something before failing
            if isinstance(context, Run) and context.state is not None:
                context.state.changes.observe(context.messages)
            logger.warning(
                "strategy=<%s>, agent_id=<%s> | strategy raised; the others still run",
                strategy.name,
                agent.agent_id,
                exc_info=True,
            )
            return False
        measure.strategy_ran(strategy)  # a strategy not of ours may have edited a block in place
        if not is_ours(strategy) and isinstance(context, Run) and context.state is not None:
            context.state.changes.observe(context.messages)  # it keeps no journal: anything may have changed
        if acted:
            measure.forget()
            try:
                tokens = await measure.messages(context.messages)
                context.utilization = agent.model.estimate_utilization(tokens)
                if isinstance(context, Run):
                    context.message_tokens = tokens
            except Exception:
                logger.warning("agent_id=<%s> | re-counting tokens failed", agent.agent_id, exc_info=True)
            logger.debug("strategy=<%s>, agent_id=<%s> | strategy acted", strategy.name, agent.agent_id)
        return acted
