"""What the context manager's edits are worth: the bridge from the run's journal to the savings ledger.

The manager owns one recorder. Our strategies record each edit in the journal of the run (a block
replaced, a run of messages removed, see ``_run.Edit``); after the strategies the manager settles
the journal into the ledger once (:meth:`EditRecorder.settle_journal`), as counts: the ledger keeps
no block. Its retrieval tool reports each call, its summarizer each model call, directly. Figures
the pipeline already counted are reused; text the edit put in, and messages a removal took out, are
counted with the tokenizer when one is set, else the SDK's chars/4 heuristic: never by the model.

A *cache-invalidating edit* (one definition, shared with the prompt-cache options): an edit of a
message the previous model request of the same agent already sent, counted only when the agent's
model has prompt caching configured (a ``cache_config``, ``cache_prompt`` or ``cache_tools`` in its
config, or a ``cachePoint`` block in the conversation). Editing what was sent changes the prefix
the provider cached, so the next request pays for it again.
"""

from __future__ import annotations

import logging
import threading
from collections import deque
from collections.abc import Mapping, Sequence
from typing import Any

from .. import _seam
from .._heuristic import block_tokens, uses_base_heuristic
from .._ledger import Ledger, PerAgent, ToolCall, counter_name, now_ns
from .._native import TokenCounter, has_cache_point, holds_any, token_counter
from . import _media

logger = logging.getLogger(__name__)

# Strategy name -> the action it is counted as.
ACTIONS = {
    "offload:truncate": "truncate",
    "offload:summarize": "summarize",
    "offload:drop": "drop",
    "offload:emergency-truncate": "emergency_truncate",
    "offload:relevance": "relevance",
    "offload:dedupe": "dedupe",
}
_CACHE_KEYS = ("cache_config", "cache_prompt", "cache_tools")
#: Queued records (no provider) past which the recorder settles them at once: a bound on what they hold.
SETTLE_AT = 64


def model_config(model: Any) -> Mapping[str, Any] | None:
    """``model.get_config()`` when it gives a mapping; ``None`` when there is none or it fails."""
    get_config = getattr(model, "get_config", None)
    try:
        config = get_config() if callable(get_config) else None
    except Exception:
        return None
    return config if isinstance(config, Mapping) else None


def caching_by_config(model: Any) -> bool:
    """Whether ``model``'s config turns a provider's prompt cache on (a cache point may also be a block).

    A ``cache_config`` a Bedrock model does not act on (``"auto"`` on a model without automatic
    caching: no cache point is sent) does not count.
    """
    config = model_config(model)
    if config is None or not any(config.get(key) for key in _CACHE_KEYS):
        return False
    if config.get("cache_prompt") or config.get("cache_tools"):
        return True
    return _seam.places_cache_points(model) is not False


def prompt_cached(model: Any, messages: Sequence[Any]) -> bool:
    """Whether ``model`` has prompt caching: by its config, or a ``cachePoint`` block in ``messages``."""
    return caching_by_config(model) or has_cache_point(messages if isinstance(messages, list) else list(messages))


def cache_invalidating(model: Any, sent: list[Any] | None, touched: Sequence[Any]) -> int:
    """The rule above, in one place: how many ``touched`` messages the previous request sent, if ``model`` caches.

    0 when nothing was sent yet, none of them was, or there is no prompt cache to invalidate.
    """
    if sent is None or not touched:
        return 0
    if len(touched) == 1:
        count = int(holds_any(sent, (touched[0],)))
    else:
        count = sum(1 for message in touched if holds_any(sent, (message,)))
    return count if count and prompt_cached(model, sent) else 0


class EditRecorder:
    """Reports a manager's edits, retrievals and summarizer calls to its ledger.

    Args:
        ledger: Where the figures go.
        encoding: The manager's tokenizer, or ``None`` (the model counts; added text by heuristic).
    """

    def __init__(self, ledger: Ledger, encoding: TokenCounter | None) -> None:
        self.ledger = ledger
        self.encoding = encoding
        self.counter = encoding or token_counter("heuristic")
        # Per agent (one agent runs one request at a time: no lock): the invocation state of the
        # request being prepared (the parent of spans, kept only while tracing), and the messages
        # the previous request sent (held, so their ids stay theirs).
        self._invocation = PerAgent()
        self._sent = PerAgent()
        self._counted_model: Any = None
        self._counted_by = self._replaced_counter = "model"
        # With no provider the totals are all there is to keep, and they are read rarely: model
        # requests and replaced blocks are queued in order and settled in a batch (when read, when
        # a provider appears, or past SETTLE_AT). Done per model call, the same work cost several
        # times as much, its code and data gone cold behind the pipeline's native passes.
        self._queue: deque[tuple[Any, ...]] = deque()
        self._settling = threading.Lock()
        ledger.settle_with(self.settle)

    # ------------------------------------------------------------------ model requests

    def before_request(self, agent: Any, invocation_state: Mapping[str, Any] | None) -> None:
        """While tracing: edits from now on belong to this request's cycle (their spans' parent)."""
        try:
            self._invocation.set(agent, invocation_state)
        except Exception:
            logger.warning("recording the model request failed", exc_info=True)

    def request_sent(self, agent: Any, messages: Sequence[Any]) -> None:
        """``messages`` are what this request sends: editing them later invalidates a prompt cache.

        Only the list is copied here (every model call passes); what an edit touched is looked up
        in it when the edit is counted (with no provider, when the queue settles: the model's
        caching config is read then). The ledger looks again for providers, for the next request.
        """
        try:
            ledger = self.ledger
            if ledger.metering or ledger.tracing:
                if self._queue:
                    self.settle()
                self._sent.set(agent, list(messages))
            else:
                queue = self._queue
                queue.append((agent, list(messages)))
                if len(queue) > SETTLE_AT:
                    self.settle()
            ledger.refresh()
        except Exception:
            logger.warning("recording the model request failed", exc_info=True)

    def settle(self) -> None:
        """Put the queued requests and edits into the totals, in the order they happened."""
        queue = self._queue
        with self._settling:
            while queue:
                record = queue.popleft()
                try:
                    if len(record) == 2:  # a model request: (agent, what it sent)
                        self._sent.set(*record)
                    else:  # replaced blocks: (agent, [(message, new block, old tokens, when)], native seconds)
                        self._replaced_totals(*record)
                except Exception:
                    logger.warning("recording an edit failed", exc_info=True)

    def _model_counter(self, agent: Any) -> str:
        """Who counted the originals: the tokenizer, else the base heuristic or the model's own count."""
        model = agent.model
        if model is not self._counted_model:  # one check per model, not per edit
            self._counted_model = model
            self._counted_by = (
                self.encoding.name
                if self.encoding is not None
                else "heuristic"
                if uses_base_heuristic(model)
                else "model"
            )
            self._replaced_counter = counter_name(self._counted_by, self.counter.name)
        return self._counted_by

    # ------------------------------------------------------------------ edits

    def settle_journal(self, agent: Any, journal: Sequence[Any]) -> None:
        """Put the edits of a run's journal (``_run.Edit``) into the ledger, once, in their order.

        The blocks one pass replaced (one commit: the same strategy and start) go in as one batch,
        each removal as one edit; held-back edits are not edits. A failure is logged per batch,
        and the journal goes on.
        """
        count = len(journal)
        at = 0
        while at < count:
            edit = journal[at]
            at += 1
            kind = edit.kind
            try:
                if kind == "replace":
                    strategy, started = edit.strategy, edit.started_ns
                    native = edit.native_seconds
                    changed = [] if edit.same else [(edit.message, edit.block, edit.tokens_before or 0, edit.ended_ns)]
                    while at < count:
                        following = journal[at]
                        if not (
                            following.kind == "replace"
                            and following.strategy is strategy
                            and following.started_ns == started
                        ):
                            break
                        at += 1
                        native += following.native_seconds
                        if not following.same:
                            changed.append(
                                (following.message, following.block, following.tokens_before or 0, following.ended_ns)
                            )
                    self._replaced(agent, strategy.name, changed, started, native)
                elif kind == "remove" and edit.touched:
                    self.messages_removed(
                        agent,
                        edit.strategy.name,
                        edit.touched,
                        [{"text": edit.marker}] if edit.marker else [],
                        edit.started_ns,
                        edit.tokens_before,
                        edit.native_seconds,
                        ended_ns=edit.ended_ns,
                    )
            except Exception:
                logger.warning("strategy=<%s> | recording an edit failed", edit.strategy.name, exc_info=True)

    def blocks_replaced(
        self,
        agent: Any,
        strategy: str,
        edits: Sequence[tuple[Any, Any, Any, int]],
        started_ns: int,
        native_seconds: float = 0.0,
    ) -> None:
        """Blocks replaced in place: (their message, old block, new block, the old block's tokens).

        ``native_seconds``: the pass's native counting, reported with the first edit. An equal
        block (a dropped block dropped again) changed nothing and is not an edit.
        """
        changed: list[tuple[Any, Any, int, int | None]] = [
            (message, new, tokens, None) for message, old, new, tokens in edits if old != new
        ]
        self._replaced(agent, strategy, changed, started_ns, native_seconds)

    def _replaced(
        self,
        agent: Any,
        strategy: str,
        changed: list[tuple[Any, Any, int, int | None]],
        started_ns: int,
        native_seconds: float,
    ) -> None:
        """Blocks that changed: (their message, new block, the old block's tokens, when replaced).

        The manager's hot path (a model call that edits): one pass, the lookups made once.
        """
        ledger = self.ledger
        if not (ledger.metering or ledger.tracing):
            if changed:
                queue = self._queue
                queue.append((agent, changed, native_seconds))
                if len(queue) > SETTLE_AT:
                    self.settle()
            return
        if self._queue:
            self.settle()
        model = agent.model
        if model is not self._counted_model:
            self._model_counter(agent)
        counter, count = self._replaced_counter, self.counter
        sent = self._sent.get(agent)
        invocation = self._invocation.get(agent) if self.ledger.tracing else None
        action = ACTIONS.get(strategy, strategy)
        for message, new, tokens, ended_ns in changed:
            self.ledger.edit(
                agent,
                invocation,
                started_ns=started_ns,
                action=action,
                counter=counter,
                tokens_removed=tokens,
                tokens_added=block_tokens(new, count),
                cache_invalidating=self._invalidates(model, sent, (message,)),
                blocks=1,
                messages=0,
                native_seconds=native_seconds,
                ended_ns=ended_ns,
            )
            native_seconds = 0.0

    def _replaced_totals(
        self, agent: Any, changed: list[tuple[Any, Any, int, int | None]], native_seconds: float
    ) -> None:
        """Queued replaced blocks into the totals: what :meth:`_replaced` adds with a provider."""
        count, sent = self.counter, self._sent.get(agent)
        removed = added = 0
        for _, new, tokens, _ in changed:
            removed += tokens
            added += block_tokens(new, count)
        sent_before = cache_invalidating(agent.model, sent, [message for message, _, _, _ in changed])
        self.ledger.count_edits(agent, len(changed), removed, added, sent_before, native_seconds)

    def messages_removed(
        self,
        agent: Any,
        strategy: str,
        gone: Sequence[Any],
        markers: Sequence[Any],
        started_ns: int,
        removed_tokens: int | None = None,
        native_seconds: float = 0.0,
        *,
        ended_ns: int | None = None,
    ) -> None:
        """Messages removed in one pass, and the marker blocks left in their place.

        ``removed_tokens``: the pass's own count of them (the model's), when it made one;
        ``native_seconds``: the native counting of the pass; ``ended_ns``: when they were removed.
        """
        media = ""
        if removed_tokens is None:
            removed_tokens = sum(block_tokens(block, self.counter) for m in gone for block in m["content"])
            counter = self.counter.name
        else:
            counter = self._model_counter(agent)
            rule = _media.rule_of(agent)
            if rule is not None:
                media = f"+media:{rule}"  # the pass's count held the messages' media (media_tokens=)
        added = sum(block_tokens(block, self.counter) for block in markers)
        self._edit(
            agent,
            strategy,
            started_ns,
            removed=removed_tokens,
            added=added,
            touched=gone,
            counter=counter_name(counter, self.counter.name) + media,
            blocks=0,
            messages=len(gone),
            native_seconds=native_seconds,
            ended_ns=ended_ns,
        )

    def _edit(
        self,
        agent: Any,
        strategy: str,
        started_ns: int,
        *,
        removed: int,
        added: int,
        touched: Sequence[Any],
        counter: str,
        blocks: int,
        messages: int,
        native_seconds: float,
        ended_ns: int | None,
    ) -> None:
        if self._queue:
            self.settle()  # the previous request of ``agent`` may still be queued
        self.ledger.edit(
            agent,
            self._invocation.get(agent) if self.ledger.tracing else None,
            started_ns=started_ns,
            action=ACTIONS.get(strategy, strategy),
            counter=counter,
            tokens_removed=removed,
            tokens_added=added,
            cache_invalidating=self._invalidates(agent.model, self._sent.get(agent), tuple(touched)),
            blocks=blocks,
            messages=messages,
            native_seconds=native_seconds,
            ended_ns=ended_ns,
        )

    @staticmethod
    def _invalidates(model: Any, sent: list[Any] | None, touched: tuple[Any, ...]) -> bool:
        """The definition above, for one edit: any of ``touched`` was sent, and the model caches prompts."""
        return cache_invalidating(model, sent, touched) > 0

    # ------------------------------------------------------------------ summarizer and retrieval

    def summarizer_call(self, agent: Any, usage: Mapping[str, Any] | None) -> None:
        """One model call the summarizer made, with the usage its response reported."""
        usage = usage or {}
        self.ledger.summarizer_call(
            agent,
            input_tokens=int(usage.get("inputTokens", 0) or 0),
            output_tokens=int(usage.get("outputTokens", 0) or 0),
        )

    def retrieval(
        self,
        agent: Any,
        invocation_state: Mapping[str, Any] | None,
        *,
        started_ns: int,
        call_id: str,
        mode: str,
        outcome: str,
        answer: Any,
        native_seconds: float,
    ) -> None:
        """One call of ``retrieve_context`` (``answer``: the tool result's content, or ``None``)."""
        tokens = 0
        if outcome == "ok" and answer:
            tokens = block_tokens(
                {"toolResult": {"toolUseId": call_id, "status": "success", "content": answer}}, self.counter
            )
        self.ledger.retrieval(
            ToolCall(agent, invocation_state, started_ns, "retrieve_context", call_id),
            mode=mode,
            outcome=outcome,
            counter=self.counter.name,
            tokens=tokens,
            native_seconds=native_seconds,
        )


__all__ = ["ACTIONS", "EditRecorder", "cache_invalidating", "caching_by_config", "now_ns", "prompt_cached"]
