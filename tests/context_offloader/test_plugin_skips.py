"""Results the plugin must leave alone, and the tokenizer="auto" fallback, against the reference."""

from __future__ import annotations

from typing import Any

import pytest
from _agent_harness import run
from strands import Agent, tool
from strands.hooks import BeforeToolCallEvent
from strands.vended_plugins.context_offloader import ContextOffloader as RefOffloader
from strands_offload.context_offloader import ContextOffloader
from strands_offload.demo.scripted_model import Reply, ScriptedModel, ToolCall

BIG = "payload line\n" * 5_000


@pytest.mark.parametrize("plugin_class", [ContextOffloader, RefOffloader])
def test_cancelled_call_keeps_its_message(plugin_class: type) -> None:
    @tool
    def fetch() -> str:
        """Never runs: the call is cancelled."""
        return "unreachable"

    def cancel(event: BeforeToolCallEvent) -> None:
        event.cancel_tool = BIG

    def script(messages: list[dict[str, Any]]) -> Reply:
        return Reply("", [ToolCall("fetch", {}, "t1")]) if len(messages) == 1 else Reply("done")

    agent = Agent(model=ScriptedModel(script), tools=[fetch], plugins=[plugin_class()], callback_handler=None)
    agent.add_hook(cancel, BeforeToolCallEvent)
    agent("go")
    result = agent.messages[2]["content"][0]["toolResult"]
    assert result["status"] == "error"
    assert result["content"] == [{"text": BIG}]


@pytest.mark.parametrize("plugin_class", [ContextOffloader, RefOffloader])
def test_delegate_agent_result_is_never_offloaded(plugin_class: type) -> None:
    worker = Agent(model=ScriptedModel(lambda _m: Reply(BIG)), callback_handler=None, name="worker")

    def script(messages: list[dict[str, Any]]) -> Reply:
        return Reply("", [ToolCall("worker", {"input": "do it"}, "t1")]) if len(messages) == 1 else Reply("done")

    boss = Agent(
        model=ScriptedModel(script),
        tools=[worker.as_tool(delegate=True)],
        plugins=[plugin_class()],
        callback_handler=None,
    )
    boss("go")
    results = [b["toolResult"] for m in boss.messages for b in m["content"] if "toolResult" in b]
    assert results and all("[Offloaded:" not in item.get("text", "") for r in results for item in r["content"])


def test_retrieval_tool_results_are_never_offloaded() -> None:
    # A page bigger than the threshold comes back whole (within the tool's own budget).
    plugin = ContextOffloader(max_result_tokens=300, preview_tokens=10)
    _, results = run(plugin, [{"text": BIG}], [{"reference": 0, "line_range": {"start": 1, "end": 4000}}])
    page = results[1]["content"][0]["text"]
    assert page.startswith("[Lines 1-4000 of 5001]")
    assert -(-len(page) // 4) > 300  # over the threshold, so only the exemption kept it


def test_auto_tokenizer_without_an_openai_model_behaves_as_default() -> None:
    _, auto = run(ContextOffloader(tokenizer="auto"), [{"text": BIG}])
    _, default = run(ContextOffloader(), [{"text": BIG}])
    assert auto == default
