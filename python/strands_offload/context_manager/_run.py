"""One model call's pipeline run: the state strategies share, and the journal of their edits.

``ContextManager`` builds a :class:`Run` for each pipeline run (a model call, or an overflow
retry). It is a ``ContextState``, so a strategy of a third party sees what the reference gives it;
ours also find in it the run's one :class:`~._measure.Measure`, the agent's cache view (owned by the
manager, one per agent), the manager's per-agent state, and the journal. Each edit one of our
strategies makes is recorded in the journal as it is made (:meth:`Run.record`), which keeps the
view's idea of the unchanged prefix current for the strategies after it (the cache-aware rules); an
edit a ``cache_aware`` strategy holds back is recorded too, as ``"held"``, and the manager applies
the holders again once an edit of the cached prefix happened anyway. After the strategies the
manager settles the journal once.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar, cast, overload

from ._identity import IdentityTrail
from ._measure import Measure
from ._prompt_cache import CacheView
from .types import ContextState

__all__ = ["AgentState", "Changes", "Edit", "PerAgent", "Run", "bound", "first_difference", "run_of"]

T = TypeVar("T")

_NONE_CHANGED = 1 << 62


class Changes:
    """What changed in one agent's conversation, as a log of positions, for the state kept across calls.

    Each run starts with the one identity pass (:meth:`observe`: the first message that is not as
    the last pass or settled run left it); each edit of the journal adds its position
    (:meth:`edited`); a run's edits are written into the trail when it ends (:meth:`settle`), so
    the next pass reports only what changed since. A consumer keeps the :meth:`epoch` it was last
    valid at and asks :meth:`stable_since` how many leading messages are unchanged since then
    (cached counts, the cache view's entries, the reduction recipe).
    """

    def __init__(self) -> None:
        self._trail = IdentityTrail()
        self._dirty_from: int | None = None
        self._events: list[int] = []
        self._seen: list[int] = []  # per event: the identity pass's position, or _NONE_CHANGED for an edit

    def observe(self, messages: list[Any]) -> int:
        """The identity pass: compare ``messages`` with the trail; returns the first changed position."""
        first = int(self._trail.compare(messages))
        self._dirty_from = None  # the trail now holds the messages as they are
        self._events.append(first)
        self._seen.append(first)
        return first

    def edited(self, position: int) -> None:
        """The pipeline changed the conversation from ``position`` on (a block replaced, messages removed)."""
        self._events.append(position)
        self._seen.append(_NONE_CHANGED)
        if self._dirty_from is None or position < self._dirty_from:
            self._dirty_from = position

    def settle(self, messages: list[Any]) -> None:
        """The run is over: the trail takes its edits in (walking only from the first one)."""
        if self._dirty_from is not None:
            self._trail.update_from(messages, self._dirty_from)
            self._dirty_from = None

    def epoch(self) -> int:
        """The point in the log a consumer is valid at from now on."""
        return len(self._events)

    def stable_since(self, epoch: int) -> int:
        """How many leading messages are unchanged since ``epoch`` (a large number: none changed)."""
        events = self._events
        return min(events[epoch:], default=_NONE_CHANGED) if epoch < len(events) else _NONE_CHANGED

    def seen_stable_since(self, epoch: int) -> int:
        """:meth:`stable_since` counting only what the identity passes saw (changes no journal recorded)."""
        seen = self._seen
        return min(seen[epoch:], default=_NONE_CHANGED) if epoch < len(seen) else _NONE_CHANGED


@dataclass
class AgentState:
    """What the manager keeps per agent (never on a strategy object, which two managers may share)."""

    view: CacheView | None = None
    changes: Changes = field(default_factory=Changes)
    #: Tokens of each message (as the model counts them), valid at ``counts_epoch``.
    counts: list[int] = field(default_factory=list)
    counts_total: int = 0
    counts_epoch: int = 0
    #: Media tokens of each message under ``media_rule`` (``media_tokens=``), valid at ``media_epoch``.
    media_counts: list[int] = field(default_factory=list)
    media_total: int = 0
    media_epoch: int = 0
    media_rule: str | None = None
    #: Per block floor: the messages holding a block above it, how many messages that covered, the epoch.
    over: dict[int, tuple[list[int], int, int]] = field(default_factory=dict)
    #: Where the change log stood when the reduction recipe was last made (``persist_reductions``).
    recipe_epoch: int = 0
    #: Edits our strategies made outside a run (as a message arrived), until the manager settles them.
    outside: list[Edit] = field(default_factory=list)
    #: Per strategy object (the manager holds them, so their ids stay theirs): its values for this
    #: agent (the stash, the recorder, the tokenizer, a summary started ahead).
    slots: dict[int, dict[str, Any]] = field(default_factory=dict)

    def slot_for(self, strategy: Any) -> dict[str, Any]:
        """The values ``strategy`` keeps for this agent (made on first use)."""
        slot = self.slots.get(id(strategy))
        if slot is None:
            slot = self.slots[id(strategy)] = {}
        return slot


_BOUND: ContextVar[AgentState | None] = ContextVar("strands_offload_agent_state", default=None)


@contextmanager
def bound(state: AgentState | None) -> Iterator[None]:
    """Strategies read and write their per-agent values in ``state`` while this lasts (this task or thread only)."""
    token = _BOUND.set(state)
    try:
        yield
    finally:
        _BOUND.reset(token)


def current_state() -> AgentState | None:
    """The agent state strategies are bound to now (``None``: outside any manager's work)."""
    return _BOUND.get()


class PerAgent(Generic[T]):
    """A strategy attribute whose value is kept per agent, in the manager's state for it.

    While a manager works for an agent (:func:`bound`), reads and writes go to that agent's slot
    of the strategy, so the same strategy object serving two agents (two managers, concurrent
    tasks) keeps two values. Outside (a strategy used on its own), and before a slot has the
    value, the value last written anywhere is read, as a plain attribute would give.
    """

    def __init__(self, name: str) -> None:
        self.name = name
        self.fallback = f"_last_{name}"

    @overload
    def __get__(self, owner: None, kind: type[Any]) -> PerAgent[T]: ...
    @overload
    def __get__(self, owner: object, kind: type[Any]) -> T: ...
    def __get__(self, owner: object | None, kind: type[Any]) -> PerAgent[T] | T:
        if owner is None:
            return self
        state = _BOUND.get()
        if state is not None:
            slot = state.slots.get(id(owner))
            if slot is not None and self.name in slot:
                value: T = slot[self.name]
                return value
        return cast(T, owner.__dict__.get(self.fallback))

    def __set__(self, owner: object, value: T) -> None:
        owner.__dict__[self.fallback] = value
        state = _BOUND.get()
        if state is not None:
            state.slot_for(owner)[self.name] = value


@dataclass
class Edit:
    """One edit of a run: a block replaced, messages removed, or an edit held back.

    The journal holds what the manager settles after the strategies (the savings ledger's counts,
    the reduction log's derived blocks): the replacement and the removed messages are held only
    until then, never an original block.

    Attributes:
        kind: ``"replace"``, ``"remove"`` or ``"held"``.
        strategy: The strategy that made (or held back) it.
        message: The message a replaced block is in (``None`` for removals and held edits).
        index: The replaced block's index in it.
        position: The first message index the edit changed (``None``: not known yet).
        tokens_before: Tokens of what went (the block, or the messages); for a removal, ``None``
            when the pass did not count them (the ledger counts them when settled).
        tokens_after: Tokens of what came in its place, when counted.
        refs: The stash references the replacement names.
        block: The replacement (counted for the ledger when the journal is settled).
        same: The replacement equals the block it replaced (a dropped block dropped again): no
            change for the ledger.
        touched: The messages a removal took out.
        marker: The text a removal left in their place (``None``: none).
        started_ns: When the pass that made the edit started (its span's start).
        ended_ns: When the edit was made (its span's end).
        native_seconds: The native counting of the pass up to this edit, not reported before.
    """

    kind: str
    strategy: Any
    message: Any = None
    index: int | None = None
    position: int | None = None
    tokens_before: int | None = None
    tokens_after: int | None = None
    refs: tuple[str, ...] = ()
    block: Any = None
    same: bool = False
    touched: tuple[Any, ...] = ()
    marker: str | None = None
    started_ns: int = 0
    ended_ns: int | None = None
    native_seconds: float = 0.0


def first_difference(before: Sequence[Any], after: Sequence[Any]) -> int:
    """The first index where ``after`` no longer holds ``before``'s message object."""
    for index, (old, new) in enumerate(zip(before, after, strict=False)):
        if old is not new:
            return index
    return min(len(before), len(after))


@dataclass
class Run(ContextState):
    """A ``ContextState`` with this run's measure, cache view, per-agent state and journal."""

    measure: Measure | None = None
    view: CacheView | None = None
    state: AgentState | None = None
    journal: list[Edit] = field(default_factory=list)
    #: Tokens of the messages alone at the start of the run, and after the last strategy that acted.
    message_tokens: int | None = None
    #: An edit of the cached prefix happened in this run (the cache is paid for again).
    broken: bool = False
    #: Some strategy changed the conversation.
    acted: bool = False

    def record(self, edit: Edit) -> None:
        """Add ``edit`` to the journal; a change of the conversation lowers the view's unchanged prefix."""
        self.journal.append(edit)
        if edit.kind == "held" or self.state is None:
            return
        if edit.position is None:
            edit.position = self._position(edit.message)
        self.state.changes.edited(edit.position)

    def _position(self, message: Any) -> int:
        messages = self.messages
        for index in range(len(messages) - 1, -1, -1):
            if messages[index] is message:
                return index
        return 0  # not found: take the whole conversation as changed

    def held_back(self) -> list[Any]:
        """The strategies that held edits back in this run, once each, in order."""
        seen: list[Any] = []
        for edit in self.journal:
            if edit.kind == "held" and all(edit.strategy is not s for s in seen):
                seen.append(edit.strategy)
        return seen


def run_of(context: ContextState) -> Run | None:
    """``context`` when it is one of our runs (a caller may pass a plain ``ContextState``)."""
    return context if isinstance(context, Run) else None
