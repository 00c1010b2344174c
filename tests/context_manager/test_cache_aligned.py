"""``Offload.summarize(..., cache_aligned=True)`` on real Agents over strands' own stubbed models.

The stub clients record every request and bill it through the simulated prompt cache, so the
tests see what the provider would see: the summary request's system prompt, tools and opening
messages next to the agent's own, and what of it was read from the cache.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest
from _cm_harness import fixed_tracking_ids, without_usage
from strands import Agent, tool
from strands.models.model import CacheConfig
from strands_offload.bench.prompt_cache import PromptCache, SimClock
from strands_offload.bench.stub_clients import Reply, anthropic_model, bedrock_model, summary_request
from strands_offload.context_manager import ContextManager, Offload

WINDOW = 8_000
SYSTEM_PROMPT = "You look things up before answering. " * 30
SUMMARY = "SUMMARY: items 0-5 looked up; all fine."


@tool
def lookup(key: str) -> str:
    """Look a key up.

    Args:
        key: What to look up.
    """
    return f"{key}: " + "a value of some length " * 120


def _texts(message: dict[str, Any]) -> list[str]:
    content = message["content"]
    if isinstance(content, str):
        return [content]
    return [block.get("text", "") for block in content if isinstance(block, dict)]


def is_aligned(request: dict[str, Any]) -> bool:
    return summary_request(request) == "aligned"


def is_plain(request: dict[str, Any]) -> bool:
    return summary_request(request) == "plain"


class Script:
    """Each user turn asks for one lookup, then answers; summary requests get :data:`SUMMARY`."""

    def __init__(self, clock: SimClock, on_aligned: Callable[[], Reply] | None = None) -> None:
        self.clock = clock
        self.turn = 0
        self.on_aligned = on_aligned
        self.aligned = 0
        self.plain = 0

    def __call__(self, request: dict[str, Any]) -> Reply:
        self.clock.advance(5)
        if is_aligned(request):
            self.aligned += 1
            if self.on_aligned is not None:
                return self.on_aligned()
            return Reply([{"text": SUMMARY}], label="summary")
        if is_plain(request):
            self.plain += 1
            return Reply([{"text": SUMMARY}], label="summary")
        last = request["messages"][-1]["content"]
        answered = any("toolResult" in block or block.get("type") == "tool_result" for block in last)
        if answered:
            return Reply([{"text": f"done {self.turn}"}])
        self.turn += 1
        use = {"toolUseId": f"tu{self.turn}", "name": "lookup", "input": {"key": f"k{self.turn}"}}
        return Reply([{"toolUse": use}])


def _session(
    build: Callable[..., Any],
    *,
    aligned: bool = True,
    cached: bool = True,
    ahead: bool = False,
    on_aligned: Callable[[], Reply] | None = None,
    turns: int = 8,
) -> tuple[Agent, Any, Script, PromptCache]:
    clock = SimClock()
    cache = PromptCache(clock)
    script = Script(clock, on_aligned)
    config: dict[str, Any] = {"context_window_limit": WINDOW}
    if cached:
        config["cache_config"] = CacheConfig(strategy="auto")
    model = build(cache, script, **config)
    summarize = Offload.summarize("*", cache_aligned=aligned, ahead=ahead).when(utilization=0.6, preserve_recent=2)
    agent = Agent(
        model=model,
        system_prompt=SYSTEM_PROMPT,
        tools=[lookup],
        context_manager=ContextManager(strategies=[summarize], clock=clock),
        callback_handler=None,
    )
    with fixed_tracking_ids():
        for number in range(turns):
            agent(f"question {number}: " + "please look this up " * 20)
            clock.advance(20)
    return agent, model, script, cache


def _canonical(value: Any) -> str:
    return json.dumps(value, sort_keys=True, default=repr)


@pytest.mark.parametrize("build", [bedrock_model, anthropic_model], ids=["bedrock", "anthropic"])
def test_the_summary_request_starts_as_the_agents_own_and_reads_it_from_the_cache(build: Any) -> None:
    agent, model, script, cache = _session(build)
    requests = model.client.requests
    aligned = [index for index, request in enumerate(requests) if is_aligned(request)]
    assert aligned and script.plain == 0, "a summary was made, through the aligned request only"
    index = aligned[0]
    request = requests[index]
    earlier = [r for r in requests[:index] if not is_aligned(r) and not is_plain(r)]
    # Same system prompt and tools as the agent's last request, byte for byte.
    system_key = "system"
    tools_key = "toolConfig" if "toolConfig" in request else "tools"
    assert _canonical(request[system_key]) == _canonical(earlier[-1][system_key])
    assert _canonical(request[tools_key]) == _canonical(earlier[-1][tools_key])
    # Its messages up to the closing one are an earlier request's messages, and the closing message
    # starts as that request's last message, up to and including its cache point.
    closing = request["messages"][-1]
    cut = len(request["messages"]) - 1
    source = next(r for r in reversed(earlier) if len(r["messages"]) == cut + 1)
    assert _canonical(request["messages"][:cut]) == _canonical(source["messages"][:cut])
    assert _canonical(request["messages"][:cut]) == _canonical(earlier[-1]["messages"][:cut])
    original = source["messages"][cut]["content"]
    assert _canonical(closing["content"][: len(original)]) == _canonical(original)
    # Billed as a read of everything up to that point: nothing written, only the question uncached.
    call = cache.calls[index]
    assert call.cache_write == 0
    assert call.cache_read >= cache.calls[requests.index(source)].cache_read
    assert call.input_tokens < call.cache_read / 10
    # The summary took the span's place, as a plain summary would have.
    assert any(SUMMARY in text for message in agent.messages for text in _texts(message))


def test_roles_alternate_and_tool_pairs_stay_adjacent_in_the_aligned_request() -> None:
    _, model, _, _ = _session(bedrock_model)
    request = next(r for r in model.client.requests if is_aligned(r))
    messages = request["messages"]
    assert messages[-1]["role"] == "user"
    assert all(a["role"] != b["role"] for a, b in zip(messages, messages[1:], strict=False))
    for call, answer in zip(messages, messages[1:], strict=False):
        uses = {block["toolUse"]["toolUseId"] for block in call["content"] if "toolUse" in block}
        results = {block["toolResult"]["toolUseId"] for block in answer["content"] if "toolResult" in block}
        if call["role"] == "assistant":
            assert uses == results


def test_the_summary_is_placed_exactly_as_with_the_plain_request() -> None:
    aligned_agent, _, aligned_script, _ = _session(bedrock_model)
    plain_agent, _, plain_script, _ = _session(bedrock_model, aligned=False)
    assert aligned_script.aligned > 0 and aligned_script.plain == 0
    assert plain_script.plain == aligned_script.aligned
    assert without_usage(aligned_agent.messages) == without_usage(plain_agent.messages)


def test_a_tool_call_answer_is_discarded_for_the_plain_request() -> None:
    call = {"toolUseId": "sneaky", "name": "lookup", "input": {"key": "not now"}}
    agent, model, script, _ = _session(bedrock_model, on_aligned=lambda: Reply([{"toolUse": call}]))
    assert script.aligned > 0 and script.plain == script.aligned
    requests = model.client.requests
    for index, request in enumerate(requests):
        if is_aligned(request):
            assert is_plain(requests[index + 1]), "the plain request follows the discarded answer"
    # The tool was never run and its call never reached the conversation.
    assert "sneaky" not in _canonical(agent.messages)
    reference, _, _, _ = _session(bedrock_model, aligned=False)
    assert without_usage(agent.messages) == without_usage(reference.messages)


def test_without_prompt_caching_the_plain_request_is_sent() -> None:
    aligned_agent, aligned_model, script, _ = _session(bedrock_model, cached=False)
    plain_agent, plain_model, _, _ = _session(bedrock_model, cached=False, aligned=False)
    assert script.aligned == 0 and script.plain > 0
    assert _canonical(aligned_model.client.requests) == _canonical(plain_model.client.requests)
    assert without_usage(aligned_agent.messages) == without_usage(plain_agent.messages)


def test_ahead_sends_the_aligned_request_while_the_tools_run() -> None:
    agent, model, script, _ = _session(bedrock_model, ahead=True)
    requests = model.client.requests
    assert script.aligned > 0 and script.plain == 0
    index = next(i for i, r in enumerate(requests) if is_aligned(r))
    # Sent after the model asked for a tool and before the request that carries its result.
    asked = requests[index - 1]
    assert not is_plain(asked)
    following = requests[index + 1]
    assert any("toolResult" in block for block in following["messages"][-1]["content"])
    reference, _, _, _ = _session(bedrock_model, aligned=False)
    assert without_usage(agent.messages) == without_usage(reference.messages)
