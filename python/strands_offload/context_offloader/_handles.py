"""Opaque handles: what the model sees in place of storage references (``opaque_references=True``).

A handle is ``ref_`` followed by 16 random URL-safe characters; a table per agent maps each handle
to the storage reference it stands for.

With unified storage (``write`` / ``read``) the table is kept in the storage itself, in the
plugin's namespace, under a reserved key derived from the agent id. A plugin restarted on the same
storage and namespace, for an agent with the same id, therefore resolves the handles of an earlier
run; another agent id reads another key, and another namespace another location, so their handles
are not found. The table also records its agent id, and a table naming another agent is ignored.

The reserved key starts with ``.__strands_``, the prefix ``LocalFileStorage`` leaves out of its
listings (and so out of keyword search) and BM25 leaves out of its index; its value is framed like
every offloaded block, so code that unframes each entry of the namespace keeps working. It never
ends in ``_<digits>`` as offloaded blocks do, so it cannot collide with one.

Legacy backends (``store`` / ``retrieve``) choose their own references and cannot hold a value
under a fixed key: with them the table lives only as long as the plugin.

Concurrent offloads of one agent (parallel tool calls) are serialised per table; another process
writing the same agent's table merges with it (read, merge, write), which narrows but does not
close the window in which two writers racing can lose one's new handles.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import logging
import re
import secrets
import threading
from collections.abc import AsyncIterator, Iterable, Sequence
from contextlib import asynccontextmanager
from typing import Any

from ..storage._atomic import INTERNAL_PREFIX
from ._backend import is_legacy_storage
from ._frame import read_frame_raw, write_framed

__all__ = ["HANDLE_PREFIX", "HandleTable", "is_reserved", "table_key"]

logger = logging.getLogger(__name__)

HANDLE_PREFIX = "ref_"
_TABLE_PREFIX = f"{INTERNAL_PREFIX}offload_handles_"
_TABLE_NAME = re.compile(re.escape(_TABLE_PREFIX) + r"[0-9a-f]{32}")
_TABLE_CONTENT_TYPE = "application/vnd.strands-offload.handles+json"
_TABLE_FORMAT = 1
# How long a coroutine waiting for the table's writer sleeps between tries.
_WAIT_SECONDS = 0.002


def table_key(agent_id: str) -> str:
    """The reserved key of ``agent_id``'s handle table, relative to the plugin's namespace."""
    digest = hashlib.sha256(agent_id.encode("utf-8", "surrogatepass")).hexdigest()[:32]
    return f"{_TABLE_PREFIX}{digest}"


def is_reserved(reference: str) -> bool:
    """Whether ``reference`` names a handle table (which is never content to hand to the model)."""
    return _TABLE_NAME.fullmatch(reference.strip("/").rpartition("/")[2]) is not None


class _Mutex:
    """Mutual exclusion for coroutines on any event loop and thread.

    An ``asyncio.Lock`` belongs to the loop it first waits on, while strands may run each agent
    invocation on a fresh loop; a thread lock taken without blocking, retried after short sleeps,
    has no such tie.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()

    @asynccontextmanager
    async def held(self) -> AsyncIterator[None]:
        while not self._lock.acquire(blocking=False):
            await asyncio.sleep(_WAIT_SECONDS)
        try:
            yield
        finally:
            self._lock.release()


class HandleTable:
    """One agent's handles in one storage namespace.

    Args:
        storage: The plugin's storage for the agent (already scoped to its namespace).
        agent_id: The agent's id; the table is bound to it.
    """

    def __init__(self, storage: Any, agent_id: str) -> None:
        self._storage = storage
        self._agent_id = agent_id
        self._durable = not is_legacy_storage(storage)
        self._key = table_key(agent_id)
        self._handles: dict[str, str] = {}
        # Handles this instance dropped, so merging the stored table does not bring them back.
        self._dropped: set[str] = set()
        self._mutex = _Mutex()

    async def issue(self, references: Sequence[str]) -> list[str]:
        """Return a fresh handle per reference (``""`` stays ``""``), saved before they are shown.

        Raises:
            Exception: Whatever the storage raises while saving the table; the handles are then
                forgotten, so the caller can keep the original content instead.
        """
        handles = [f"{HANDLE_PREFIX}{secrets.token_urlsafe(12)}" if reference else "" for reference in references]
        fresh = {handle: reference for handle, reference in zip(handles, references, strict=True) if handle}
        if not fresh:
            return handles
        self._handles.update(fresh)
        if self._durable:
            try:
                await self._save()
            except BaseException:
                for handle in fresh:
                    self._handles.pop(handle, None)
                raise
        return handles

    async def resolve(self, handle: str) -> str | None:
        """The reference behind ``handle``, or None when this agent's table has no such handle.

        A handle this instance did not issue is looked up in the stored table (an earlier run's,
        or another process's for the same agent).

        Raises:
            Exception: Whatever the storage raises while reading the table.
        """
        reference = self._handles.get(handle)
        if reference is not None or not self._durable or not handle.startswith(HANDLE_PREFIX):
            return reference
        self._merge(await self._load())
        return self._handles.get(handle)

    async def drop(self, references: Iterable[str]) -> None:
        """Forget every handle of ``references`` (their entries were deleted) and save the table.

        Raises:
            Exception: Whatever the storage raises while saving the table.
        """
        gone = set(references)
        stale = [handle for handle, reference in self._handles.items() if reference in gone]
        if not stale:
            return
        for handle in stale:
            del self._handles[handle]
        self._dropped.update(stale)
        if self._durable:
            await self._save()

    # ------------------------------------------------------------------ the stored table

    def _merge(self, stored: dict[str, str]) -> None:
        for handle, reference in stored.items():
            if handle not in self._dropped:
                self._handles.setdefault(handle, reference)

    async def _save(self) -> None:
        async with self._mutex.held():
            self._merge(await self._load())
            document = {
                "format": _TABLE_FORMAT,
                "agent_id": self._agent_id,
                "handles": dict(sorted(self._handles.items())),
            }
            payload = json.dumps(document, separators=(",", ":")).encode("utf-8")
            await write_framed(self._storage, self._key, payload, _TABLE_CONTENT_TYPE)
        logger.debug("handles=<%d> | handle table saved", len(self._handles))

    async def _load(self) -> dict[str, str]:
        """The stored table's handles; an absent, unreadable or foreign table counts as empty."""
        try:
            raw, offset, content_type = await read_frame_raw(self._storage, self._key)
        except KeyError:
            return {}
        except ValueError:
            logger.warning("key=<%s> | handle table unreadable, ignoring it", self._key)
            return {}
        handles = _parse_table(bytes(raw[offset:]), content_type, self._agent_id)
        if handles is None:
            logger.warning("key=<%s> | handle table malformed or bound to another agent, ignoring it", self._key)
            return {}
        return handles


def _parse_table(payload: bytes, content_type: str, agent_id: str) -> dict[str, str] | None:
    """The handles of a stored table that belongs to ``agent_id``, else None."""
    if content_type != _TABLE_CONTENT_TYPE:
        return None
    try:
        document = json.loads(payload)
    except (ValueError, RecursionError):  # RecursionError: hostile nesting
        return None
    if not isinstance(document, dict) or document.get("format") != _TABLE_FORMAT:
        return None
    if document.get("agent_id") != agent_id:
        return None
    handles = document.get("handles")
    if not isinstance(handles, dict):
        return None
    return {
        handle: reference
        for handle, reference in handles.items()
        if isinstance(reference, str) and handle.startswith(HANDLE_PREFIX) and not is_reserved(reference)
    }
