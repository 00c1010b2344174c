"""Reductions that survive a session restore (``ContextManager(persist_reductions=True)``).

A message-log session manager (``RepositorySessionManager``: the file, S3 and AgentCore ones)
stores each message once, as it is added, and never sees the pipeline's later edits; restored,
an agent would get its whole unreduced history back. What we keep instead is a *recipe* in
``agent.state`` (which every session manager already saves and restores): how to turn the log
into the live ``agent.messages``. It names log messages by position and blocks by index, and
stores only what the log does not hold (previews, markers, summaries), so it stays small enough
for the deep copy each sync makes. Its format (machine-read, versioned)::

    {"format": 1,
     "log": [count, digest],          # how many log messages it covers, a digest of their ids
     "messages": [                    # the live messages, in order
        {"keep": [first, last]},      # log messages first..last, unchanged
        {"message": {..., "content": [{"from": [position, index]} | {"new": block}, ...]}}]}

Log messages past ``count`` arrived after the last reduction and follow as they are.

The log's blocks are matched by identity, and then by content: our strategies replace blocks
(``content[i] = new``), remove messages and build new message dicts around kept blocks, but the SDK
rewrites content in place where a guardrail intervenes (``Agent._redact_user_content`` sets a tool
result's ``content``; the session manager rewrites its latest log message with the live one), and a
tool may do the same. So each block also carries a digest of its content when it arrived; a block
whose content no longer gives that digest is no longer the log's (its log message may or may not
have been rewritten) and is recorded as a new block, from the live conversation. A block is held
here from its arrival until it leaves the live conversation, so its ``id`` cannot be taken by a
newer object while it may still be matched.

The recipe is recorded once per invocation, when it ends (before the session manager's own sync
at ``AfterInvocationEvent``). A session synced mid-invocation holds the previous invocation's
recipe: it covers only log messages older than the invocation, and a restore appends the rest as
the log holds them (rewritten, where a guardrail redacted them).
"""

from __future__ import annotations

import asyncio
import copy
import hashlib
import logging
import time
from collections.abc import Awaitable, Callable, Iterator, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any, TypeVar

from .stash import encode_value, refs_at_end

__all__ = [
    "RECIPE_KEY",
    "RESTORE_RETRY_PAUSE",
    "ReductionLog",
    "ReductionRestoreError",
    "rebuild",
    "references_in",
    "restore_stash",
    "run_blocking",
    "still_describes",
]

logger = logging.getLogger(__name__)

RECIPE_KEY = "strands_offload:reductions"
"""The ``agent.state`` key of the recipe."""

_FORMAT = 1

RESTORE_RETRY_PAUSE = 0.5
"""Seconds between the failed stash step of a restore and its one retry."""

_ROLES = ("user", "assistant")

T = TypeVar("T")


class ReductionRestoreError(RuntimeError):
    """A session's recorded reductions cannot be applied to its message log."""


@dataclass
class _Arrival:
    """One log message as the session manager stored it."""

    fields: dict[str, Any]
    """Everything but the content (role, tracking id, metadata), copied at arrival."""
    blocks: list[Any]
    """The content's blocks at arrival; an entry becomes ``None`` once that block left the
    conversation or changed in place (so the message, matched block by block, is never again kept
    whole)."""
    digests: list[bytes | None]
    """The digest of each block's content at arrival (``None``: not JSON, never matched)."""


def content_digest(block: Any) -> bytes | None:
    """A digest of a block's content (its stash encoding), or ``None`` for a value JSON cannot hold."""
    try:
        return hashlib.blake2b(encode_value(block), digest_size=16).digest()
    except Exception:
        return None


def _fields(message: Mapping[str, Any]) -> dict[str, Any]:
    return {key: copy.deepcopy(value) for key, value in message.items() if key != "content"}


def _id_line(message: Mapping[str, Any]) -> bytes:
    return f"{message.get('tracking_id') or ''}\n".encode()


def log_digest(messages: list[Any]) -> str:
    """The digest of a log's tracking ids, in order (what a recipe checks the restored log against)."""
    digest = hashlib.sha256()
    for message in messages:
        digest.update(_id_line(message))
    return digest.hexdigest()


class ReductionLog:
    """The message log as the session manager holds it, and the recipe from it to the live messages."""

    def __init__(self) -> None:
        self._arrivals: list[_Arrival] = []
        self._where: dict[int, tuple[int, int]] = {}  # id(block) -> (log position, block index)
        self._by_id: dict[str | None, list[int]] = {}  # tracking id -> log positions
        self._digest = hashlib.sha256()

    def __len__(self) -> int:
        return len(self._arrivals)

    def arrived(self, message: Mapping[str, Any]) -> None:
        """Record a message the session manager has just stored."""
        position = len(self._arrivals)
        blocks = list(message["content"])
        self._arrivals.append(_Arrival(_fields(message), blocks, [content_digest(block) for block in blocks]))
        for index, block in enumerate(blocks):
            self._where.setdefault(id(block), (position, index))
        self._by_id.setdefault(message.get("tracking_id"), []).append(position)
        self._digest.update(_id_line(message))

    def _forget_changed(self, messages: list[Any]) -> None:
        """Stop matching the live blocks whose content changed in place since they arrived.

        The log may hold such a block as it was (a tool edited it) or as it is now (a guardrail
        redaction, which the session manager wrote back): the recipe takes it from the live
        conversation instead, and never keeps its log message whole again.
        """
        for message in messages:
            for block in message["content"]:
                found = self._where.get(id(block))
                if found is None:
                    continue
                position, index = found
                arrival = self._arrivals[position]
                if arrival.blocks[index] is block and content_digest(block) == arrival.digests[index]:
                    continue
                del self._where[id(block)]
                if arrival.blocks[index] is block:
                    arrival.blocks[index] = None

    def _release_gone(self, messages: list[Any]) -> None:
        """Stop holding the blocks that left the conversation (they cannot come back)."""
        live = {id(block) for message in messages for block in message["content"]}
        for key in [key for key in self._where if key not in live]:
            position, index = self._where.pop(key)
            self._arrivals[position].blocks[index] = None

    def _kept_position(self, message: Mapping[str, Any], used: set[int]) -> int | None:
        """The log position ``message`` is, unchanged since it arrived, or ``None``."""
        for position in self._by_id.get(message.get("tracking_id"), ()):
            arrival = self._arrivals[position]
            if position in used:
                continue
            content = message["content"]
            if len(content) == len(arrival.blocks) and all(
                a is b for a, b in zip(content, arrival.blocks, strict=True)
            ):
                if {k: v for k, v in message.items() if k != "content"} == arrival.fields:
                    return position
        return None

    def recipe(self, messages: list[Any]) -> dict[str, Any]:
        """The recipe that turns the log into ``messages`` (see the module docstring)."""
        self._forget_changed(messages)
        self._release_gone(messages)
        entries: list[dict[str, Any]] = []
        used: set[int] = set()
        for message in messages:
            position = self._kept_position(message, used)
            if position is not None:
                used.add(position)
                last = entries[-1].get("keep") if entries else None
                if last is not None and last[1] + 1 == position:
                    last[1] = position
                else:
                    entries.append({"keep": [position, position]})
                continue
            items = []
            for block in message["content"]:
                found = self._where.get(id(block))
                items.append({"from": list(found)} if found is not None else {"new": copy.deepcopy(block)})
            entries.append(
                {"message": {k: (items if k == "content" else copy.deepcopy(v)) for k, v in message.items()}}
            )
        count = len(self._arrivals)
        return {"format": _FORMAT, "log": [count, self._digest.hexdigest()], "messages": entries}


def still_describes(recorded: Mapping[str, Any] | None, recipe: Mapping[str, Any]) -> bool:
    """Whether ``recorded`` still gives the live messages ``recipe`` describes.

    It does when the only change since is log messages that arrived and are unchanged (a restore
    appends those as they are), and, with nothing recorded yet, when nothing was reduced at all.
    Then nothing needs writing: a session sync with an unchanged state writes no agent record.
    """
    count = recorded["log"][0] if recorded is not None else 0
    entries = list(recipe["messages"])
    total = recipe["log"][0]
    if total > count:
        last = entries[-1] if entries else None
        if last is None or "keep" not in last or last["keep"][1] != total - 1 or last["keep"][0] > count:
            return False
        first = last["keep"][0]
        entries[-1:] = [] if first == count else [{"keep": [first, count - 1]}]
    return entries == (recorded["messages"] if recorded is not None else [])


def _fail(session_id: str | None, why: str) -> ReductionRestoreError:
    return ReductionRestoreError(
        f"session_id=<{session_id}> | the recorded context reductions cannot be applied: {why}. "
        f"Start a new session, or remove the {RECIPE_KEY!r} key from the stored agent state "
        "to restore the unreduced history."
    )


def rebuild(recipe: Any, log: list[Any], session_id: str | None = None) -> list[Any]:
    """The live messages a recipe describes, from the restored message log.

    Kept messages and blocks are the log's own objects; new blocks come from the recipe.

    Raises:
        ReductionRestoreError: The recipe is malformed, of an unknown format, or does not match
            the log (another session's, or a log edited since).
    """
    if not isinstance(recipe, dict) or recipe.get("format") != _FORMAT:
        found = recipe.get("format") if isinstance(recipe, dict) else type(recipe).__name__
        raise _fail(session_id, f"unknown recipe format {found!r}")
    try:
        count, digest = recipe["log"]
        entries = recipe["messages"]
        if not (isinstance(count, int) and 0 <= count <= len(log)) or log_digest(log[:count]) != digest:
            raise _fail(session_id, f"the message log ({len(log)} messages) is not the one recorded")
        rebuilt: list[Any] = []
        for entry in entries:
            if "keep" in entry:
                first, last = entry["keep"]
                if not 0 <= first <= last < count:
                    raise _fail(session_id, f"kept messages {first}..{last} are outside the log")
                rebuilt.extend(log[first : last + 1])
                continue
            recorded = entry["message"]
            if not (isinstance(recorded, dict) and recorded.get("role") in _ROLES):
                raise _fail(session_id, "a recorded message is not a user or assistant message")
            if not isinstance(recorded.get("content"), list):
                raise _fail(session_id, "a recorded message has no content list")
            content = []
            for item in recorded["content"]:
                if not isinstance(item, dict):
                    raise _fail(session_id, "a recorded block is not an object")
                if "from" in item:
                    position, index = item["from"]
                    if not (0 <= position < count and 0 <= index < len(log[position]["content"])):
                        raise _fail(session_id, f"block {index} of log message {position} is not in the log")
                    content.append(log[position]["content"][index])
                elif isinstance(item["new"], dict):
                    content.append(item["new"])
                else:
                    raise _fail(session_id, "a recorded new block is not an object")
            rebuilt.append({k: (content if k == "content" else v) for k, v in recorded.items()})
    except ReductionRestoreError:
        raise
    except Exception as error:  # any shape JSON can take: a tampered recipe is refused, never a crash
        raise _fail(session_id, f"the recipe is malformed ({type(error).__name__}: {error})") from error
    rebuilt.extend(log[count:])
    return rebuilt


def restore_stash(resolve: Callable[[], Awaitable[list[str]]], session_id: str | None) -> None:
    """The stash step of a restore: ``resolve`` returns the references nothing answers.

    A storage failure (an outage, a throttle the storage's own retries did not outlast) is retried
    once after :data:`RESTORE_RETRY_PAUSE`; a second one, and any unresolved reference, raise
    :class:`ReductionRestoreError` (the failure chained), before the agent's messages are touched.
    """
    for attempt in (1, 2):
        try:
            missing = run_blocking(resolve)
        except Exception as error:
            if attempt == 1:
                logger.warning(
                    "session_id=<%s>, error=<%s> | the stash failed while restoring the recorded reductions, "
                    "retrying once",
                    session_id,
                    error,
                )
                time.sleep(RESTORE_RETRY_PAUSE)
                continue
            raise ReductionRestoreError(
                f"session_id=<{session_id}> | the recorded context reductions cannot be restored: the stash "
                f"storage failed twice ({type(error).__name__}: {error}). Nothing was restored; try again "
                "once the storage answers."
            ) from error
        if missing:
            raise ReductionRestoreError(
                f"session_id=<{session_id}> | restored previews name stash entries that neither the "
                f"stash nor the message log holds: {', '.join(missing)}"
            )
        return


def _strings(value: Any) -> Iterator[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for item in value.values():
            yield from _strings(item)
    elif isinstance(value, list):
        for item in value:
            yield from _strings(item)


def references_in(recipe: Mapping[str, Any]) -> list[str]:
    """The stash keys the recipe's new blocks end with (``[ref: k]`` / ``[refs: k1, k2]``), in order."""
    found: list[str] = []
    for entry in recipe.get("messages", ()):
        for item in entry.get("message", {}).get("content", ()):
            for text in _strings(item.get("new")):
                found.extend(key for key in refs_at_end(text) if key not in found)
    return found


def run_blocking(make: Callable[[], Awaitable[T]]) -> T:
    """Run a coroutine to completion from synchronous code (on a worker thread inside a running loop)."""

    async def main() -> T:
        return await make()

    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(main())
    with ThreadPoolExecutor(max_workers=1, thread_name_prefix="strands-offload-restore") as pool:
        return pool.submit(asyncio.run, main()).result()
