"""Summaries started ahead of the turn that needs them (``Offload.summarize(..., ahead=True)``).

Once the model has asked for tools, the span a message-level summarize will take at the next
model call is known but for the tool results still to come: their size is estimated from earlier
results, and when the projection crosses the strategy's condition the summary starts as a task on
the running loop, concurrently with the tools. The next model call's pass uses it only if the span
it computes is the same messages holding the same blocks with the same content as when it started
(a tool may edit earlier results in place, a guardrail redact them: a summary of what they held
must not come back); otherwise, and at the end of every invocation however it ended, the task is
cancelled and awaited, and counted as unused. The end of an invocation is seen twice: at its
``AfterInvocationEvent`` and, should another hook of that event have raised first, at the next
``BeforeInvocationEvent``; a task of an event loop that is no longer the running one is dropped.
"""

from __future__ import annotations

import asyncio
import copy
import logging
from collections.abc import Awaitable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from .... import _native
from ..._measure import Measure

logger = logging.getLogger(__name__)

Identities = tuple[tuple[int, str | None, tuple[int, ...]], ...]


@dataclass(frozen=True)
class SpanKey:
    """What makes two spans the same: the same objects, holding equal content.

    The same message objects, ids and block objects, in order, and equal content: a copy of every
    message's role and blocks, down to the strings (an in-place edit that keeps the length,
    ``SECRET-123`` to ``[REDACTED]``, still differs).
    """

    identities: Identities
    content: list[tuple[Any, Any]]

    def matches(self, group: list[Any]) -> bool:
        """Whether ``group`` is this span, unedited since the key was taken."""
        if _identities(group) != self.identities:
            return False
        try:
            return bool(self.content == [(m["role"], m["content"]) for m in group])
        except Exception:
            return False  # a block that cannot be compared is not known to be unchanged


def _identities(group: list[Any]) -> Identities:
    return tuple((id(m), m.get("tracking_id"), tuple(id(b) for b in m["content"])) for m in group)


def span_key(group: list[Any]) -> SpanKey:
    """The key of ``group`` as it is now (raises when its content cannot be copied)."""
    return SpanKey(_identities(group), copy.deepcopy([(m["role"], m["content"]) for m in group]))


@dataclass
class Ahead:
    """A summary running ahead, for the span ``key``."""

    key: SpanKey
    task: asyncio.Future[str | None]


def start(key: SpanKey, work: Awaitable[str | None]) -> Ahead:
    """Run ``work`` as a task on the running loop."""
    return Ahead(key, asyncio.ensure_future(work))


def on_running_loop(pending: Ahead) -> bool:
    """Whether ``pending`` runs on the running event loop (each ``agent(...)`` call runs its own)."""
    try:
        return pending.task.get_loop() is asyncio.get_running_loop()
    except RuntimeError:
        return False


def drop(pending: Ahead) -> None:
    """Let go of a task of another event loop (closed, or not ours to wait on): cancelled if it can be."""
    task = pending.task
    if task.done():
        if not task.cancelled():
            task.exception()  # retrieved, so its loop does not report it as never retrieved
        return
    try:
        task.get_loop().call_soon_threadsafe(task.cancel)  # that loop may still run, in another thread
    except RuntimeError:
        pass  # the loop is closed: the task never runs again


async def settle(pending: Ahead) -> None:
    """Cancel ``pending`` and wait for it to end; its outcome, whatever it is, is dropped.

    A task of another event loop is dropped without waiting (see :func:`drop`). A cancellation of
    the caller itself still propagates (``asyncio.wait`` raises it).
    """
    if not on_running_loop(pending):
        drop(pending)
        return
    pending.task.cancel()
    await asyncio.wait({pending.task})
    if not pending.task.cancelled():
        pending.task.exception()  # retrieved, so the loop does not report it as never retrieved


def placeholder_results(calls: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """The user message the tool results will arrive in, with empty results.

    Its place in the conversation is what moves the ``preserve_recent`` window.
    """
    return {
        "role": "user",
        "content": [
            {"toolResult": {"toolUseId": call["toolUseId"], "status": "success", "content": [{"text": ""}]}}
            for call in calls
        ],
    }


async def expected_result_tokens(
    messages: list[Any], calls: Sequence[Mapping[str, Any]], names: Mapping[str, str], measure: Measure
) -> int:
    """Tokens the results of ``calls`` are expected to take.

    Per call: the mean of earlier results of the same tool, else of all earlier results, else none.
    With a media rule on ``measure`` (``media_tokens=``), results count their images and documents too.
    """
    by_tool: dict[str, list[int]] = {}
    every: list[int] = []
    for message in messages:
        if message["role"] != "user":
            continue
        for block in message["content"]:
            if "toolResult" in block:
                tokens = await measure.block("user", block)
                if measure.media is not None:
                    tokens += _native.media_block_tokens(block, measure.media)
                every.append(tokens)
                by_tool.setdefault(names.get(block["toolResult"]["toolUseId"], ""), []).append(tokens)
    expected = 0
    for call in calls:
        earlier = by_tool.get(str(call.get("name", ""))) or every
        if earlier:
            expected += sum(earlier) // len(earlier)
    return expected
