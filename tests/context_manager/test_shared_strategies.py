"""Strategy objects hold no per-agent state (issue 38): ``Offload.dedupe`` and ``Hide.tool_specs`` shared by two
managers serving two agents that run concurrently behave as two separate sets; no module-level measure registry."""

from __future__ import annotations

import asyncio
import re
from collections.abc import AsyncIterable, Sequence
from contextvars import ContextVar
from typing import Any

from _cm_harness import Reply, _summary_request, without_usage
from _two_agents import YieldingModel, counted_savings, outcomes, run_together, shared_as_separate, tool_each_turn
from strands import Agent, tool
from strands.tools.tools import PythonAgentTool
from strands.types.content import Messages
from strands.types.streaming import StreamEvent
from strands_offload.context_manager import ContextManager, Hide, Offload
from strands_offload.context_manager.ranking import BM25Ranker


class _YieldingModel(YieldingModel):
    """A YieldingModel that also records each request's tool specs."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.specs: list[list[str]] = []

    async def stream(self, messages: Messages, *args: Any, **kwargs: Any) -> AsyncIterable[StreamEvent]:
        tool_specs = args[0] if args else kwargs.get("tool_specs")
        if not _summary_request(messages, tool_specs):
            self.specs.append([spec["name"] for spec in tool_specs or ()])
        async for event in super().stream(messages, *args, **kwargs):
            yield event


# ---------------------------------------------------------------------------- Offload.dedupe


@tool
async def read_file(path: str) -> str:
    """Read a file."""
    await asyncio.sleep(0.001)
    return f"contents of {path}: " + "the same line again " * 200


def _rereads(agent: int) -> Any:
    return tool_each_turn(agent, "read_file", lambda turn: {"path": f"notes-{agent}.txt"}, "read it")


def _without_ids_or_timings(messages: Messages) -> str:
    return re.sub(r'"tracking_id": "[^"]*"', "", without_usage(messages))


def _dedupe_sessions(shared: bool) -> list[tuple[str, Any, set[str]]]:
    common = Offload.dedupe()
    managers = [ContextManager(strategies=[common if shared else Offload.dedupe()]) for _ in range(2)]
    agents = [
        Agent(model=_YieldingModel(_rereads(k)), tools=[read_file], context_manager=managers[k], callback_handler=None)
        for k in range(2)
    ]
    run_together(agents, lambda k: [f"agent {k}: read your notes, turn {turn}" for turn in range(4)])
    return outcomes(managers, agents, _without_ids_or_timings)


def test_one_dedupe_object_shared_by_two_managers_serves_two_agents_as_two_separate_sets() -> None:
    for messages, savings, refs in shared_as_separate(_dedupe_sessions):
        assert "[Duplicate of the result of read_file call" in messages, "nothing deduplicated: the test shows nothing"
        assert refs and savings.edits >= 3


# ---------------------------------------------------------------------------- Hide.tool_specs

TOPICS = {
    "read_file": "Read the complete contents of a file from the local disk",
    "git_log": "Show the commit history of the git repository",
    "run_query": "Run an SQL query against the database",
    "web_search": "Search the web for pages about a topic",
    "send_email": "Send an email message to a recipient",
    "weather_forecast": "Get the weather forecast for a city",
}


def _catalog() -> list[PythonAgentTool]:
    def make(name: str, description: str) -> PythonAgentTool:
        spec = {"name": name, "description": description, "inputSchema": {"json": {"type": "object"}}}

        def run(tool_use: Any, **_: Any) -> dict[str, Any]:
            return {"toolUseId": tool_use["toolUseId"], "status": "success", "content": [{"text": f"{name} done"}]}

        return PythonAgentTool(name, spec, run)  # type: ignore[arg-type]

    return [make(name, text) for name, text in TOPICS.items()]


class _YieldingRanker(BM25Ranker):
    """BM25, giving the event loop a turn before it answers (as a remote reranker would)."""

    async def score(self, query: str, texts: Sequence[str]) -> list[float]:
        await asyncio.sleep(0.001)
        return await super().score(query, texts)


ASKS = {0: ["show me the git history", "what is the weather forecast"], 1: ["search the web", "send an email"]}


def _asks(agent: int) -> Any:
    def script(messages: Messages) -> Reply:
        return Reply(f"agent {agent} answered")

    return script


def _hide_sessions(shared: bool) -> list[tuple[list[list[str]], Any]]:
    def strategy() -> Any:
        return Hide.tool_specs(config={"keep": 1, "search": _YieldingRanker()})

    common = strategy()
    managers = [ContextManager(strategies=[common if shared else strategy()], stash=False) for _ in range(2)]
    models = [_YieldingModel(_asks(k)) for k in range(2)]
    agents = [
        Agent(model=models[k], tools=_catalog(), context_manager=managers[k], callback_handler=None) for k in range(2)
    ]

    run_together(agents, ASKS.__getitem__)
    return [(models[k].specs, counted_savings(managers[k])) for k in range(2)]


def test_one_tool_specs_object_shared_by_two_managers_serves_two_agents_as_two_separate_sets() -> None:
    shared = shared_as_separate(_hide_sessions)
    assert shared[0][0] == [["git_log"], ["weather_forecast"]]
    assert shared[1][0] == [["web_search"], ["send_email"]]
    for _, savings in shared:
        assert savings.tool_specs_hidden == 2 * (len(TOPICS) - 1)


# ---------------------------------------------------------------------------- no module-level measure


def test_no_module_level_context_variable_holds_the_runs_measure() -> None:
    from strands_offload.context_manager import _measure

    assert not [name for name, value in vars(_measure).items() if isinstance(value, ContextVar)]
    assert not hasattr(_measure, "for_run")
