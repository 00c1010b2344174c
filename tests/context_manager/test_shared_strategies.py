"""Strategy objects hold no per-agent state (issue 38): ``Offload.dedupe`` and ``Hide.tool_specs`` shared by two
managers serving two agents that run concurrently behave as two separate sets; no module-level measure registry."""

from __future__ import annotations

import asyncio
import dataclasses
import re
from collections.abc import AsyncIterable, Sequence
from contextvars import ContextVar
from typing import Any

from _cm_harness import ContextModel, Reply, ToolCall, _summary_request, encode_for_compare, without_usage
from strands import Agent, tool
from strands.tools.tools import PythonAgentTool
from strands.types.content import Messages
from strands.types.streaming import StreamEvent
from strands_offload.context_manager import ContextManager, Hide, Offload
from strands_offload.context_manager.ranking import BM25Ranker


class _YieldingModel(ContextModel):
    """A ContextModel that gives the event loop a turn at every event and records each request's tool specs."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.specs: list[list[str]] = []

    async def stream(self, messages: Messages, *args: Any, **kwargs: Any) -> AsyncIterable[StreamEvent]:
        tool_specs = args[0] if args else kwargs.get("tool_specs")
        if not _summary_request(messages, tool_specs):
            self.specs.append([spec["name"] for spec in tool_specs or ()])
        async for event in super().stream(messages, *args, **kwargs):
            await asyncio.sleep(0)
            yield event


def _savings(manager: Any) -> Any:
    return dataclasses.replace(manager.savings(), native_seconds=0.0)  # a time, not a count


def _both(agents: list[Agent], prompts: Sequence[str]) -> None:
    async def session(k: int) -> None:
        for prompt in prompts:
            await agents[k].invoke_async(f"agent {k}: {prompt}")

    async def run() -> None:
        await asyncio.gather(session(0), session(1))

    asyncio.run(run())


# ---------------------------------------------------------------------------- Offload.dedupe


@tool
async def read_file(path: str) -> str:
    """Read a file."""
    await asyncio.sleep(0.001)
    return f"contents of {path}: " + "the same line again " * 200


def _rereads(agent: int) -> Any:
    def script(messages: Messages) -> Reply:
        if any("toolResult" in block for block in messages[-1]["content"]):
            return Reply("read it")
        turn = sum(1 for m in messages if m["role"] == "user" and any("text" in b for b in m["content"]))
        return Reply("", [ToolCall("read_file", {"path": f"notes-{agent}.txt"}, f"a{agent}-t{turn}")])

    return script


def _dedupe_sessions(shared: bool) -> list[tuple[str, Any, set[str]]]:
    common = Offload.dedupe()
    managers = [ContextManager(strategies=[common if shared else Offload.dedupe()]) for _ in range(2)]
    agents = [
        Agent(model=_YieldingModel(_rereads(k)), tools=[read_file], context_manager=managers[k], callback_handler=None)
        for k in range(2)
    ]
    _both(agents, [f"read your notes, turn {turn}" for turn in range(4)])
    outcome = []
    for k in range(2):
        stash = managers[k].stash
        assert stash is not None
        text = encode_for_compare(agents[k].messages)
        refs = set(re.findall(r"\[ref: ([^\]]+)\]", text))
        resolved = {ref for ref in refs if asyncio.run(stash.retrieve_raw(ref)) is not None}
        assert resolved == refs, f"agent {k}: references its manager's stash does not hold: {refs - resolved}"
        messages = re.sub(r'"tracking_id": "[^"]*"', "", without_usage(agents[k].messages))  # no timings
        outcome.append((messages, _savings(managers[k]), refs))
    return outcome


def test_one_dedupe_object_shared_by_two_managers_serves_two_agents_as_two_separate_sets() -> None:
    separate = _dedupe_sessions(shared=False)
    shared = _dedupe_sessions(shared=True)
    for k in range(2):
        messages, savings, refs = shared[k]
        assert "[Duplicate of the result of read_file call" in messages, "nothing deduplicated: the test shows nothing"
        assert refs and savings.edits >= 3
        assert messages == separate[k][0]
        assert savings == separate[k][1]  # each manager counts its own agent's rewrites, none of the other's
        assert refs == separate[k][2]


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

    async def session(k: int) -> None:
        for prompt in ASKS[k]:
            await agents[k].invoke_async(prompt)

    async def run() -> None:
        await asyncio.gather(session(0), session(1))

    asyncio.run(run())
    return [(models[k].specs, _savings(managers[k])) for k in range(2)]


def test_one_tool_specs_object_shared_by_two_managers_serves_two_agents_as_two_separate_sets() -> None:
    separate = _hide_sessions(shared=False)
    shared = _hide_sessions(shared=True)
    assert separate[0][0] == [["git_log"], ["weather_forecast"]]
    assert separate[1][0] == [["web_search"], ["send_email"]]
    for k in range(2):
        specs, savings = shared[k]
        assert specs == separate[k][0]
        assert savings.tool_specs_hidden == 2 * (len(TOPICS) - 1)
        assert savings == separate[k][1]  # each manager counts its own agent's hidden specs, none of the other's


# ---------------------------------------------------------------------------- no module-level measure


def test_no_module_level_context_variable_holds_the_runs_measure() -> None:
    from strands_offload.context_manager import _measure

    assert not [name for name, value in vars(_measure).items() if isinstance(value, ContextVar)]
    assert not hasattr(_measure, "for_run")
