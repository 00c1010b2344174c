"""The stash: where the context manager keeps the originals of what it offloads.

Every stashable block of every message the framework adds is written here on arrival, so a
later truncate, drop or summarize can leave a reference the model resolves with the
``retrieve_context`` tool. The layout and the value encoding are the reference's, so a stash
written by either package is read by the other:

* keys ``{toolUseId}_{j}`` (item ``j`` of a tool result) and ``{tracking_id}_{b}`` (block ``b`` of a
  message; ``unknown`` without a tracking id), under ``context/{session_id}/scopes/agent/{agent_id}/``,
  unless an explicitly configured namespaced view is the root;
* values: the block as default ``json.dumps`` text (bytes as base64 strings), UTF-8.

Beyond the reference, the stash remembers the keys whose write failed: the strategies ask it
(``ensure``) before they replace a block, and such a block stays in the conversation instead of
becoming a reference to nothing.
"""

from __future__ import annotations

import base64
import builtins
import json
import logging
import re
from collections.abc import Iterable, Mapping
from typing import Any

from .. import _native
from ..storage.storage import _NamespacedStorage, is_namespaced

logger = logging.getLogger(__name__)

STASH_PREFIX = "context"
# Between the session and the agent id in every stash key (machine-read: the reference's layout).
_AGENT_SCOPE = "scopes/agent"

# Blocks that are never stashed: calls, reasoning (signed, assistant-only) and cache points.
_NOT_STASHED = ("toolUse", "reasoningContent", "cachePoint")


def _bytes_as_base64(value: object) -> object:
    if isinstance(value, (bytes, bytearray)):
        return base64.b64encode(value).decode("ascii")
    raise TypeError(f"Object of type {type(value).__name__} is not JSON serializable")


def encode_value(value: object) -> bytes:
    """The stored form of a block: default ``json.dumps`` text with bytes as base64, in UTF-8."""
    try:
        return _native.json_dumps_utf8(value)
    except TypeError:
        # bytes (images, documents) need the base64 hook; json reports anything else itself.
        return json.dumps(value, default=_bytes_as_base64).encode("utf-8")


def decode_value(data: bytes) -> object:
    """The block a stored value was made from (bytes stay base64 strings)."""
    return json.loads(data.decode("utf-8"))


def format_refs(refs: list[str]) -> str:
    """The reference suffix of an offload marker: ``""``, `` [ref: k]`` or `` [refs: k1, k2]``."""
    if not refs:
        return ""
    label = "ref" if len(refs) == 1 else "refs"
    return f" [{label}: {', '.join(refs)}]"


# A ``format_refs`` suffix closing a text.
_REFS_AT_END = re.compile(r"\[refs?: ([^\[\]]+)\]\Z")


def refs_at_end(text: str) -> list[str]:
    """The keys a ``format_refs`` suffix at the very end of ``text`` names (none without one)."""
    match = _REFS_AT_END.search(text)
    return match.group(1).split(", ") if match else []


def _stash_root(storage: Any, session_id: str, agent_id: str, custom_stash_namespace: bool) -> Any:
    """The view the stash keys live in: a caller's namespaced view as is, else this agent's scope."""
    caller_scoped = custom_stash_namespace and is_namespaced(storage)
    scope = f"{STASH_PREFIX}/{session_id}/{_AGENT_SCOPE}/{agent_id}"
    return storage if caller_scoped else _NamespacedStorage(storage, scope)


class Stash:
    """Stored originals of one agent's offloaded blocks.

    Args:
        storage: Any storage with ``read`` / ``write`` / ``delete`` / ``list`` coroutines.
        session_id: The agent's session id (first level of the layout).
        agent_id: The agent's id.
        custom_stash_namespace: The storage was configured for the stash explicitly; a namespaced
            view is then used as the exact root, shared by every agent given it.
    """

    def __init__(self, storage: Any, session_id: str, agent_id: str, *, custom_stash_namespace: bool = False) -> None:
        self._base_storage = storage
        self._session_id = session_id
        self._storage = _stash_root(storage, session_id, agent_id, custom_stash_namespace)
        # Keys whose last write failed: their blocks stay in context until a retry stores them.
        self._failed: set[str] = set()

    @property
    def storage_type_name(self) -> str:
        """Class name of the storage given to the stash (session snapshots record it)."""
        return type(self._base_storage).__name__

    @property
    def storage(self) -> Any:
        """The storage view the stash reads and writes (its keys are the references)."""
        return self._storage

    async def store(self, block_id: str, block_index: int, data: bytes, *, keep_existing: bool = False) -> str:
        """Write ``data`` under ``{block_id}_{block_index}`` and return that key.

        With ``keep_existing`` a value already under the key is left as it is.
        """
        key = f"{block_id}_{block_index}"
        try:
            if not (keep_existing and await self._storage.read(key) is not None):
                await self._storage.write(key, data)
        except BaseException:
            self._failed.add(key)
            raise
        self._failed.discard(key)
        return key

    def refs_for(self, block: Mapping[str, Any], message: Mapping[str, Any], block_index: int) -> list[str]:
        """The keys that hold ``block`` (block ``block_index`` of ``message``)."""
        if "toolResult" in block:
            result = block["toolResult"]
            return [f"{result['toolUseId']}_{j}" for j in range(len(result["content"]))]
        return [f"{message.get('tracking_id', 'unknown')}_{block_index}"]

    def _entries(
        self, message: Mapping[str, Any], skip_tool_use_ids: Iterable[str] | None
    ) -> Iterable[tuple[str, int, Any]]:
        """(block id, index, value) of every stashable part of ``message``."""
        skip = skip_tool_use_ids or ()
        for index, block in enumerate(message["content"]):
            if "toolResult" in block:
                result = block["toolResult"]
                if result["toolUseId"] in skip:
                    continue
                for j, item in enumerate(result["content"]):
                    yield result["toolUseId"], j, item
            elif not any(kind in block for kind in _NOT_STASHED):
                yield message.get("tracking_id", "unknown"), index, block

    async def store_message(
        self,
        message: Mapping[str, Any],
        skip_tool_use_ids: frozenset[str] | None = None,
        *,
        keep_existing: bool = False,
    ) -> None:
        """Stash every stashable part of ``message``; a failed part is logged and the rest go on.

        Args:
            message: The message.
            skip_tool_use_ids: Tool results of these calls are not stashed (retrieval results).
            keep_existing: Leave values already stored under a key as they are.
        """
        for block_id, index, value in self._entries(message, skip_tool_use_ids):
            try:
                await self.store(block_id, index, encode_value(value), keep_existing=keep_existing)
            except Exception:
                logger.warning(
                    "block_id=<%s>, block_index=<%s> | failed to stash block", block_id, index, exc_info=True
                )

    async def ensure(self, block: Mapping[str, Any], message: Mapping[str, Any], block_index: int) -> bool:
        """Whether ``block`` may be replaced: ``False`` while the write of its original has failed.

        A failed write is retried here first. Blocks this stash never tried to store (markers the
        pipeline wrote, messages appended outside the agent loop) are replaced as in the reference.
        """
        if not self._failed:
            return True
        if "toolResult" in block:
            result = block["toolResult"]
            parts = [(result["toolUseId"], j, item) for j, item in enumerate(result["content"])]
        else:
            parts = [(message.get("tracking_id", "unknown"), block_index, block)]
        for block_id, index, value in parts:
            if f"{block_id}_{index}" not in self._failed:
                continue
            try:
                await self.store(block_id, index, encode_value(value), keep_existing=True)
            except Exception:
                logger.warning(
                    "block_id=<%s>, block_index=<%s> | original still not stashed, block kept in context",
                    block_id,
                    index,
                    exc_info=True,
                )
                return False
        return True

    async def retrieve(self, reference: str) -> object | None:
        """The decoded value under ``reference``, or ``None``."""
        data = await self._storage.read(reference)
        if data is None:
            return None
        return decode_value(data)

    async def retrieve_raw(self, reference: str) -> bytes | None:
        """The stored bytes under ``reference``, or ``None``."""
        data: bytes | None = await self._storage.read(reference)
        return data

    async def list(self) -> builtins.list[str]:
        """Every key of this stash."""
        keys: builtins.list[str] = await self._storage.list("")
        return keys

    async def delete(self, reference: str) -> None:
        """Delete one entry."""
        await self._storage.delete(reference)
        logger.debug("reference=<%s> | stash entry deleted", reference)

    async def take_snapshot(self) -> dict[str, Any]:
        """Every entry, decoded, by key (what an inline session snapshot embeds)."""
        entries: dict[str, Any] = {}
        for key in await self.list():
            data = await self._storage.read(key)
            if data is not None:
                entries[key] = decode_value(data)
        return entries

    async def load_snapshot(self, entries: Mapping[str, Any]) -> None:
        """Write back the entries of :meth:`take_snapshot`."""
        for key, value in entries.items():
            await self._storage.write(key, encode_value(value))
            self._failed.discard(key)

    async def clear(self) -> None:
        """Delete every entry of this agent's stash."""
        for key in await self.list():
            await self._storage.delete(key)

    async def clear_session(self) -> None:
        """Delete the stash of every agent of this session.

        A stash rooted at a caller-scoped view is shared beyond the session and left to its owner.
        """
        if self._storage is self._base_storage:
            logger.debug("session_id=<%s> | stash is caller-scoped, not deleted with the session", self._session_id)
            return
        prefix = f"{STASH_PREFIX}/{self._session_id}/"
        for key in await self._base_storage.list(prefix):
            await self._base_storage.delete(key)
