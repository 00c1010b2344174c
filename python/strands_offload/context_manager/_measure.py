"""Token measurements the pipeline makes on every model call.

By default a block or a conversation is measured the way the reference measures it: with the
model's ``count_tokens``. When that method is the SDK's base heuristic (text chars/4, JSON
chars/2, binary content 0), directly or because a provider falls back to it, the same numbers
come from the native block meter (``_native.BlockMeter``) without building a message per block
or the JSON text. With an exact ``tokenizer`` the block counts are BPE, from the same meter.
"""

from __future__ import annotations

from typing import Any

from .. import _native
from .._heuristic import sdk_walk_tokens, uses_base_heuristic
from .._native import TokenCounter, token_counter
from . import _media


class Measure:
    """Measures blocks and conversations for one pipeline run, the cheapest exact way available.

    With the base heuristic (or an exact ``encoding`` for blocks), the counting is one native pass
    over the conversation (``_native.BlockMeter``), which remembers the counts of blocks carrying
    JSON by identity for the rest of the run: the per-block passes and the closing re-measurement
    of the whole conversation walk each JSON value once. The pipeline calls :meth:`forget` whenever
    a strategy reports a change or fails, and :meth:`strategy_ran` after every strategy, which
    forgets after any strategy not of ours (it may edit a block in place and report nothing).
    Shapes the meter leaves alone (subclasses, texts that are
    not ``str``) go through the SDK's own walk (a conversation, through the model's count).

    Args:
        model: The model whose ``count_tokens`` defines the numbers.
        encoding: An exact BPE encoding for block thresholds, or ``None`` for the model's counting.
        media: A media rule (``media_tokens=``, see ``_media``): conversations count their images,
            documents and videos with it; blocks never do (thresholds stay text only).
    """

    def __init__(self, model: Any, encoding: TokenCounter | None = None, *, media: str | None = None) -> None:
        self.model = model
        self.encoding = encoding
        self.media = media
        self.native = uses_base_heuristic(model)
        # Conversations are measured as the model counts them; blocks with the exact counter if set.
        self._messages = _native.BlockMeter(token_counter("heuristic")) if self.native else None
        self._blocks = _native.BlockMeter(encoding) if encoding is not None else self._messages
        self._only_replaced = False
        self._conversation: list[Any] | None = None
        self._state: Any = None

    def follow(self, conversation: list[Any], state: Any) -> None:
        """Count ``conversation`` (the agent's messages) incrementally with the agent's ``state`` (``_run.AgentState``).

        Counts are kept per message across calls and made again only from the first message its
        change log (``state.changes``: the identity pass of each run, the journal) says changed.
        """
        self._conversation = conversation
        self._state = state

    def blocks_replaced(self) -> None:
        """Note that the change about to be reported only put new blocks in place of old ones.

        Our strategies edit that way (they never change a block in place), so the next
        :meth:`forget` keeps the remembered counts: a new block is a new object, counted afresh.
        """
        self._only_replaced = True

    def forget(self) -> None:
        """Drop remembered counts: a strategy changed the conversation.

        Kept when the change was only the block replacements announced by :meth:`blocks_replaced`.
        """
        if self._only_replaced:
            self._only_replaced = False
            return
        for meter in (self._messages, self._blocks):
            if meter is not None:
                meter.clear()

    def strategy_ran(self, strategy: Any) -> None:
        """Note that ``strategy`` has had its pass: after a strategy not of ours, drop remembered counts.

        Counts are remembered by block identity. Our strategies put new blocks in place of old ones
        and report every change; a user's own strategy may rewrite a block's content in place and
        still return ``False``, so a count from before its pass may be stale whatever it reported.
        """
        if not is_ours(strategy):
            self._only_replaced = False
            self.forget()

    async def block(self, role: str, block: Any) -> int:
        """Tokens of a one-block message of ``role`` holding ``block``."""
        if self._blocks is None:
            return int(await self.model.count_tokens([{"role": role, "content": [block]}]))
        tokens = self._blocks.block(block)
        if tokens is None:  # a shape the meter leaves to the SDK's walk
            return sdk_walk_tokens(block, self.encoding or token_counter("heuristic"))
        return int(tokens)

    async def messages(self, messages: list[Any]) -> int:
        """Tokens of ``messages`` as the model counts them (never with ``encoding``), with ``media`` their media too."""
        media = self.media_of(messages)
        if self._messages is not None:
            if messages is self._conversation:
                tokens = self._followed_tokens(messages)
            else:
                tokens = self._messages.messages(messages)
            if tokens is not None:
                return int(tokens) + media
        return int(await self.model.count_tokens(messages)) + media

    def media_of(self, messages: list[Any]) -> int:
        """Media tokens of ``messages`` under ``media`` (0 without it).

        For the followed conversation the counts are kept per message across calls (in the agent's
        state) and made again only from the first message its change log says changed.
        """
        rule = self.media
        if rule is None:
            return 0
        if messages is self._conversation and isinstance(messages, list):
            return self._followed_media(messages, rule)
        return int(_native.media_tokens(messages, rule))

    def media_after_baseline(self, messages: list[Any]) -> int:
        """Media tokens of the messages the event loop's projection estimates (see ``_media.baseline_start``)."""
        rule = self.media
        if rule is None:
            return 0
        start = _media.baseline_start(messages)
        if messages is self._conversation and isinstance(messages, list):
            total = self._followed_media(messages, rule)
            return total if start == 0 else sum(self._state.media_counts[start:])
        return _media.media_tokens(messages[start:], rule)

    def _followed_media(self, messages: list[Any], rule: str) -> int:
        """:meth:`media_of` the followed conversation: the unchanged messages' counts kept, the rest counted."""
        state = self._state
        changes = state.changes
        counts: list[int] = state.media_counts
        if state.media_rule != rule:  # another rule (the agent's model changed): nothing kept holds
            counts.clear()
            state.media_total = 0
            state.media_rule = rule
        stable = min(changes.stable_since(state.media_epoch), len(counts), len(messages))
        if stable < len(counts):
            state.media_total -= sum(counts[stable:])
            del counts[stable:]
        for message in messages[stable:]:
            tokens = int(_native.media_tokens([message], rule))
            counts.append(tokens)
            state.media_total += tokens
        state.media_epoch = changes.epoch()
        return int(state.media_total)

    def _followed_tokens(self, messages: list[Any]) -> int | None:
        """:meth:`messages` of the followed conversation: the unchanged messages' counts kept, the rest counted."""
        meter, state = self._messages, self._state
        assert meter is not None
        changes = state.changes
        counts: list[int] = state.counts
        stable = min(changes.stable_since(state.counts_epoch), len(counts), len(messages))
        if stable < len(counts):
            state.counts_total -= sum(counts[stable:])
            del counts[stable:]
        for message in messages[stable:]:
            tokens = meter.messages([message])
            if tokens is None:  # a shape left to the model's own count: nothing kept
                counts.clear()
                state.counts_total = 0
                state.counts_epoch = changes.epoch()
                return None
            counts.append(int(tokens))
            state.counts_total += int(tokens)
        state.counts_epoch = changes.epoch()
        return int(state.counts_total)

    def take_native_seconds(self) -> float:
        """Seconds the native meters spent counting since the last take (the savings ledger's native time)."""
        seconds = self._messages.take_seconds() if self._messages is not None else 0.0
        if self._blocks is not None and self._blocks is not self._messages:
            seconds += self._blocks.take_seconds()
        return seconds

    def holding_more_than(self, messages: list[Any], floor: int) -> list[int] | None:
        """Indices of the messages with a block of more than ``floor`` tokens, in one native pass.

        Blocks are counted as :meth:`block` counts them. ``None`` when the native pass cannot tell
        (an exact encoding, a model counting its own way, an unusual shape): any message may then
        hold one.
        """
        if self.encoding is not None or self._messages is None:
            return None
        if messages is not self._conversation:
            return self._messages.over(messages, floor)
        state = self._state
        changes = state.changes
        known = state.over.get(floor)
        stable = 0
        held: list[int] = []
        if known is not None:
            held, covered, epoch = known
            stable = min(changes.stable_since(epoch), covered, len(messages))
        if stable < len(messages):
            found = self._messages.over(messages[stable:] if stable else messages, floor)
            if found is None:
                state.over.pop(floor, None)
                return None
            held = [index for index in held if index < stable] + [stable + index for index in found]
        state.over[floor] = (held, len(messages), changes.epoch())
        return list(held)


_PACKAGE = __name__.split(".", 1)[0]


def is_ours(strategy: Any) -> bool:
    """Whether ``strategy``'s class is defined in this package (a user's subclass of one of ours is not)."""
    return type(strategy).__module__.startswith(f"{_PACKAGE}.")
