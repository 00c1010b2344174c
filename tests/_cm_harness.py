"""Shared parts of the context manager tests: the two implementations, a scripted model, pipeline drivers.

Every test in ``tests/context_manager`` runs against an :class:`Impl`: the reference
(``strands.experimental.context_manager`` over the private ``strands._context_manager``) or ours
(``strands_offload.context_manager``). Differential tests run a case through the reference and
through the implementation under test and compare the outcomes byte for byte, so with the
``reference`` parameter they check that the harness itself is deterministic.
"""

from __future__ import annotations

import asyncio
import base64
import copy
import hashlib
import importlib
import json
from collections.abc import AsyncIterable, Collection, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from types import ModuleType
from typing import Any

import pytest
import strands.types.content as sdk_content
from strands import Agent
from strands.event_loop.event_loop import _estimate_input_tokens
from strands.hooks.events import AfterModelCallEvent, BeforeModelCallEvent, MessageAddedEvent
from strands.models.model import Model
from strands.types.content import Messages
from strands.types.exceptions import ContextWindowOverflowException
from strands.types.streaming import StreamEvent
from strands_offload.demo.scripted_model import Reply as Reply
from strands_offload.demo.scripted_model import Script as Script
from strands_offload.demo.scripted_model import ToolCall as ToolCall
from strands_offload.demo.scripted_model import reply_events

# --------------------------------------------------------------------------------------------------
# Implementations


@dataclass(frozen=True)
class Impl:
    """One implementation of the context manager: where its public and private modules live."""

    name: str
    public_path: str
    root_path: str

    @property
    def public(self) -> ModuleType:
        return importlib.import_module(self.public_path)

    def module(self, sub: str) -> ModuleType:
        """The module that mirrors the reference's ``strands._context_manager.<sub>``."""
        return importlib.import_module(f"{self.root_path}.{sub}")

    @property
    def ContextManager(self) -> Any:  # noqa: N802 - mirrors the class name
        return self.public.ContextManager

    @property
    def Offload(self) -> Any:  # noqa: N802 - mirrors the namespace object's name
        return self.public.Offload

    def agentic(self) -> Any:
        """What to pass as ``Agent(context_manager=...)`` for the agentic mode.

        The Agent wires the agentic tools and middleware only for the literal string, which always
        builds the reference's class; ours does the same wiring from the instance itself.
        """
        return "agentic" if self is REFERENCE else self.ContextManager.from_strategy("agentic")

    def auto(self) -> Any:
        """What to pass as ``Agent(context_manager=...)`` for the ``"auto"`` preset."""
        return "auto" if self is REFERENCE else self.ContextManager.from_strategy("auto")


REFERENCE = Impl("reference", "strands.experimental.context_manager", "strands._context_manager")
OURS = Impl("ours", "strands_offload.context_manager", "strands_offload.context_manager")


IMPL_PARAMS = [pytest.param(REFERENCE, id="reference"), pytest.param(OURS, id="ours")]
"""Parametrize a test over both implementations.

Neither is skipped: if ``strands_offload.context_manager`` cannot be imported, every "ours" test
fails with the import error, since that is a defect of the package, not a missing extra.
"""

OURS_ONLY = [pytest.param(OURS, id="ours")]
"""Parametrize a test that pins a deliberate difference of ours."""


# --------------------------------------------------------------------------------------------------
# Scripted model


# ToolCall, Reply, Script and the stream events are the demo model's (strands_offload.demo.scripted_model).


def replies(*scripted: Reply) -> Script:
    """A script that plays ``scripted`` in order, then answers ``done``."""
    queue = list(scripted)

    def script(_messages: Messages) -> Reply:
        return queue.pop(0) if queue else Reply("done")

    return script


def encode_for_compare(value: Any) -> str:
    """JSON text of ``value`` with key order kept and bytes as base64, for byte-exact comparison."""

    def default(obj: object) -> object:
        if isinstance(obj, (bytes, bytearray)):
            return {"__bytes__": base64.b64encode(obj).decode("ascii")}
        raise TypeError(f"not JSON serializable: {type(obj).__name__}")

    return json.dumps(value, default=default, ensure_ascii=False)


def summary_of(blocks: Sequence[Any], unit: str) -> str:
    """The deterministic summary the model gives: a count and a digest of exactly what it was sent."""
    digest = hashlib.sha256(encode_for_compare(list(blocks)).encode()).hexdigest()[:12]
    return f"summary of {len(blocks)} {unit} #{digest}"


SUMMARY_MODES = ("digest", "empty", "error")
"""How the model answers a summarization request: a digest summary, blank text, or an exception."""


class ContextModel(Model):
    """A provider stand-in for the context manager tests.

    Agent-loop calls play ``script``; summarization calls (the context manager's ``<content>``
    request and the agentic tool's "Please summarize this conversation.") are answered with
    :func:`summary_of` their input, so two implementations sending the same input get the same
    summary. Usage is reported from the SDK's base ``count_tokens`` (not overridden), as a
    provider reports usage, so utilization conditions fire as they would in production.

    Args:
        script: Decides each agent-loop reply from the messages.
        context_window_limit: Reported through the config, like a provider's setting.
        overflow_first: Raise ``ContextWindowOverflowException`` for this many agent-loop calls.
        overflow_calls: Raise it on these agent-loop calls (numbered from 1).
        overflow_above: Raise it whenever the request (messages, tool specs, system prompt) counts
            more tokens than this: a provider whose real limit is below the configured one.
        summaries: One of :data:`SUMMARY_MODES`.
        stateful: Reported as the model's ``stateful`` property.
    """

    def __init__(
        self,
        script: Script | None = None,
        *,
        context_window_limit: int | None = 200_000,
        overflow_first: int = 0,
        overflow_calls: Collection[int] = (),
        overflow_above: int | None = None,
        summaries: str = "digest",
        stateful: bool = False,
    ) -> None:
        if summaries not in SUMMARY_MODES:
            raise ValueError(f"summaries must be one of {SUMMARY_MODES}")
        self._script = script or replies()
        self._config: dict[str, Any] = {"model_id": "context-model"}
        if context_window_limit is not None:
            self._config["context_window_limit"] = context_window_limit
        self._overflow_first = overflow_first
        self._overflow_calls = frozenset(overflow_calls)
        self._overflow_above = overflow_above
        self._summaries = summaries
        self._stateful = stateful
        self.calls: list[Messages] = []
        """Messages of every agent-loop call, copied when received (including calls that overflowed)."""
        self.overflows = 0
        self.summary_requests: list[dict[str, Any]] = []
        """System prompt and messages of every summarization call."""

    @property
    def stateful(self) -> bool:
        return self._stateful

    def update_config(self, **model_config: Any) -> None:
        self._config.update(model_config)

    def get_config(self) -> dict[str, Any]:
        return self._config

    def structured_output(self, *args: Any, **kwargs: Any) -> Any:
        raise NotImplementedError("ContextModel does not produce structured output")

    async def stream(self, messages: Messages, *args: Any, **kwargs: Any) -> AsyncIterable[StreamEvent]:
        tool_specs = args[0] if args else kwargs.get("tool_specs")
        system_prompt = args[1] if len(args) > 1 else kwargs.get("system_prompt")
        input_tokens = await self.count_tokens(messages, tool_specs, system_prompt)
        summary_unit = _summary_request(messages, tool_specs)
        if summary_unit is not None:
            self.summary_requests.append({"system_prompt": system_prompt, "messages": copy.deepcopy(messages)})
            if self._summaries == "error":
                raise RuntimeError("summarizer unavailable")
            blocks = messages[0]["content"][1:-1] if summary_unit == "blocks" else messages[:-1]
            text = summary_of(blocks, summary_unit) if self._summaries == "digest" else "  "
            reply = Reply(text)
        else:
            self.calls.append(copy.deepcopy(messages))
            number = len(self.calls)
            if (
                number <= self._overflow_first
                or number in self._overflow_calls
                or (self._overflow_above is not None and input_tokens > self._overflow_above)
            ):
                self.overflows += 1
                raise ContextWindowOverflowException(f"input of {input_tokens} tokens is too long")
            reply = self._script(messages)
        async for event in reply_events(reply, input_tokens):
            yield event


def _summary_request(messages: Messages, tool_specs: Any) -> str | None:
    """``"blocks"`` for the pipeline's summarizer, ``"messages"`` for the agentic tool's, else None."""
    if tool_specs is not None or not messages:
        return None
    first, last = messages[0]["content"], messages[-1]["content"]
    if len(messages) == 1 and first and first[0] == {"text": "<content>"} and first[-1] == {"text": "</content>"}:
        return "blocks"
    if last == [{"text": "Please summarize this conversation."}]:
        return "messages"
    return None


@contextmanager
def fixed_tracking_ids(prefix: str = "msg") -> Iterator[None]:
    """Number the tracking ids the Agent gives new messages, so two runs name stash keys alike."""
    original = sdk_content._generate_tracking_id
    counter = iter(range(1_000_000))
    sdk_content._generate_tracking_id = lambda: f"{prefix}-{next(counter)}"  # type: ignore[attr-defined]
    try:
        yield
    finally:
        sdk_content._generate_tracking_id = original  # type: ignore[attr-defined]


# --------------------------------------------------------------------------------------------------
# Driving a pipeline the way the Agent does, through its hook registry


async def before_model_call(agent: Agent, *, projected: bool = True) -> None:
    """Fire ``BeforeModelCallEvent`` with the projection the event loop would compute."""
    tokens = await _estimate_input_tokens(agent) if projected else None
    await agent.hooks.invoke_callbacks_async(
        BeforeModelCallEvent(agent=agent, invocation_state={}, projected_input_tokens=tokens)
    )


def ensure_tracking_ids(agent: Agent) -> None:
    """Give every message a tracking id, as the Agent does when an invocation starts."""
    for message in agent.messages:
        sdk_content._ensure_tracking_id(message)


async def add_message(agent: Agent, message: dict[str, Any]) -> None:
    """Append a message and announce it, as the Agent does for every message it adds."""
    sdk_content._ensure_tracking_id(message)  # type: ignore[arg-type]
    agent.messages.append(message)  # type: ignore[arg-type]
    await agent.hooks.invoke_callbacks_async(MessageAddedEvent(agent=agent, message=message))  # type: ignore[arg-type]


async def overflow(agent: Agent) -> bool:
    """Fire ``AfterModelCallEvent`` for a call that overflowed; return whether a retry was asked."""
    event = AfterModelCallEvent(
        agent=agent, invocation_state={}, exception=ContextWindowOverflowException("input is too long")
    )
    await agent.hooks.invoke_callbacks_async(event)
    return event.retry


async def storage_contents(storage: Any) -> dict[str, bytes]:
    """Every key of a storage and its bytes."""
    return {key: await storage.read(key) for key in sorted(await storage.list(""))}


def stash_snapshot(agent: Agent) -> dict[str, Any] | None:
    """The context manager's stash entries (decoded), or None when it has no stash."""
    stash = agent.context_manager.stash if agent.context_manager else None
    return None if stash is None else asyncio.run(stash.take_snapshot())


def retrieve(agent: Agent, **arguments: Any) -> dict[str, Any]:
    """Call ``retrieve_context`` directly, without recording the call; status and content only."""
    result = agent.tool.retrieve_context(record_direct_tool_call=False, **arguments)
    return {"status": result["status"], "content": result["content"]}


def tool_results(messages: Messages) -> list[dict[str, Any]]:
    """Every tool result block's body in the conversation, in order."""
    return [block["toolResult"] for m in messages for block in m["content"] if "toolResult" in block]


def texts(messages: Messages) -> list[str]:
    """Every text in the conversation: text blocks and text items of tool results."""
    found: list[str] = []
    for message in messages:
        for block in message["content"]:
            if "text" in block:
                found.append(block["text"])
            for item in block.get("toolResult", {}).get("content", []):
                if "text" in item:
                    found.append(item["text"])
    return found


def first_difference(expected: Any, actual: Any, path: str = "$") -> str | None:
    """Where two decoded JSON values first differ, as ``path: expected != actual`` (values cut to 300 chars)."""
    if type(expected) is not type(actual):
        return f"{path}: type {type(expected).__name__} != {type(actual).__name__}"
    if isinstance(expected, dict):
        if list(expected) != list(actual):
            return f"{path}: keys {list(expected)} != {list(actual)}"
        for key in expected:
            found = first_difference(expected[key], actual[key], f"{path}.{key}")
            if found:
                return found
        return None
    if isinstance(expected, list):
        for index, (left, right) in enumerate(zip(expected, actual, strict=False)):
            found = first_difference(left, right, f"{path}[{index}]")
            if found:
                return found
        if len(expected) != len(actual):
            return f"{path}: length {len(expected)} != {len(actual)}"
        return None
    if expected != actual:
        if isinstance(expected, str) and isinstance(actual, str):
            pairs = enumerate(zip(expected, actual, strict=False))
            at = next((i for i, (a, b) in pairs if a != b), min(len(expected), len(actual)))
            start = max(0, at - 60)
            return f"{path} (char {at}): {expected[start : at + 240]!r} != {actual[start : at + 240]!r}"
        return f"{path}: {str(expected)[:300]!r} != {str(actual)[:300]!r}"
    return None


def assert_same_json(expected: str | None, actual: str | None, what: str) -> None:
    """Compare two texts from :func:`encode_for_compare` exactly; on failure say where they differ."""
    if expected == actual:
        return
    if expected is None or actual is None:
        raise AssertionError(f"{what}: {expected!r} != {actual!r}")
    where = first_difference(json.loads(expected), json.loads(actual))
    raise AssertionError(f"{what} differ (reference first, then ours) at {where or 'key order or encoding'}")


def without_usage(value: Any) -> str:
    """:func:`encode_for_compare` of messages (or lists of them) with usage and metrics blanked.

    The model reports usage over the request including tool specs, and the ``retrieve_context``
    description is prose each implementation words itself, so the numbers differ by a few tokens;
    the SDK adds a wall-clock time to first byte to the metrics.
    """

    def scrub(node: Any) -> Any:
        if isinstance(node, list):
            return [scrub(item) for item in node]
        if isinstance(node, dict):
            out = {key: scrub(item) for key, item in node.items()}
            if isinstance(node.get("metadata"), dict) and "usage" in node["metadata"]:
                out["metadata"] = {**out["metadata"], "usage": "<usage>", "metrics": "<metrics>"}
            return out
        return node

    return encode_for_compare(scrub(value))
