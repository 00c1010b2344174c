"""Dedupe: a tool result equal to an earlier one still in the conversation is kept once.

Agents re-read: the same file, page or query, each copy billed on every later call. As each tool
result arrives, its original content (the status and every item, media included, in the stash's
encoding) is compared with the originals of the earlier results still in the conversation: first
by a native 64-bit hash, then in full. On a match one copy becomes

    [Duplicate of the result of {tool name} call {toolUseId}] [ref: ...]

naming the copy that is kept, with the stash references of the rewritten copy (its original is
stashed first; a result whose original could not be stored is left alone). ``keep="first"``
rewrites the new copy: the default when the model has prompt caching, since the earlier copy sits
in the cached prefix and rewriting it would invalidate the cache. ``keep="last"`` (the default
otherwise) rewrites the earlier copy, so the model reads the result where it asked for it.

Tool pairs stay intact (only the result's content changes), pinned messages are never rewritten,
and each rewrite goes through the manager's ledger and, with ``persist_reductions``, its recipe.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal
from weakref import WeakKeyDictionary

from strands.experimental.context_manager import OffloadConditions, OffloadTarget
from strands.hooks.events import MessageAddedEvent
from typing_extensions import TypedDict

from .... import _native
from ... import _prompt_cache
from ..._edits import now_ns
from ..._measure import Measure
from ...stash import encode_value, format_refs
from ...types import ContextState
from ._messages import is_pinned
from .base import BaseOffloadStrategy, _tool_names

if TYPE_CHECKING:
    from strands.agent.agent import Agent

__all__ = ["DedupeConfig", "DedupeStrategy", "duplicate_marker"]

logger = logging.getLogger(__name__)

_KEEPS = ("first", "last")


class DedupeConfig(TypedDict, total=False):
    """Configuration of ``Offload.dedupe``.

    Attributes:
        keep: ``"first"`` (rewrite the new copy) or ``"last"`` (rewrite the earlier one). Default:
            ``"first"`` when the model has prompt caching, else ``"last"``.
    """

    keep: Literal["first", "last"]


def duplicate_marker(tool_name: str, tool_use_id: str, refs: list[str]) -> str:
    """The text a duplicate becomes: the call whose result is kept, and the copy's stash references."""
    return f"[Duplicate of the result of {tool_name} call {tool_use_id}]{format_refs(refs)}"


def canonical(result: Mapping[str, Any]) -> bytes:
    """What two results are compared by: their status and content in the stash's encoding."""
    return encode_value({"status": result.get("status"), "content": result.get("content", [])})


@dataclass
class _Seen:
    """An original result that arrived: its call, its tool, its canonical bytes."""

    tool_use_id: str
    tool_name: str
    data: bytes
    items: int
    """How many content items the original had (one stash key each)."""


class DedupeStrategy(BaseOffloadStrategy):
    """Keeps one copy of equal tool results (see the module docstring).

    Args:
        target: Which tool results (``"tool_results"``: successful ones; ``"*"``: all).
        config: See :class:`DedupeConfig`.
        conditions: Accepted for a uniform ``.when()``; dedupe acts on arrival whatever they are.

    Raises:
        ValueError: For a ``keep`` other than ``"first"`` or ``"last"``.
    """

    def __init__(
        self,
        target: OffloadTarget | None = "tool_results",
        config: DedupeConfig | None = None,
        conditions: OffloadConditions | None = None,
    ) -> None:
        super().__init__(target, conditions)
        self._config: DedupeConfig = dict(config or {})  # type: ignore[assignment]
        keep = self._config.get("keep")
        if keep is not None and keep not in _KEEPS:
            raise ValueError(f"keep must be 'first' or 'last', not {keep!r}")
        self._keep: str | None = keep
        # Per agent: hash of an original -> the results that arrived with it.
        self._seen: WeakKeyDictionary[Any, dict[int, list[_Seen]]] = WeakKeyDictionary()

    @property
    def name(self) -> str:
        """``offload:dedupe``."""
        return "offload:dedupe"

    def _rebuild(self, conditions: OffloadConditions) -> DedupeStrategy:
        clone = DedupeStrategy(self._target, self._config, conditions)
        clone._encoding = self._encoding
        return clone

    def keep_for(self, agent: Agent) -> str:
        """Which copy stays for ``agent``: the configured one, else by its model's prompt caching."""
        if self._keep is not None:
            return self._keep
        return "first" if _prompt_cache.caching(agent.model, agent.messages) else "last"

    def init(self, agent: Agent, stash: Any = None) -> None:
        """Remember the stash and act on each message as it arrives."""
        self._stash = stash

        async def _on_arrival(event: MessageAddedEvent) -> None:
            try:
                await self.arrived(event.agent, event.message)
            except Exception:
                logger.warning(
                    "strategy=<%s> | deduplicating a new message failed, continuing", self.name, exc_info=True
                )

        agent.hooks.add_callback(MessageAddedEvent, _on_arrival)

    async def apply(self, context: ContextState) -> bool:
        """Nothing to do in a pipeline pass: duplicates are found as they arrive."""
        return False

    async def _replace_block(
        self, block: Any, tokens: int, message: Any, agent: Agent, stash_refs: list[str]
    ) -> Any | None:
        return None  # never asked: the arrival hook builds its own plan

    def _registry(self, agent: Agent) -> dict[int, list[_Seen]]:
        seen = self._seen.get(agent)
        if seen is None:
            seen = self._seen[agent] = {}
        return seen

    async def arrived(self, agent: Agent, message: Any) -> bool:
        """Deduplicate the tool results of ``message`` (just added to ``agent``); ``True`` on a rewrite."""
        if message.get("role") != "user" or not any("toolResult" in b for b in message.get("content", [])):
            return False
        messages = agent.messages
        names = _tool_names(messages)
        seen = self._registry(agent)
        keep = self.keep_for(agent)
        position = {id(m): i for i, m in enumerate(messages)}
        here = position.get(id(message), -1)
        plan: list[tuple[Any, int, Any, int]] = []
        started = now_ns()
        measure = Measure(agent.model, self._encoding)
        for index, block in enumerate(message["content"]):
            if not self._matches_block(block, message, names):
                continue
            result = block["toolResult"]
            data = canonical(result)
            key = _native.content_hash(data)
            tool_use_id = str(result["toolUseId"])
            name = names.get(tool_use_id, "unknown")
            items = len(result.get("content", []))
            earlier = self._earlier_copy(seen.get(key, []), data, messages, tool_use_id)
            if earlier is None:
                seen.setdefault(key, []).append(_Seen(tool_use_id, name, data, items))
                continue
            kept_id, kept_name = (
                (earlier[0].tool_use_id, earlier[0].tool_name) if keep == "first" else (tool_use_id, name)
            )
            if keep == "first":
                target_message, target_index, target_items = message, index, items
                if here >= 0 and is_pinned(messages, here):
                    seen.setdefault(key, []).append(_Seen(tool_use_id, name, data, items))
                    continue
            else:
                _, target_message, target_index = earlier
                target_items = earlier[0].items
                where = position.get(id(target_message), -1)
                if where >= 0 and is_pinned(messages, where):
                    seen.setdefault(key, []).append(_Seen(tool_use_id, name, data, items))
                    continue
            replacement = await self._rewrite(target_message, target_index, target_items, kept_name, kept_id)
            if replacement is None:
                seen.setdefault(key, []).append(_Seen(tool_use_id, name, data, items))
                continue
            old = target_message["content"][target_index]
            tokens = await measure.block("user", old)
            plan.append((target_message, target_index, replacement, tokens))
            if keep == "last":
                # The earlier copy is gone from the conversation; the new one is the copy to match.
                entries = seen.get(key, [])
                entries[:] = [e for e in entries if e is not earlier[0]]
                seen.setdefault(key, []).append(_Seen(tool_use_id, name, data, items))
            logger.debug(
                "tool_use_id=<%s>, kept=<%s> | duplicate tool result rewritten", old["toolResult"]["toolUseId"], kept_id
            )
        return await self._commit(plan, measure, False, agent, started)

    def _earlier_copy(
        self, candidates: list[_Seen], data: bytes, messages: list[Any], tool_use_id: str
    ) -> tuple[_Seen, Any, int] | None:
        """The earlier result still in the conversation whose original equals ``data``, where it is."""
        for entry in candidates:
            if entry.tool_use_id == tool_use_id or entry.data != data:
                continue
            found = _find_result(messages, entry.tool_use_id)
            if found is not None:
                return entry, found[0], found[1]
        return None

    async def _rewrite(self, message: Any, index: int, items: int, kept_name: str, kept_id: str) -> Any | None:
        """The marker block for block ``index`` of ``message`` (its original stashed first), or ``None``.

        ``items``: how many content items its original had (a stash key each), whatever it holds now.
        """
        block = message["content"][index]
        result = block["toolResult"]
        if self._stash is not None and not await self._stash.ensure(block, message, index):
            return None  # the original is not stored: keep it rather than lose it
        original = {"toolResult": {"toolUseId": result["toolUseId"], "content": [{}] * items}}
        refs = self._stash.refs_for(original, message, index) if self._stash is not None else []
        return {
            "toolResult": {
                "toolUseId": result["toolUseId"],
                "status": result["status"],
                "content": [{"text": duplicate_marker(kept_name, kept_id, refs)}],
            }
        }


def _find_result(messages: list[Any], tool_use_id: str) -> tuple[Any, int] | None:
    """The message and block index of the result of call ``tool_use_id``, newest first."""
    for message in reversed(messages):
        if message.get("role") != "user":
            continue
        for index, block in enumerate(message.get("content", [])):
            if block.get("toolResult", {}).get("toolUseId") == tool_use_id:
                return message, index
    return None
