"""``Hide.tool_specs``: each request carries the tool definitions its turn needs, not the whole catalog.

Semantics follow the TypeScript SDK's internal ``hide:toolSpecs`` strategy. Once per invocation, at
its first model call and in the manager's own pass, the candidate specs are ranked against the
turn's query (see ``_query``) and the best ``keep`` are shown; the same choice then holds for every
later call of the invocation, so the tool block of the requests is byte-identical within it. The
choice is applied to the request through the SDK's model-invocation middleware
(``InvokeModelContext.tool_specs``); the tool registry is never changed, so a call the model makes
to a hidden tool still runs.

Always shown, whatever the ranking: specs the target leaves out (or names with ``!toolSpec::``),
the tools this package registers (:data:`NEVER_HIDDEN`), the SDK's structured-output tool, a tool
forced by ``tool_choice`` and specs that join the catalog after the invocation's choice. While the
history holds tool blocks a request never carries zero specs (Bedrock omits ``toolConfig`` for an
empty list and Converse then refuses the request): the tools the history used stay.

With prompt caching configured and the cache warm, a new invocation keeps the previous selection
unless one of the query's three best tools is missing from it. A change of the tool block rewrites
the whole cached prefix: the manager's cache view is told, so the edits ``cache_aware`` held back
go along with it.
"""

from __future__ import annotations

import logging
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal, TypedDict

from .... import _seam
from ...._ledger import PerAgent
from ...._native import json_dumps
from ... import _prompt_cache
from ..._run import PerAgent as PerAgentValue
from ..._run import bound, current_state
from ...ranking import BM25Ranker, Ranker, checked_scores, cut_query
from ...retrieval_tool import RETRIEVAL_TOOL_NAME
from ._query import is_acknowledgement, latest_user_text

if TYPE_CHECKING:
    from ...types import ContextState

__all__ = [
    "DEFAULT_KEEP",
    "NEVER_HIDDEN",
    "HideToolSpecsConfig",
    "HideToolSpecsStrategy",
    "decide_tool_specs",
    "last_request_tool_specs",
]

logger = logging.getLogger(__name__)

#: Tools of this package (and the agentic mode's) that are never hidden.
NEVER_HIDDEN: frozenset[str] = frozenset(
    {"retrieve_offloaded_content", RETRIEVAL_TOOL_NAME, "summarize_context", "truncate_context", "pin_context"}
)
DEFAULT_KEEP = 10
_ALL_SPECS = "tool_specs"
_CANDIDATE = "toolSpec::"
_SHOWN = "!toolSpec::"
_ON_FAILURE = ("all", "none")
_CONFIG_KEYS = frozenset({"search", "keep", "always_hide", "on_failure"})
#: A warm cache keeps the previous selection while it holds the query's this many best tools.
_CACHE_TOP = 3
#: Parameters (at any depth) of one spec that go into its ranked text.
_MAX_PARAMETERS = 200


class HideToolSpecsConfig(TypedDict, total=False):
    """Options of ``Hide.tool_specs``.

    Attributes:
        search: The ranker (:class:`~strands_offload.context_manager.ranking.Ranker`); default
            the native :class:`~strands_offload.context_manager.ranking.BM25Ranker`.
        keep: How many candidate specs a request shows at most (default 10).
        always_hide: Names never shown (the never-hidden tools excepted).
        on_failure: When the turn has no query, nothing matches it or the ranker fails: ``"all"``
            (default) shows every candidate, ``"none"`` shows none of them.
    """

    search: Ranker
    keep: int
    always_hide: Collection[str]
    on_failure: Literal["all", "none"]


@dataclass(frozen=True)
class _Target:
    """Which specs are candidates for hiding, and which are always shown."""

    candidates: frozenset[str] | None  # None: every spec
    shown: frozenset[str]

    @classmethod
    def parse(cls, target: Any) -> _Target:
        if isinstance(target, str):
            if target != _ALL_SPECS:
                raise ValueError(f"target must be {_ALL_SPECS!r} or a list of toolSpec entries, not {target!r}")
            return cls(None, frozenset())
        if not isinstance(target, (list, tuple)):
            raise TypeError(f"target must be {_ALL_SPECS!r} or a list of toolSpec entries, not {type(target).__name__}")
        if not target:
            raise ValueError("target is an empty list: name at least one toolSpec entry")
        every = False
        named: set[str] = set()
        shown: set[str] = set()
        for entry in target:
            if not isinstance(entry, str):
                raise ValueError(f"target entry {entry!r} is not a string")
            if entry.startswith(_SHOWN):
                name = entry[len(_SHOWN) :]
                if not name or name == "*":
                    raise ValueError(f"target entry {entry!r} must name one tool")
                shown.add(name)
            elif entry.startswith(_CANDIDATE):
                name = entry[len(_CANDIDATE) :]
                if not name:
                    raise ValueError(f"target entry {entry!r} names no tool")
                every = every or name == "*"
                named.add(name)
            else:
                raise ValueError(
                    f"target entry {entry!r} is malformed: expected 'toolSpec::<name>', 'toolSpec::*' "
                    "or '!toolSpec::<name>'"
                )
        both = sorted(named & shown)
        if both:
            raise ValueError(f"tool {both[0]!r} is both a candidate and always shown in the target")
        # Only exclusions: every other spec is a candidate.
        candidates = None if every or not named else frozenset(named)
        return cls(candidates, frozenset(shown))

    def candidate(self, name: str) -> bool:
        return name not in self.shown and (self.candidates is None or name in self.candidates)


def _config(config: Any) -> tuple[Any, int, frozenset[str], str]:
    if config is None:
        config = {}
    if not isinstance(config, Mapping):
        raise TypeError(f"config must be a dict, not {type(config).__name__}")
    unknown = sorted(set(config) - _CONFIG_KEYS)
    if unknown:
        raise TypeError(f"unknown Hide.tool_specs config key {unknown[0]!r}; known: {', '.join(sorted(_CONFIG_KEYS))}")
    search = config.get("search")
    if search is None:
        search = BM25Ranker()
    elif not callable(getattr(search, "score", None)) or not hasattr(search, "max_sources_per_query"):
        raise TypeError("search must be a ranker: an object with max_sources_per_query and async score(query, texts)")
    keep = config.get("keep", DEFAULT_KEEP)
    if isinstance(keep, bool) or not isinstance(keep, int):
        raise TypeError(f"keep must be an int, not {type(keep).__name__}")
    if keep < 1:
        raise ValueError(f"keep must be at least 1, not {keep}")
    always_hide = config.get("always_hide", ())
    if isinstance(always_hide, str) or not isinstance(always_hide, Collection):
        raise TypeError("always_hide must be a list of tool names")
    if not all(isinstance(name, str) for name in always_hide):
        raise TypeError("always_hide must hold tool names (strings)")
    on_failure = config.get("on_failure", "all")
    if on_failure not in _ON_FAILURE:
        raise ValueError(f"on_failure must be 'all' or 'none', not {on_failure!r}")
    return search, keep, frozenset(always_hide), on_failure


def _spec_text(spec: Mapping[str, Any]) -> str:
    """What a spec is ranked on: its name (twice: it weighs more), description, parameter names and descriptions."""
    name = spec.get("name")
    parts = [name, name] if isinstance(name, str) else []
    description = spec.get("description")
    if isinstance(description, str):
        parts.append(description)
    schema = spec.get("inputSchema")
    if isinstance(schema, Mapping):
        schema = schema.get("json", schema)
    pending = [schema]
    seen = 0
    while pending and seen < _MAX_PARAMETERS:
        node = pending.pop()
        properties = node.get("properties") if isinstance(node, Mapping) else None
        if not isinstance(properties, Mapping):
            continue
        for key, value in properties.items():
            seen += 1
            if isinstance(key, str):
                parts.append(key)
            if isinstance(value, Mapping):
                if isinstance(value.get("description"), str):
                    parts.append(value["description"])
                pending.append(value)
                if isinstance(value.get("items"), Mapping):
                    pending.append(value["items"])
    return "\n".join(parts)


def _spec_key(spec: Any) -> str:
    try:
        return json_dumps(spec)
    except Exception:
        return repr(spec)


def _structured_output_names(agent: Any) -> set[str]:
    registry = agent.tool_registry
    return {
        name for name, tool in registry.dynamic_tools.items() if getattr(tool, "tool_type", None) == "structured_output"
    }


def _forced_tool(tool_choice: Any) -> str | None:
    if isinstance(tool_choice, Mapping) and isinstance(tool_choice.get("tool"), Mapping):
        name = tool_choice["tool"].get("name")
        return name if isinstance(name, str) else None
    return None


def _history_tools(messages: Sequence[Any]) -> tuple[bool, set[str]]:
    """Whether the history holds tool blocks, and the names of the tools it called."""
    holds = False
    used: set[str] = set()
    for message in messages:
        for block in message.get("content") or ():
            if not isinstance(block, Mapping):
                continue
            if "toolUse" in block:
                holds = True
                name = block["toolUse"].get("name")
                if isinstance(name, str):
                    used.add(name)
            elif "toolResult" in block:
                holds = True
    return holds, used


def _has_usage(messages: Sequence[Any]) -> bool:
    """Whether the event loop projects from reported usage (an assistant message carries it)."""
    return any(m.get("role") == "assistant" and (m.get("metadata") or {}).get("usage") for m in reversed(messages))


@dataclass
class _Decision:
    """The choice of one invocation."""

    invocation: Any  # the invocation state of the invocation it was made for
    catalog: frozenset[str]
    shown: frozenset[str]
    tokens: dict[str, int]  # tokens of each spec of the catalog
    shown_tokens: int
    all_tokens: int


@dataclass
class _AgentState:
    """What the strategy keeps for one agent: in the manager's state for it (never on the strategy object)."""

    decision: _Decision | None = None
    selection: frozenset[str] | None = None  # the candidates the last choice showed
    last_specs: list[Any] | None = None  # what the last request carried
    last_tokens: int | None = None
    delta: int = 0  # this call's correction of the projection
    wired: bool = False
    docs: dict[str, tuple[str, int]] = field(default_factory=dict)  # spec key -> ranked text, tokens (its model's)


_SLOT = "tool_specs"


#: The strategy bound to each agent (the last one bound, when a manager holds several), with the
#: manager's state for the agent that holds its values (``None``: used on its own).
_BOUND = PerAgent()


class HideToolSpecsStrategy:
    """Shows each request the tool specs its turn needs (``Hide.tool_specs(...)``); see the module.

    What it keeps per agent (the invocation's choice, the last request's specs, the ranked texts,
    the ledger) lives in the manager's state for the agent, so the same strategy object given to
    two managers serving two agents works for each with its own. Used on its own (no manager), it
    keeps them per agent itself.
    """

    name = "hide:tool_specs"
    #: The manager keeps its prompt-cache view for this strategy (cache-aware selection).
    uses_prompt_cache = True
    _ledger: PerAgentValue[Any] = PerAgentValue("ledger")

    def __init__(self, target: Any = _ALL_SPECS, config: HideToolSpecsConfig | None = None) -> None:
        self._target = _Target.parse(target)
        self._search, self._keep, self._always_hide, self._on_failure = _config(config)
        self._count: int | None = None
        self._alone = PerAgent()  # per agent, only while no manager's state is bound (used on its own)
        self._ledger = None

    def when(self, *, count: int | None = None, **other: Any) -> HideToolSpecsStrategy:
        """Act only when at least ``count`` candidate specs exist (``None``: always).

        Raises:
            TypeError: For any other condition, or a ``count`` that is not an int.
            ValueError: For a ``count`` below 1.
        """
        if other:
            raise TypeError(f"Hide.tool_specs(...).when() takes only count, not {', '.join(sorted(other))}")
        if count is not None:
            if isinstance(count, bool) or not isinstance(count, int):
                raise TypeError(f"count must be an int, not {type(count).__name__}")
            if count < 1:
                raise ValueError(f"count must be at least 1, not {count}")
        self._count = count
        return self

    @property
    def conditions(self) -> dict[str, Any]:
        """The conditions ``.when()`` recorded."""
        return {} if self._count is None else {"count": self._count}

    @property
    def keep(self) -> int:
        """How many candidate specs a request shows at most."""
        return self._keep

    @property
    def search(self) -> Any:
        """The ranker."""
        return self._search

    # ------------------------------------------------------------------ binding

    def init(self, agent: Any, stash: Any = None) -> None:
        """Register the model-invocation middleware that applies the choice (once per agent)."""
        held = current_state()  # the manager's state for this agent: the middleware reads its values
        state = self._state(agent)
        _BOUND.set(agent, (self, held))
        if state.wired:
            return

        def _apply(context: Any) -> Any:
            with bound(held):
                return self._apply_to_request(context)

        state.wired = _seam.add_model_input_middleware(agent, _apply)
        if not state.wired:
            logger.warning(
                "agent_id=<%s> | the SDK's model middleware is unavailable; every tool spec is shown", agent.agent_id
            )

    def record_with(self, ledger: Any) -> None:
        """Count hidden specs in ``ledger`` (``None``: count nothing), for the agent the manager works for now."""
        self._ledger = ledger

    async def apply(self, context: ContextState) -> bool:
        """The pipeline pass: nothing (the choice is made before the pipeline runs and never edits messages)."""
        return False

    def _known_state(self, agent: Any) -> _AgentState | None:
        """This strategy's state for ``agent``: in the bound manager state, else its own (``None``: none yet)."""
        held = current_state()
        if held is not None:
            slot = held.slots.get(id(self))
            return None if slot is None else slot.get(_SLOT)
        state: _AgentState | None = self._alone.get(agent)
        return state

    def _state(self, agent: Any) -> _AgentState:
        state = self._known_state(agent)
        if state is None:
            state = _AgentState()
            held = current_state()
            if held is not None:
                held.slot_for(self)[_SLOT] = state
            else:
                self._alone.set(agent, state)
        return state

    # ------------------------------------------------------------------ the choice

    async def before_model_call(self, agent: Any, invocation_state: Any, projected: int | None) -> int | None:
        """Choose at an invocation's first call; return ``projected`` corrected for the specs shown now."""
        state = self._state(agent)
        if not state.wired:
            return projected
        decision = state.decision
        if decision is None or decision.invocation is not invocation_state:
            decision = state.decision = await self._decide(agent, state, invocation_state)
        # The projection counted the specs of the last request (from its usage), or all of them.
        baseline = (
            state.last_tokens if state.last_tokens is not None and _has_usage(agent.messages) else decision.all_tokens
        )
        state.delta = decision.shown_tokens - baseline
        return None if projected is None else max(0, projected + state.delta)

    async def _documents(self, model: Any, state: _AgentState, specs: Sequence[Any]) -> list[tuple[str, int]]:
        docs = state.docs
        if len(docs) > 4 * len(specs) + 64:
            docs.clear()  # specs gone from the catalog
        out: list[tuple[str, int]] = []
        for spec in specs:
            key = _spec_key(spec)
            doc = docs.get(key)
            if doc is None:
                try:
                    tokens = int(await model.count_tokens([], tool_specs=[spec]))
                except Exception:
                    tokens = len(key) // 2
                doc = docs[key] = (_spec_text(spec), tokens)
            out.append(doc)
        return out

    async def _decide(self, agent: Any, state: _AgentState, invocation_state: Any) -> _Decision:
        specs = agent.tool_registry.get_all_tool_specs()
        names = [spec.get("name") for spec in specs]
        docs = await self._documents(agent.model, state, specs)
        tokens = {name: doc[1] for name, doc in zip(names, docs, strict=True) if isinstance(name, str)}
        protected = NEVER_HIDDEN | _structured_output_names(agent) | self._target.shown
        hidden_always = self._always_hide - protected
        candidates = [
            i
            for i, name in enumerate(names)
            if isinstance(name, str) and self._target.candidate(name) and name not in protected | hidden_always
        ]
        candidate_names = {names[i] for i in candidates}
        fixed = {n for n in names if isinstance(n, str) and n not in candidate_names and n not in hidden_always}
        selection = await self._select(agent, state, candidates, names, docs)
        state.selection = selection
        shown = fixed | selection
        holds, used = _history_tools(agent.messages)
        if not shown and holds and names:
            # Never zero specs while the history holds tool blocks: at least the tools it used.
            shown = (used & set(tokens)) or {n for n in names[:1] if isinstance(n, str)}
        catalog = frozenset(tokens)
        shown_specs = [spec for spec, name in zip(specs, names, strict=True) if name in shown]
        if state.last_specs is not None and shown_specs != state.last_specs:
            self._cache_rewritten(agent)
        return _Decision(
            invocation_state,
            catalog,
            frozenset(shown),
            tokens,
            sum(tokens[n] for n in shown if n in tokens),
            sum(tokens.values()),
        )

    async def _select(
        self, agent: Any, state: _AgentState, candidates: list[int], names: list[Any], docs: list[tuple[str, int]]
    ) -> frozenset[str]:
        """The candidates to show."""
        every = frozenset(names[i] for i in candidates)
        if self._count is not None and len(candidates) < self._count:
            return every
        fallback = every if self._on_failure == "all" else frozenset()
        if not candidates:
            return every
        query = latest_user_text(agent.messages)
        if query is not None and state.selection is not None and is_acknowledgement(query):
            return state.selection & every
        if query is None:
            return fallback
        try:
            answer = await self._search.score(cut_query(query), [docs[i][0] for i in candidates])
            scores = checked_scores(answer, len(candidates))
        except Exception as error:
            logger.warning(
                "agent_id=<%s>, error=<%s> | ranking the tool specs failed; on_failure=<%s> applies",
                agent.agent_id,
                error,
                self._on_failure,
            )
            return fallback
        ranked = sorted((k for k in range(len(candidates)) if scores[k] > 0), key=lambda k: (-scores[k], k))
        if not ranked:
            return fallback
        top = frozenset(names[candidates[k]] for k in ranked[: self._keep])
        previous = state.selection
        if previous is not None and previous != top and self._cache_warm(agent):
            best = {names[candidates[k]] for k in ranked[:_CACHE_TOP]}
            if best <= previous:
                return previous & every  # the cached prefix is worth more than a tighter choice
        return top

    def _cache_warm(self, agent: Any) -> bool:
        view = _prompt_cache.known_view(agent)
        return view is not None and not view.cold() and _prompt_cache.caching(agent.model, agent.messages)

    def _cache_rewritten(self, agent: Any) -> None:
        """A new tool block: no cached prefix can be read, so nothing waits for one to break."""
        view = _prompt_cache.known_view(agent)
        if view is not None:
            view.entries.clear()

    # ------------------------------------------------------------------ the request

    def _apply_to_request(self, context: Any) -> Any:
        """``InvokeModelStage.Input``: the request carries the invocation's choice."""
        agent = context.agent
        state = self._known_state(agent)
        decision = state.decision if state is not None else None
        if state is None or decision is None or decision.invocation is not context.invocation_state:
            if state is not None:
                state.last_specs, state.last_tokens = list(context.tool_specs), None
            return context
        keep = set(decision.shown) | _structured_output_names(agent)
        forced = _forced_tool(context.tool_choice)
        if forced is not None:
            keep.add(forced)
        specs: list[Any] = []
        hidden = hidden_tokens = 0
        for spec in context.tool_specs:
            name = spec.get("name")
            if name in keep or name not in decision.catalog:
                specs.append(spec)
            else:
                hidden += 1
                hidden_tokens += decision.tokens.get(name, 0)
        if not specs and context.tool_specs:
            holds, used = _history_tools(context.messages)
            if holds:
                # Never zero specs while the history holds tool blocks; the invocation keeps them.
                floor = (used & decision.catalog) or {context.tool_specs[0].get("name")}
                decision.shown = decision.shown | frozenset(n for n in floor if isinstance(n, str))
                specs = [spec for spec in context.tool_specs if spec.get("name") in floor]
                hidden -= len(specs)
                hidden_tokens -= sum(decision.tokens.get(spec.get("name"), 0) for spec in specs)
        state.last_specs = specs
        state.last_tokens = sum(decision.tokens.get(spec.get("name"), 0) for spec in specs)
        ledger = self._ledger
        if ledger is not None and hidden:
            ledger.tool_specs_hidden(agent, context.invocation_state, hidden, hidden_tokens)
        projected = context.projected_input_tokens
        if projected is not None:
            projected = max(0, projected + state.delta)
        return context.replace(tool_specs=specs, projected_input_tokens=projected)

    def last_request_specs(self, agent: Any) -> list[Any] | None:
        """The specs the agent's last request carried (``None`` before its first)."""
        state = self._known_state(agent)
        return None if state is None or state.last_specs is None else list(state.last_specs)


async def decide_tool_specs(
    strategies: Sequence[Any], agent: Any, invocation_state: Any, projected: int | None, ledger: Any
) -> int | None:
    """The manager's hook before its pass: each ``Hide.tool_specs`` chooses; the projection, corrected."""
    for strategy in strategies:  # the caller binds the agent's state (the manager's) while this runs
        if isinstance(strategy, HideToolSpecsStrategy):
            strategy.record_with(ledger)
            projected = await strategy.before_model_call(agent, invocation_state, projected)
    return projected


def last_request_tool_specs(agent: Any) -> list[Any]:
    """The tool specs of the agent's last request when a ``Hide.tool_specs`` chose them, else the registry's."""
    found: tuple[HideToolSpecsStrategy, Any] | None = _BOUND.get(agent)
    specs = None
    if found is not None:
        strategy, held = found
        with bound(held):
            specs = strategy.last_request_specs(agent)
    return specs if specs is not None else list(agent.tool_registry.get_all_tool_specs())
