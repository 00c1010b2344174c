"""Dedupe: a tool result equal to an earlier one still in the conversation is kept once.

Agents re-read: the same file, page or query, each copy billed on every later call. As each tool
result arrives, its original content (the status and every item, media included, in the stash's
encoding) is compared with the originals of the earlier results still in the conversation: first
by a native 64-bit hash, then in full (the earlier original read back from the stash, so the
strategy holds a hash per result, not a copy; without a stash it keeps the bytes). On a match one
copy becomes

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
from ..._run import bound, current_state
from ...stash import encode_value, format_refs
from ...types import ContextState
from ._messages import is_pinned
from .base import BaseOffloadStrategy

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
    """An original result that arrived: its call, its tool, and what its full comparison reads."""

    tool_use_id: str
    tool_name: str
    status: Any
    items: int
    """How many content items the original had (one stash key each)."""
    data: bytes | None
    """Its canonical bytes, kept only without a stash to read the original back from."""


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
        # Used on its own (no manager's state bound): per agent, hash of an original -> the results
        # that arrived with it. Under a manager the same lives in its state for the agent.
        self._alone: WeakKeyDictionary[Any, dict[int, list[_Seen]]] = WeakKeyDictionary()

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
        state = current_state()  # the manager's for this agent: its edits go into that agent's journal

        async def _on_arrival(event: MessageAddedEvent) -> None:
            try:
                with bound(state):
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
        """The originals seen for ``agent``: in the manager's state for it, else (used on its own) here."""
        held = current_state()
        if held is not None:
            slot = held.slot_for(self)
            seen: dict[int, list[_Seen]] | None = slot.get("seen")
            if seen is None:
                seen = slot["seen"] = {}
            return seen
        seen = self._alone.get(agent)
        if seen is None:
            seen = self._alone[agent] = {}
        return seen

    async def arrived(self, agent: Agent, message: Any) -> bool:
        """Deduplicate the tool results of ``message`` (just added to ``agent``); ``True`` on a rewrite."""
        if message.get("role") != "user" or not any("toolResult" in b for b in message.get("content", [])):
            return False
        messages = agent.messages
        names = _names_for(messages, message)
        seen = self._registry(agent)
        keep = self.keep_for(agent)
        here = next((i for i in range(len(messages) - 1, -1, -1) if messages[i] is message), -1)
        keeps_bytes = self._stash is None or not hasattr(self._stash, "retrieve_raw")
        plan: list[tuple[Any, int, Any, int]] = []
        started = now_ns()
        measure = Measure(agent.model, self._encoding)
        for index, block in enumerate(message["content"]):
            if not self._matches_block(block, message, names):
                continue
            result = block["toolResult"]
            data = canonical(result)
            entries = seen.setdefault(_native.content_hash(data), [])
            tool_use_id = str(result["toolUseId"])
            name = names.get(tool_use_id, "unknown")
            items = len(result.get("content", []))
            arrival = _Seen(tool_use_id, name, result.get("status"), items, data if keeps_bytes else None)
            earlier = await self._earlier_copy(entries, result, data, messages)
            if earlier is None:
                entries.append(arrival)
                continue
            entry, earlier_message, earlier_index, earlier_position = earlier
            if keep == "first":
                target = (message, index, items, here)
                kept_id, kept_name = entry.tool_use_id, entry.tool_name
            else:
                target = (earlier_message, earlier_index, entry.items, earlier_position)
                kept_id, kept_name = tool_use_id, name
            target_message, target_index, target_items, target_position = target
            replacement = None
            if not (target_position >= 0 and is_pinned(messages, target_position)):
                replacement = await self._rewrite(target_message, target_index, target_items, kept_name, kept_id)
            if replacement is None:
                entries.append(arrival)  # both copies stay: the new one can be matched too
                continue
            old = target_message["content"][target_index]
            plan.append((target_message, target_index, replacement, await measure.block("user", old)))
            if keep == "last":
                # The earlier copy is gone from the conversation; the new one is the copy to match.
                entries.remove(entry)
                entries.append(arrival)
            logger.debug(
                "tool_use_id=<%s>, kept=<%s> | duplicate tool result rewritten", old["toolResult"]["toolUseId"], kept_id
            )
        return await self._commit(plan, measure, False, agent, started)

    async def _earlier_copy(
        self, entries: list[_Seen], result: Mapping[str, Any], data: bytes, messages: list[Any]
    ) -> tuple[_Seen, Any, int, int] | None:
        """The earlier result still in the conversation whose original equals ``result``'s, and where it is.

        Entries whose result left the conversation are forgotten on the way.
        """
        for entry in list(entries):
            if entry.tool_use_id == result["toolUseId"]:
                continue
            found = _find_result(messages, entry.tool_use_id)
            if found is None:
                entries.remove(entry)
                continue
            if await self._same_original(entry, result, data):
                return (entry, *found)
        return None

    async def _same_original(self, entry: _Seen, result: Mapping[str, Any], data: bytes) -> bool:
        """Whether ``entry``'s original equals ``result`` in full (the hashes already matched)."""
        if entry.data is not None:
            return entry.data == data
        content = result.get("content", [])
        if entry.status != result.get("status") or entry.items != len(content):
            return False
        assert self._stash is not None
        for j, item in enumerate(content):
            try:
                stored = await self._stash.retrieve_raw(f"{entry.tool_use_id}_{j}")
            except Exception:
                logger.debug("tool_use_id=<%s> | original not readable, not a duplicate", entry.tool_use_id)
                return False
            if stored is None or bytes(stored) != encode_value(item):
                return False
        return True

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


def _find_result(messages: list[Any], tool_use_id: str) -> tuple[Any, int, int] | None:
    """The message, block index and message position of the result of call ``tool_use_id``, newest first."""
    for position in range(len(messages) - 1, -1, -1):
        message = messages[position]
        if message.get("role") != "user":
            continue
        for index, block in enumerate(message.get("content", [])):
            if block.get("toolResult", {}).get("toolUseId") == tool_use_id:
                return message, index, position
    return None


def _names_for(messages: list[Any], message: Mapping[str, Any]) -> dict[str, str]:
    """ToolUseId -> tool name for the results of ``message``: its calls, looked up from the end back."""
    wanted = {b["toolResult"]["toolUseId"] for b in message.get("content", []) if "toolResult" in b}
    names: dict[str, str] = {}
    for position in range(len(messages) - 1, -1, -1):
        if not wanted:
            break
        if messages[position].get("role") != "assistant":
            continue
        for block in messages[position].get("content", []):
            use = block.get("toolUse")
            if use is not None and use.get("toolUseId") in wanted:
                wanted.discard(use["toolUseId"])
                names[use["toolUseId"]] = use["name"]
    return names
