"""What every offload strategy shares: targets, conditions, the per-block and per-message passes.

A strategy with a ``utilization`` condition works on whole messages (removes or summarizes them
once the window is that full); any other works block by block, and without ``preserve_recent`` it
also acts on each message as it arrives. Matching, pins, the order of work and the markers follow
the reference exactly; the measurements are native where the model counts with the SDK's
heuristic (see ``_measure``).
"""

from __future__ import annotations

import logging
import math
from abc import ABC, abstractmethod
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeVar, cast

from strands.experimental.context_manager import OffloadConditions, OffloadTarget
from strands.hooks.events import MessageAddedEvent

from ...._native import TokenCounter
from ... import _media, _prompt_cache
from ..._edits import EditRecorder, now_ns
from ..._measure import Measure
from ..._run import Edit, PerAgent, Run, bound, current_state, first_difference, run_of
from ...retrieval_tool import RETRIEVAL_TOOL_NAME
from ...stash import Stash
from ...types import ContextState, is_text_block
from ._messages import is_pinned, place_marker, remove_with_partners, removed_messages, restore_alternation

if TYPE_CHECKING:
    from strands.agent.agent import Agent

__all__ = ["BaseOffloadStrategy", "OffloadConditions", "OffloadTarget", "build_conditions"]

logger = logging.getLogger(__name__)

_S = TypeVar("_S", bound="BaseOffloadStrategy")
_NEVER_OFFLOADED = ("toolUse", "reasoningContent", "cachePoint")


def _clean(value: Any) -> int | float | None:
    """A finite number floored at 0, or ``None`` for anything else."""
    if isinstance(value, (int, float)) and math.isfinite(value):
        return max(0, value)
    return None


def build_conditions(
    *,
    threshold: int | None = None,
    utilization: float | None = None,
    preserve_recent: int | float = 0,
    clear_at_least: int | None = None,
    cache_aware: bool = False,
) -> OffloadConditions:
    """The conditions ``.when()`` records: thresholds when given, the rest when truthy."""
    given = {"threshold": threshold, "utilization": utilization, "clear_at_least": clear_at_least}
    conditions: dict[str, Any] = {name: value for name, value in given.items() if value is not None}
    if preserve_recent:  # 0 (the default) means "keep nothing back" and is not recorded
        conditions["preserve_recent"] = preserve_recent
    if cache_aware:
        conditions["cache_aware"] = True
    return conditions  # type: ignore[return-value]


def _tool_names(messages: list[Any]) -> dict[str, str]:
    """ToolUseId -> tool name, from the calls in assistant messages."""
    names: dict[str, str] = {}
    for message in messages:
        if message["role"] == "assistant":
            for block in message["content"]:
                if "toolUse" in block:
                    names[block["toolUse"]["toolUseId"]] = block["toolUse"]["name"]
    return names


def _tool_names_for(messages: list[Any], message: Any) -> dict[str, str]:
    """:func:`_tool_names` for the tool results of ``message`` alone: the calls looked up from the end back.

    The newest call of an id wins, as in :func:`_tool_names`; a message arriving after its call
    finds it a message or two back, not after a walk of the whole conversation.
    """
    wanted = {b["toolResult"]["toolUseId"] for b in message["content"] if "toolResult" in b}
    names: dict[str, str] = {}
    for index in range(len(messages) - 1, -1, -1):
        if not wanted:
            break
        earlier = messages[index]
        if earlier["role"] != "assistant":
            continue
        for block in reversed(earlier["content"]):
            if "toolUse" in block:
                use = block["toolUse"]
                if use["toolUseId"] in wanted:
                    wanted.discard(use["toolUseId"])
                    names[use["toolUseId"]] = use["name"]
    return names


@dataclass(frozen=True)
class _Target:
    """A parsed target: a kind, or tool names to include or exclude."""

    kind: Any
    include: frozenset[str] | None = None
    exclude: frozenset[str] | None = None

    @classmethod
    def parse(cls, target: Any) -> _Target:
        if not isinstance(target, list):
            return cls(target)
        included = [entry.removeprefix("tool::") for entry in target if not entry.startswith("!")]
        excluded = [entry[1:].removeprefix("tool::") for entry in target if entry.startswith("!")]
        if included and excluded:
            logger.warning(
                "includes=<%s>, excludes=<%s> | a tool target cannot both include and exclude; excludes ignored",
                included,
                excluded,
            )
            return cls(target, frozenset(included), None)
        return cls(target, frozenset(included) or None, frozenset(excluded) or None)

    def text_message(self, message: Mapping[str, Any]) -> bool:
        """Whether the text of ``message`` is targeted."""
        kind = self.kind
        if kind is None or kind == "*":
            return True
        if kind == "assistant_text" or kind == "user_text":
            role = "assistant" if kind == "assistant_text" else "user"
            return message["role"] == role and any(is_text_block(b) for b in message["content"])
        return False

    def tool_result(self, result: Mapping[str, Any], names: Mapping[str, str]) -> bool:
        """Whether a tool result (a ``toolResult`` value) is targeted."""
        kind = self.kind
        if kind == "*":
            return True
        if kind == "tool_results":
            return bool(result["status"] == "success")
        if kind == "tool_result_errors":
            return bool(result["status"] == "error")
        name = names.get(result["toolUseId"])
        if not name:
            return False
        if self.exclude:
            return name not in self.exclude
        if self.include:
            return name in self.include
        return False

    def message(self, message: Mapping[str, Any], names: Mapping[str, str]) -> bool:
        """Whether ``message`` is targeted as a whole (message-level passes, ``preserve_recent``)."""
        if self.text_message(message):
            return True
        if self.kind is None or message["role"] != "user":
            return False
        return any("toolResult" in b and self.tool_result(b["toolResult"], names) for b in message["content"])


class BaseOffloadStrategy(ABC):
    """Target routing, conditions and the two passes; subclasses say how one block is replaced.

    Args:
        target: What the strategy works on (``None`` behaves as ``"*"``).
        conditions: When it acts (see ``.when()``).

    The stash, the savings recorder and the tokenizer are kept per agent (:class:`~.._run.PerAgent`):
    the same strategy object given to two managers serving two agents works for each with its own.
    """

    _stash: PerAgent[Stash | None] = PerAgent("stash")
    _encoding: PerAgent[TokenCounter | None] = PerAgent("encoding")
    _recorder: PerAgent[EditRecorder | None] = PerAgent("recorder")

    def __init__(self, target: OffloadTarget | None = None, conditions: OffloadConditions | None = None) -> None:
        if isinstance(target, list) and not target:
            raise ValueError("Empty array target matches nothing — provide at least one target")
        self._target = target
        self._selector = _Target.parse(target)
        self._stash = None
        self._encoding = None
        self._recorder = None
        conditions = conditions or {}
        threshold = _clean(conditions.get("threshold"))
        self._threshold = int(threshold) if threshold is not None else None
        utilization = _clean(conditions.get("utilization"))
        self._utilization_threshold = float(utilization) if utilization is not None else None
        preserve = _clean(conditions.get("preserve_recent"))
        self._preserve_recent: float = float(preserve) if preserve is not None else 0
        at_least = _clean(cast(Mapping[str, Any], conditions).get("clear_at_least"))
        self._clear_at_least = int(at_least) if at_least else 0
        self._cache_aware = cast(Mapping[str, Any], conditions).get("cache_aware") is True

    @property
    @abstractmethod
    def name(self) -> str:
        """Stable name of the strategy (logs, observability)."""

    @abstractmethod
    def _rebuild(self: _S, conditions: OffloadConditions) -> _S:
        """A strategy of the same kind, target and config with ``conditions``."""

    def when(
        self: _S,
        *,
        threshold: int | None = None,
        utilization: float | None = None,
        preserve_recent: int | float = 0,
        clear_at_least: int | None = None,
        cache_aware: bool = False,
    ) -> _S:
        """A new strategy with exactly these conditions (a later ``.when()`` replaces them all).

        Args:
            threshold: Act on blocks above this many tokens.
            utilization: Act on whole messages once the window is this full (0-1).
            preserve_recent: Leave the most recent matches alone: a count, or a share when below 1.
            clear_at_least: Beyond the reference: act only when the edit frees at least this many
                tokens (prompt caches are invalidated by every edit). Ignored on arrival and on
                overflow recovery.
            cache_aware: Beyond the reference: with the model's prompt caching configured, edits
                of blocks the provider holds cached wait until what they free pays for the
                cache write they cause, the cache went cold, the window would overflow, or
                another edit of the cached prefix happens in the same turn (then all apply).
                Edits of content after the last cache point apply at once. See
                ``docs/design/prompt-cache.md``.
        """
        return self._rebuild(
            build_conditions(
                threshold=threshold,
                utilization=utilization,
                preserve_recent=preserve_recent,
                clear_at_least=clear_at_least,
                cache_aware=cache_aware,
            )
        )

    @property
    def uses_prompt_cache(self) -> bool:
        """Whether an option of this strategy needs the manager to follow the prompt cache."""
        return self._cache_aware

    @property
    def _is_message_level(self) -> bool:
        return self._utilization_threshold is not None

    # ------------------------------------------------------------------ wiring

    def init(self, agent: Agent, stash: Stash | None = None) -> None:
        """Remember the stash; a per-block strategy without ``preserve_recent`` also acts on arrival."""
        self._stash = stash
        if self._is_message_level or self._preserve_recent > 0:
            return
        state = current_state()  # the manager's for this agent: the hook reads this agent's values

        async def _on_arrival(event: MessageAddedEvent) -> None:
            with bound(state):
                await self._arrival(event)

        agent.hooks.add_callback(MessageAddedEvent, _on_arrival)

    async def _arrival(self, event: MessageAddedEvent) -> None:
        """A per-block pass over a message as it arrives."""
        try:
            messages = event.agent.messages
            index = next((i for i in range(len(messages) - 1, -1, -1) if messages[i] is event.message), -1)
            if index >= 0 and is_pinned(messages, index):
                return
            names = _tool_names_for(messages, event.message)
            message = event.message
            if not any(self._matches_block(block, message, names) for block in message["content"]):
                return  # nothing of it is targeted (a question, a call): no measure to make
            measure = Measure(event.agent.model, self._encoding)
            await self._apply_blocks(message, names, measure, event.agent, budget=False)
        except Exception:
            logger.warning("strategy=<%s> | acting on a new message failed, continuing", self.name, exc_info=True)

    def set_tokenizer(self, encoding: TokenCounter | None) -> None:
        """Measure and cut with an exact BPE encoding (``None``: the model's own counting)."""
        self._encoding = encoding

    def record_edits(self, recorder: EditRecorder | None) -> None:
        """Report summarizer calls to ``recorder`` (the manager's savings ledger); ``None`` stops it.

        Edits are not reported here: they go into the run's journal, which the manager settles.
        """
        self._recorder = recorder

    @staticmethod
    def _journal_for(run: Run | None) -> list[Edit] | None:
        """Where an edit goes: the run's journal, else (as a message arrives) the agent's edits outside a run.

        ``None`` for a strategy used on its own (no manager): nothing is recorded.
        """
        if run is not None:
            return run.journal
        state = current_state()
        return state.outside if state is not None else None

    def _record_removal(
        self,
        context: ContextState,
        before: list[Any],
        gone: list[Any],
        marker: str | None,
        started: int,
        removed_tokens: int | None = None,
    ) -> None:
        """Record in the run's journal the messages a message-level pass removed, and the marker it left.

        ``before``: the messages as the pass found them; ``removed_tokens``: the pass's own count of
        the removed messages, when it made one. A caller's own ``ContextState`` keeps no journal.
        """
        run = run_of(context)
        if run is None:
            return
        native = run.measure.take_native_seconds() if run.measure is not None else 0.0  # the run's counting so far
        run.record(
            Edit(
                "remove",
                self,
                position=first_difference(before, context.messages),
                tokens_before=removed_tokens,
                touched=tuple(gone),
                marker=marker,
                started_ns=started,
                ended_ns=now_ns(),
                native_seconds=native,
            )
        )

    # ------------------------------------------------------------------ passes

    async def apply(self, context: ContextState) -> bool:
        """Run one pass over ``context``; ``True`` when something changed."""
        self._stash = cast(Any, context.stash)  # ours, or any stash-like object a caller built
        measure = self._measure_of(context)
        if self._is_message_level:
            assert self._utilization_threshold is not None
            if not context.overflow and context.utilization < self._utilization_threshold:
                return False
            return await self._apply_messages(context, measure)
        return await self._apply_per_block(context, measure)

    def _measure_of(self, context: ContextState) -> Measure:
        """The run's one measure when it counts as this strategy does, else one for this pass."""
        run = run_of(context)
        if run is not None and run.measure is not None:
            if run.measure.encoding == self._encoding and run.measure.model is context.agent.model:
                return run.measure
            return Measure(context.agent.model, self._encoding, media=run.measure.media)
        return Measure(context.agent.model, self._encoding)  # a caller's own ContextState: counted as the model does

    def _oldest_matches(self, messages: list[Any], names: Mapping[str, str]) -> list[Any]:
        """Matching messages except the most recent ``preserve_recent`` of them."""
        matches = [m for m in messages if self._selector.message(m, names)]
        keep = self._preserve_recent
        kept = math.ceil(len(matches) * keep) if 0 < keep < 1 else int(keep)
        if kept <= 0:
            return matches
        return [] if kept >= len(matches) else matches[:-kept]

    async def _apply_per_block(self, context: ContextState, measure: Measure) -> bool:
        messages = context.messages
        # Only blocks above the threshold are ever replaced: when the native pass can say which
        # messages hold one (usually none), the others need no further look.
        holding = measure.holding_more_than(messages, self._threshold or 0)
        if holding is not None and not holding:
            return False
        names = _tool_names(messages)
        candidates = list(enumerate(messages)) if holding is None else [(i, messages[i]) for i in holding]
        if self._preserve_recent > 0:
            oldest = {id(m) for m in self._oldest_matches(messages, names)}
            candidates = [(i, m) for i, m in candidates if id(m) in oldest]
        budget = self._clear_at_least > 0 and not context.overflow
        found: list[tuple[Any, list[tuple[int, int]]]] = []
        for index, message in candidates:
            if not is_pinned(messages, index):
                found.append((message, await self._blocks_above(message, names, measure)))
        if self._cache_aware:
            found = await self._hold_back(context, measure, found)
        if budget:
            # No replacement frees more than its block holds: when all of them together hold less
            # than the target, the edit is refused whatever the replacements; skip making them
            # (a summarizer call each).
            held = sum(tokens for _, blocks in found for _, tokens in blocks)
            if held < self._clear_at_least:
                logger.debug("strategy=<%s>, held=<%s> | blocks hold less than clear_at_least", self.name, held)
                return False
        plan: list[tuple[Any, int, Any, int]] = []
        started = now_ns()
        for message, blocks in found:
            plan.extend(await self._replacements(message, blocks, context.agent))
        return await self._commit(plan, measure, budget, context.agent, started, run_of(context))

    async def _hold_back(
        self, context: ContextState, measure: Measure, found: list[tuple[Any, list[tuple[int, int]]]]
    ) -> list[tuple[Any, list[tuple[int, int]]]]:
        """``cache_aware``: ``found`` without the edits of the cached prefix that should wait."""
        agent = context.agent
        run = run_of(context)
        view = run.view if run is not None else None
        messages = context.messages
        if run is None or context.overflow or view is None or run.broken or view.cold():
            return found
        if not _prompt_cache.caching(agent.model, messages):
            return found
        end = view.cached_end()
        position = {id(m): i for i, m in enumerate(messages)}
        inside = [(message, blocks) for message, blocks in found if blocks and position[id(message)] <= end]
        first = min((position[id(message)] for message, _ in inside), default=end)
        if not inside or await self._edit_pays(context, measure, view, inside, first, end):
            return found
        run.record(Edit("held", self))
        logger.debug("strategy=<%s>, messages=<%d> | edits of the cached prefix wait", self.name, len(inside))
        return [(message, blocks) for message, blocks in found if position[id(message)] > end]

    async def _edit_pays(
        self,
        context: ContextState,
        measure: Measure,
        view: _prompt_cache.CacheView,
        inside: list[tuple[Any, list[tuple[int, int]]]],
        first: int,
        end: int,
    ) -> bool:
        """Whether editing ``inside`` now is due: the window forces it, or what it frees pays for the write."""
        messages = context.messages
        limit: int | None = getattr(context.agent.model, "context_window_limit", None)
        if not limit:
            return True  # no window to plan against: the option stays out of the way
        tokens = await self._request_tokens(context.agent, messages, measure)
        growth = view.growth_per_call()
        if growth is None:
            return tokens >= limit  # no growth seen yet: wait one request, unless already over
        if tokens + growth >= limit:
            return True  # the next request would overflow the window
        freed = sum(self._expected_freed(held) for _, blocks in inside for _, held in blocks)
        rewrite = max(0, await measure.messages(messages[first : end + 1]) - freed)
        calls = (limit - tokens) / growth if growth > 0 else math.inf
        premium = _prompt_cache.write_price(context.agent.model) - _prompt_cache.READ_PRICE
        return bool(freed * _prompt_cache.READ_PRICE * calls >= premium * rewrite)

    @staticmethod
    async def _request_tokens(agent: Agent, messages: list[Any], measure: Measure) -> int:
        """What the model call will send: the event loop's projection, system prompt and tool specs included.

        With ``media_tokens`` on, the media the projection misses too. The messages alone when it
        cannot be made (a model whose counting fails).
        """
        try:
            return await _media.projected_input_tokens(agent, messages)
        except Exception:
            logger.debug("agent_id=<%s> | projecting the request failed, counting the messages", agent.agent_id)
            return await measure.messages(messages)

    def _expected_freed(self, tokens: int) -> int:
        """Tokens an edit of a block holding ``tokens`` is expected to free (all of them by default)."""
        return tokens

    async def _apply_blocks(
        self, message: Any, names: Mapping[str, str], measure: Measure, agent: Agent, *, budget: bool
    ) -> bool:
        started = now_ns()
        plan = await self._plan_blocks(message, names, measure, agent)
        return await self._commit(plan, measure, budget, agent, started)

    def _matches_block(self, block: Mapping[str, Any], message: Mapping[str, Any], names: Mapping[str, str]) -> bool:
        if any(kind in block for kind in _NEVER_OFFLOADED):
            return False
        if is_text_block(block):
            return self._selector.text_message(message)
        if "toolResult" in block:
            result = block["toolResult"]
            if self._stash and names.get(result["toolUseId"]) == RETRIEVAL_TOOL_NAME:
                return False  # retrieving what was offloaded must not be offloaded again
            return self._target is None or self._selector.tool_result(result, names)
        return self._target is None or self._target == "*"

    async def _plan_blocks(
        self, message: Any, names: Mapping[str, str], measure: Measure, agent: Agent
    ) -> list[tuple[Any, int, Any, int]]:
        """Replacements for the blocks of ``message`` above the threshold: (message, index, new, tokens)."""
        return await self._replacements(message, await self._blocks_above(message, names, measure), agent)

    async def _blocks_above(self, message: Any, names: Mapping[str, str], measure: Measure) -> list[tuple[int, int]]:
        """The targeted blocks of ``message`` above the threshold: (index, tokens)."""
        floor = self._threshold or 0
        content = message["content"]
        above: list[tuple[int, int]] = []
        for index in range(len(content)):
            block = content[index]
            if not self._matches_block(block, message, names):
                continue
            tokens = await measure.block(message["role"], block)
            if tokens > floor:
                above.append((index, tokens))
        return above

    async def _replacements(
        self, message: Any, blocks: list[tuple[int, int]], agent: Agent
    ) -> list[tuple[Any, int, Any, int]]:
        """The replacements of ``blocks`` of ``message`` whose originals are stored: (message, index, new, tokens)."""
        content = message["content"]
        plan: list[tuple[Any, int, Any, int]] = []
        for index, tokens in blocks:
            block = content[index]
            refs = self._stash.refs_for(block, message, index) if self._stash else []
            replacement = await self._replace_block(block, tokens, message, agent, refs)
            if replacement is None or replacement is block:
                continue
            if self._stash is not None and not await self._stash.ensure(block, message, index):
                continue  # the original is not stored: keep it in context rather than lose it
            plan.append((message, index, replacement, tokens))
        return plan

    async def _commit(
        self,
        plan: list[tuple[Any, int, Any, int]],
        measure: Measure,
        budget: bool,
        agent: Agent,
        started: int,
        run: Run | None = None,
    ) -> bool:
        if not plan:
            return False
        if budget:
            freed = 0
            for _, _, replacement, tokens in plan:
                freed += tokens - await measure.block("user", replacement)
            if freed < self._clear_at_least:
                logger.debug("strategy=<%s>, freed=<%s> | edit too small for the cache it breaks", self.name, freed)
                return False
        journal = self._journal_for(run)
        native = measure.take_native_seconds() if journal is not None else 0.0  # reported with the first edit
        stash = self._stash
        for message, index, replacement, tokens in plan:
            content = message["content"]
            old = content[index]
            content[index] = replacement
            if journal is None:
                continue
            edit = Edit(
                "replace",
                self,
                message,
                index,
                tokens_before=tokens,
                refs=tuple(stash.refs_for(old, message, index)) if stash else (),
                block=replacement,
                same=old == replacement,
                started_ns=started,
                ended_ns=now_ns(),
                native_seconds=native,
            )
            native = 0.0
            if run is not None:
                run.record(edit)
            else:
                journal.append(edit)
        measure.blocks_replaced()
        return True

    async def _eligible_messages(self, context: ContextState, measure: Measure) -> list[Any]:
        """Messages a message-level pass may take: matches past ``preserve_recent``, not first, not pinned."""
        messages = context.messages
        names = _tool_names(messages)
        position = {id(m): i for i, m in enumerate(messages)}
        if self._preserve_recent > 0:
            pool = self._oldest_matches(messages, names)
        else:
            pool = [m for m in messages if self._selector.message(m, names)]
        candidates = [m for m in pool if position[id(m)] > 0 and not is_pinned(messages, position[id(m)])]
        if not context.overflow and _media.rule_of(context.agent) is not None:
            # media_tokens: the newest tool result with media, and its call, stay (the model needs them).
            protected = _media.protected_from(messages)
            if protected is not None:
                candidates = [m for m in candidates if position[id(m)] < protected]
        if self._threshold is None:
            return candidates
        eligible = []
        for message in candidates:
            for block in message["content"]:
                if self._matches_block(block, message, names) and await measure.block(message["role"], block) > (
                    self._threshold
                ):
                    eligible.append(message)
                    break
        return eligible

    async def _apply_messages(self, context: ContextState, measure: Measure) -> bool:
        """Remove eligible messages (with their call partners) and leave the removal marker."""
        messages = context.messages
        if len(messages) <= 1:
            return False
        eligible = await self._eligible_messages(context, measure)
        if not eligible:
            return False
        started, snapshot = now_ns(), list(messages)
        if self._clear_at_least > 0 and not context.overflow:
            before = await measure.messages(messages)
            trial = list(messages)
            count, lowest = remove_with_partners(trial, eligible)
            marker = self._removal_marker(count) if count else None
            if marker:
                place_marker(trial, lowest, marker)
            if count and before - await measure.messages(trial) < self._clear_at_least:
                return False
        count, lowest = remove_with_partners(messages, eligible)
        if count == 0:
            return False
        gone = removed_messages(snapshot, messages)
        marker = self._removal_marker(count)
        if marker:
            place_marker(messages, lowest, marker)
        restore_alternation(messages)
        self._record_removal(context, snapshot, gone, marker, started)
        return True

    def _removal_marker(self, count: int) -> str | None:
        """Text left where ``count`` messages were removed (``None``: no marker)."""
        return None

    @abstractmethod
    async def _replace_block(
        self, block: Any, tokens: int, message: Any, agent: Agent, stash_refs: list[str]
    ) -> Any | None:
        """The replacement of ``block`` (``None`` or ``block`` itself: leave it)."""
