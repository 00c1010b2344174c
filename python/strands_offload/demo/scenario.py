"""The offload-and-retrieve scenario shared by the demo and the end-to-end tests.

A tool returns a large service log; the offloader stores it and shows the model
a preview plus references; the scripted model greps the stored log for errors
through ``retrieve_offloaded_content`` and answers from what it found. The same
script runs against any offloader plugin, so the reference plugin and ours can
be compared conversation for conversation.
"""

from __future__ import annotations

import random
import re
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from strands import Agent, tool
from strands.plugins import Plugin
from strands.types.content import Messages

from .scripted_model import Reply, ScriptedModel, ToolCall

RETRIEVAL_TOOL = "retrieve_offloaded_content"
_REFERENCE_LINE = re.compile(r"^  (\S+) \(", re.MULTILINE)
_LEVELS = ("DEBUG", "INFO", "INFO", "INFO", "WARN")
_SERVICES = ("api", "auth", "billing", "search", "worker")


def make_service_log(size_bytes: int, *, seed: int = 7, error_every: int = 9_973) -> str:
    """Build a deterministic, realistic-looking service log of about ``size_bytes``.

    Every ``error_every``-th line is an ERROR line, so a grep finds a handful.
    """
    rng = random.Random(seed)
    lines: list[str] = []
    total = 0
    number = 0
    while total < size_bytes:
        number += 1
        service = _SERVICES[rng.randrange(len(_SERVICES))]
        stamp = (
            f"2026-11-30T{(number // 3600) % 24:02d}:{(number // 60) % 60:02d}:{number % 60:02d}.{number % 1000:03d}Z"
        )
        if number % error_every == 0:
            line = f"{stamp} ERROR {service} request_id=r{number:07d} upstream timeout after 30000ms"
        else:
            level = _LEVELS[rng.randrange(len(_LEVELS))]
            latency = rng.randrange(1, 900)
            line = f"{stamp} {level} {service} request_id=r{number:07d} handled in {latency}ms status=200"
        lines.append(line)
        total += len(line) + 1
    return "\n".join(lines)


def _last_tool_results(messages: Messages) -> list[dict[str, Any]]:
    last = messages[-1] if messages else None
    if not last or last["role"] != "user":
        return []
    return [dict(block["toolResult"]) for block in last["content"] if "toolResult" in block]


def _result_text(result: dict[str, Any]) -> str:
    return "\n".join(item["text"] for item in result.get("content", []) if "text" in item)


def _fetch_then_grep(
    fetch: ToolCall, opening: str, grep: dict[str, Any], grep_id: str, unsearched: str, searching: str
) -> Callable[[Messages], Reply]:
    """Script: make the ``fetch`` call, grep the first reference of its offload notice, then answer."""

    def script(messages: Messages) -> Reply:
        results = _last_tool_results(messages)
        if not results:
            return Reply(opening, [fetch])
        text = _result_text(results[0])
        if results[0]["toolUseId"] == fetch.tool_use_id:
            references = _REFERENCE_LINE.findall(text.split("[Stored references:]", 1)[-1])
            if not references:
                return Reply(unsearched)
            return Reply(searching, [ToolCall(RETRIEVAL_TOOL, {"reference": references[0], **grep}, grep_id)])
        header = text.split("\n", 1)[0]
        return Reply(f"Search finished: {header}")

    return script


def log_triage_script(pattern: str = "ERROR", context_lines: int = 1) -> Callable[[Messages], Reply]:
    """Script: read the log, grep the offloaded copy for ``pattern``, then answer."""
    return _fetch_then_grep(
        ToolCall("read_service_log", {"service": "all"}, "tooluse_log_1"),
        "Reading the service log.",
        {"pattern": pattern, "context_lines": context_lines},
        "tooluse_grep_1",
        "The log was small enough to read directly.",
        "The log was offloaded; searching it for errors.",
    )


def api_dump_script(pattern: str = '"status": "failed"') -> Callable[[Messages], Reply]:
    """Script: list the customers (a JSON dump), grep the offloaded copy for ``pattern``, then answer."""
    return _fetch_then_grep(
        ToolCall("list_customers", {}, "tooluse_api_1"),
        "Listing the customers.",
        {"pattern": pattern, "context_lines": 0},
        "tooluse_grep_2",
        "The dump was small enough to read directly.",
        "The dump was offloaded; searching it for failed orders.",
    )


@dataclass
class ScenarioRun:
    """What one run of the scenario produced."""

    messages: Messages
    answer: str
    seconds: float
    log_chars: int


def run_log_triage(plugin: Plugin, log_text: str, *, pattern: str = "ERROR") -> ScenarioRun:
    """Run the scenario on a fresh agent with ``plugin`` and return the conversation."""

    @tool
    def read_service_log(service: str) -> str:
        """Return the raw log of a service ("all" for every service)."""
        return log_text

    model = ScriptedModel(log_triage_script(pattern))
    agent = Agent(model=model, tools=[read_service_log], plugins=[plugin], callback_handler=None)
    started = time.perf_counter()
    result = agent("Why are requests failing?")
    seconds = time.perf_counter() - started
    return ScenarioRun(agent.messages, str(result).strip(), seconds, len(log_text))


def run_api_dump(plugin: Plugin, document: Any) -> ScenarioRun:
    """A fresh agent whose tool returns ``document`` as one JSON block; the model greps the stored copy."""

    @tool
    def list_customers() -> dict[str, Any]:
        """Return every customer record of the API."""
        return {"status": "success", "content": [{"json": document}]}

    agent = Agent(
        model=ScriptedModel(api_dump_script()), tools=[list_customers], plugins=[plugin], callback_handler=None
    )
    started = time.perf_counter()
    result = agent("Which orders failed?")
    seconds = time.perf_counter() - started
    return ScenarioRun(agent.messages, str(result).strip(), seconds, 0)
