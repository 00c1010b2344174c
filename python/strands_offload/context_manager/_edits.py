"""What the context manager's edits are worth: the bridge from strategies to the savings ledger.

The manager owns one recorder; its strategies report each edit to it (a block replaced, a run of
messages removed), its retrieval tool each call, its summarizer each model call. Figures the
pipeline already counted are reused; text the edit put in, and messages a removal took out, are
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
import weakref
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from .._heuristic import block_tokens, uses_base_heuristic
from .._ledger import Ledger, ToolCall, now_ns
from .._native import TokenCounter, token_counter

logger = logging.getLogger(__name__)

# Strategy name -> the action it is counted as.
ACTIONS = {
    "offload:truncate": "truncate",
    "offload:summarize": "summarize",
    "offload:drop": "drop",
    "offload:emergency-truncate": "emergency_truncate",
}
_CACHE_KEYS = ("cache_config", "cache_prompt", "cache_tools")


def prompt_caching_configured(model: Any, messages: Iterable[Mapping[str, Any]]) -> bool:
    """Whether requests of ``model`` with ``messages`` use a provider's prompt cache."""
    get_config = getattr(model, "get_config", None)
    try:
        config = get_config() if callable(get_config) else None
    except Exception:
        config = None
    if isinstance(config, Mapping) and any(config.get(key) for key in _CACHE_KEYS):
        return True
    return any("cachePoint" in block for message in messages for block in message.get("content", ()))


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
        self._lock = threading.Lock()
        # Per agent: the messages the previous model request sent (held, so their ids stay theirs).
        self._sent: weakref.WeakKeyDictionary[Any, tuple[list[Any], frozenset[int]]] = weakref.WeakKeyDictionary()
        self._invocation: weakref.WeakKeyDictionary[Any, Mapping[str, Any]] = weakref.WeakKeyDictionary()
        self._counted_model: Any = None
        self._counted_by = "model"

    # ------------------------------------------------------------------ model requests

    def before_request(self, agent: Any, invocation_state: Mapping[str, Any] | None) -> None:
        """Edits from now on belong to this request's cycle (their spans' parent)."""
        try:
            self.ledger.refresh()
            with self._lock:
                if invocation_state is not None:
                    self._invocation[agent] = invocation_state
        except Exception:
            logger.warning("recording the model request failed", exc_info=True)

    def request_sent(self, agent: Any, messages: Sequence[Any]) -> None:
        """``messages`` are what this request sends: editing them later invalidates a prompt cache."""
        try:
            held = list(messages)
            contents = (message.get("content") for message in held if isinstance(message, Mapping))
            ids = frozenset(id(message) for message in held) | frozenset(id(content) for content in contents)
            with self._lock:
                self._sent[agent] = (held, ids)
        except Exception:
            logger.warning("recording the model request failed", exc_info=True)

    def _model_counter(self, agent: Any) -> str:
        if self.encoding is not None:
            return self.encoding.name
        model = agent.model
        if model is not self._counted_model:  # one check per model, not per edit
            self._counted_model = model
            self._counted_by = "heuristic" if uses_base_heuristic(model) else "model"
        return self._counted_by

    # ------------------------------------------------------------------ edits

    def blocks_replaced(
        self, agent: Any, strategy: str, edits: Sequence[tuple[list[Any], Any, Any, int]], started_ns: int
    ) -> None:
        """Blocks replaced in place: (the content list, old block, new block, the old block's tokens)."""
        counted_by = self._model_counter(agent)
        counter = counted_by if counted_by == self.counter.name else f"{counted_by}+{self.counter.name}"
        for content, old, new, tokens in edits:
            if old == new:
                continue  # an equal block (a dropped block dropped again): nothing changed
            self._edit(
                agent,
                strategy,
                started_ns,
                removed=tokens,
                added=block_tokens(new, self.counter),
                touched=[content],
                counter=counter,
                blocks=1,
                messages=0,
            )

    def messages_removed(
        self,
        agent: Any,
        strategy: str,
        gone: Sequence[Any],
        markers: Sequence[Any],
        started_ns: int,
        removed_tokens: int | None = None,
    ) -> None:
        """Messages removed in one pass, and the marker blocks left in their place.

        ``removed_tokens``: the pass's own count of them (the model's), when it made one.
        """
        if removed_tokens is None:
            removed_tokens = sum(block_tokens(block, self.counter) for m in gone for block in m["content"])
            counter = self.counter.name
        else:
            counter = self._model_counter(agent)
        added = sum(block_tokens(block, self.counter) for block in markers)
        self._edit(
            agent,
            strategy,
            started_ns,
            removed=removed_tokens,
            added=added,
            touched=gone,
            counter=counter if counter == self.counter.name else f"{counter}+{self.counter.name}",
            blocks=0,
            messages=len(gone),
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
    ) -> None:
        with self._lock:
            invocation = self._invocation.get(agent)
            sent = self._sent.get(agent)
        invalidating = (
            sent is not None
            and any(id(item) in sent[1] for item in touched)
            and prompt_caching_configured(agent.model, getattr(agent, "messages", ()))
        )
        self.ledger.edit(
            agent,
            invocation,
            started_ns=started_ns,
            action=ACTIONS.get(strategy, strategy),
            counter=counter,
            tokens_removed=removed,
            tokens_added=added,
            cache_invalidating=invalidating,
            blocks=blocks,
            messages=messages,
        )

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


__all__ = ["ACTIONS", "EditRecorder", "now_ns", "prompt_caching_configured"]
