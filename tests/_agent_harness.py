"""Drive a real strands Agent through one tool call and scripted retrievals.

The same harness runs the reference plugin and ours, so tests compare the
conversations they produce. Guidance prose in the notice is ours by design;
``normalize_notice`` blanks it so everything machine-readable is compared.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from strands import Agent, tool
from strands_offload.demo.scripted_model import Reply, ScriptedModel, ToolCall

_REFERENCE_LINE = re.compile(r"^  (\S+) \(", re.MULTILINE)
RETRIEVE = "retrieve_offloaded_content"


def references_in(notice: str) -> list[str]:
    """The references listed under ``[Stored references:]``."""
    if "[Stored references:]" not in notice:
        return []
    return _REFERENCE_LINE.findall(notice.split("[Stored references:]", 1)[1])


def normalize_notice(text: str) -> str:
    """Blank the guidance paragraph (prose) of an offload notice, keep the rest."""
    if not text.startswith("[Offloaded: "):
        return text
    header, rest = text.split("\n", 1)
    _guidance, tail = rest.split("\n\n", 1)
    return f"{header}\n<guidance>\n\n{tail}"


def run(
    plugin: Any,
    content: list[dict[str, Any]] | Callable[[], list[dict[str, Any]]],
    retrievals: list[dict[str, Any]] | None = None,
    *,
    status: str = "success",
    tool_use_id: str = "tooluse_big_1",
    agent_kwargs: dict[str, Any] | None = None,
) -> tuple[Agent, list[dict[str, Any]]]:
    """Call a tool that returns ``content``, then make each retrieval call in turn.

    A retrieval's ``reference`` may be an int: the index into the notice's references.
    Returns the agent and the list of tool results, in order.
    """
    retrievals = list(retrievals or [])
    produced = content if not callable(content) else None

    @tool(context=False)
    def produce(size: int) -> dict[str, Any]:
        """Return the prepared content."""
        blocks = produced if produced is not None else content()  # type: ignore[operator]
        return {"status": status, "content": blocks}

    state: dict[str, Any] = {"refs": [], "step": 0}

    def script(messages: list[dict[str, Any]]) -> Reply:
        last = messages[-1]
        results = [b["toolResult"] for b in last["content"] if "toolResult" in b]
        if not results:
            return Reply("", [ToolCall("produce", {"size": 1}, tool_use_id)])
        if results[0]["toolUseId"] == tool_use_id:
            first = results[0]["content"][0]
            state["refs"] = references_in(first.get("text", "")) if "text" in first else []
        step = state["step"]
        if step >= len(retrievals):
            return Reply("done")
        state["step"] += 1
        arguments = dict(retrievals[step])
        if isinstance(arguments.get("reference"), int):
            arguments["reference"] = state["refs"][arguments["reference"]]
        return Reply("", [ToolCall(RETRIEVE, arguments, f"tooluse_get_{step}")])

    agent = Agent(
        model=ScriptedModel(script), tools=[produce], plugins=[plugin], callback_handler=None, **(agent_kwargs or {})
    )
    agent("go")
    results = [b["toolResult"] for m in agent.messages for b in m["content"] if "toolResult" in b]
    return agent, results


def comparable(results: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Tool results with the notice prose blanked, for reference-vs-ours comparison."""
    out = []
    for result in results:
        content = []
        for item in result["content"]:
            if "text" in item:
                content.append({"text": normalize_notice(item["text"])})
            else:
                content.append(item)
        out.append({"toolUseId": result["toolUseId"], "status": result["status"], "content": content})
    return out
