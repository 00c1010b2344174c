"""Token measurements the pipeline makes on every model call.

By default a block or a conversation is measured the way the reference measures it: with the
model's ``count_tokens``. When that method is the SDK's base heuristic (text chars/4, JSON
chars/2, binary content 0), directly or because a provider falls back to it, the same numbers
are computed here: the JSON lengths come from the native core without building the JSON text,
and no one-block message is built per block. With an exact ``tokenizer`` the counts are BPE.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from contextvars import ContextVar, Token
from typing import Any

from .. import _native
from .._heuristic import json_tokens, text_tokens, uses_base_heuristic


def _quarter(text: str) -> int:
    return text_tokens(len(text))


def _json_half(value: Any) -> int:
    # The base heuristic counts what json.dumps rejects as 0.
    try:
        return json_tokens(_native.json_dumps_len(value))
    except (TypeError, ValueError):
        return 0


def heuristic_block(block: Mapping[str, Any]) -> int:
    """The base heuristic's count of one content block."""
    if len(block) == 1 and "text" in block:
        return text_tokens(len(block["text"]))  # the common case, one key
    total = 0
    if "text" in block:
        total += _quarter(block["text"])
    if "toolUse" in block:
        call = block["toolUse"]
        total += _quarter(call.get("name", "")) + _json_half(call.get("input", {}))
    if "toolResult" in block:
        for item in block["toolResult"].get("content", []):
            if "text" in item:
                total += _quarter(item["text"])
            if "json" in item:
                total += _json_half(item["json"])
    if "reasoningContent" in block:
        reasoning = block["reasoningContent"]
        if "reasoningText" in reasoning and "text" in reasoning["reasoningText"]:
            total += _quarter(reasoning["reasoningText"]["text"])
    if "guardContent" in block:
        guard = block["guardContent"]
        if "text" in guard and "text" in guard["text"]:
            total += _quarter(guard["text"]["text"])
    if "citationsContent" in block:
        for cited in block["citationsContent"].get("content", ()):
            if "text" in cited:
                total += _quarter(cited["text"])
    return total


def heuristic_messages(messages: Iterable[Mapping[str, Any]]) -> int:
    """The base heuristic's count of a list of messages (no system prompt, no tool specs)."""
    return sum(heuristic_block(block) for message in messages for block in message["content"])


def _exact_json(value: Any, encoding: str) -> int:
    try:
        return _native.count_tokens(_native.json_dumps(value), encoding)
    except (TypeError, ValueError):
        return 0


def exact_block(block: Mapping[str, Any], encoding: str) -> int:
    """BPE tokens of the text and JSON a block carries (binary content counts 0)."""
    total = 0
    if "text" in block:
        total += _native.count_tokens(block["text"], encoding)
    if "toolUse" in block:
        call = block["toolUse"]
        total += _native.count_tokens(call.get("name", ""), encoding) + _exact_json(call.get("input", {}), encoding)
    if "toolResult" in block:
        for item in block["toolResult"].get("content", []):
            if "text" in item:
                total += _native.count_tokens(item["text"], encoding)
            if "json" in item:
                total += _exact_json(item["json"], encoding)
    if "reasoningContent" in block:
        reasoning = block["reasoningContent"]
        if "reasoningText" in reasoning and "text" in reasoning["reasoningText"]:
            total += _native.count_tokens(reasoning["reasoningText"]["text"], encoding)
    if "guardContent" in block:
        guard = block["guardContent"]
        if "text" in guard and "text" in guard["text"]:
            total += _native.count_tokens(guard["text"]["text"], encoding)
    if "citationsContent" in block:
        for cited in block["citationsContent"].get("content", ()):
            if "text" in cited:
                total += _native.count_tokens(cited["text"], encoding)
    return total


class Measure:
    """Measures blocks and conversations for one pipeline run, the cheapest exact way available.

    With the base heuristic, the counting is one native pass over the conversation
    (``_native.HeuristicTally``), which remembers the counts of blocks carrying JSON by identity
    for the rest of the run: the per-block passes and the closing re-measurement of the whole
    conversation walk each JSON value once. The pipeline calls :meth:`forget` whenever a strategy
    reports a change or fails. Shapes the native pass leaves alone (subclasses, texts that are not
    ``str``) are counted here in Python, with the SDK's exact behaviour.

    Args:
        model: The model whose ``count_tokens`` defines the numbers.
        encoding: An exact BPE encoding for block thresholds, or ``None`` for the model's counting.
    """

    def __init__(self, model: Any, encoding: str | None = None) -> None:
        self.model = model
        self.encoding = encoding
        self.native = uses_base_heuristic(model)
        self._tally = _native.HeuristicTally() if self.native else None
        self._only_replaced = False

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
        if self._tally is not None:
            self._tally.clear()

    async def block(self, role: str, block: Mapping[str, Any]) -> int:
        """Tokens of a one-block message of ``role`` holding ``block``."""
        if self.encoding is not None:
            return exact_block(block, self.encoding)
        if self._tally is not None:
            tokens = self._tally.block(block)
            return heuristic_block(block) if tokens is None else tokens
        return int(await self.model.count_tokens([{"role": role, "content": [block]}]))

    async def messages(self, messages: list[Any]) -> int:
        """Tokens of ``messages`` as the model counts them (utilization never uses ``encoding``)."""
        if self._tally is not None:
            tokens = self._tally.messages(messages)
            return heuristic_messages(messages) if tokens is None else tokens
        return int(await self.model.count_tokens(messages))

    def holding_more_than(self, messages: list[Any], floor: int) -> list[int] | None:
        """Indices of the messages with a block of more than ``floor`` tokens, in one native pass.

        Blocks are counted as :meth:`block` counts them. ``None`` when the native pass cannot tell
        (an exact encoding, a model counting its own way, an unusual shape): any message may then
        hold one.
        """
        if self.encoding is not None or self._tally is None:
            return None
        return self._tally.over(messages, floor)


_RUN: ContextVar[Measure | None] = ContextVar("strands_offload_measure", default=None)


def for_run(model: Any, encoding: str | None = None) -> Measure:
    """The measure of the pipeline run in progress when it fits ``model`` and ``encoding``, else a new one."""
    current = _RUN.get()
    if current is not None and current.model is model and current.encoding == encoding:
        return current
    return Measure(model, encoding)


def start_run(measure: Measure) -> Token[Measure | None]:
    """Make ``measure`` the one strategies of this run share; returns the token to end it."""
    return _RUN.set(measure)


def end_run(token: Token[Measure | None]) -> None:
    """End the run started with ``token``."""
    _RUN.reset(token)
