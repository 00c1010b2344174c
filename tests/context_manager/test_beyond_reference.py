"""Options the reference does not have: stash search, cache-aware acting, exact tokenizers.

With each option off, outputs equal the reference's (the differential tests pin that); these
tests pin what each option does when it is on.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest
import strands.storage.storage as sdk_storage
from _cm_harness import (
    REFERENCE,
    ContextModel,
    Reply,
    ToolCall,
    add_message,
    before_model_call,
    fixed_tracking_ids,
    replies,
    retrieve,
    without_usage,
)
from strands import Agent, tool
from strands.storage import LocalFileStorage as SdkLocalFileStorage
from strands.storage.search import Bm25SearchStrategy as SdkBm25SearchStrategy
from strands_offload import count_tokens
from strands_offload.context_manager import ContextManager, Offload
from strands_offload.context_manager._stash_search import search_stash
from strands_offload.context_manager.stash import Stash
from strands_offload.storage import InMemoryStorage
from strands_offload.storage.search import Bm25SearchStrategy


def _agent(manager: ContextManager, messages: list[dict[str, Any]] | None = None, **model: Any) -> Agent:
    return Agent(model=ContextModel(**model), messages=messages or [], context_manager=manager, callback_handler=None)


def _call(tool_use_id: str, name: str = "read_log") -> dict[str, Any]:
    return {"role": "assistant", "content": [{"toolUse": {"toolUseId": tool_use_id, "name": name, "input": {}}}]}


def _result(tool_use_id: str, item: dict[str, Any]) -> dict[str, Any]:
    return {
        "role": "user",
        "content": [{"toolResult": {"toolUseId": tool_use_id, "status": "success", "content": [item]}}],
    }


async def _session(agent: Agent) -> None:
    await add_message(agent, {"role": "user", "content": [{"text": "triage the service"}]})
    await add_message(agent, _call("tu_log"))
    log = "\n".join(f"12:00:{i % 60:02d} INFO request {i} ok" for i in range(3000))
    log += "\n12:01:00 ERROR upstream timeout after 30s in checkout\n" + "tail line\n" * 50
    await add_message(agent, _result("tu_log", {"text": log}))
    await add_message(agent, _call("tu_json", "fetch_orders"))
    await add_message(agent, _result("tu_json", {"json": {"orders": [{"id": i, "city": "café"} for i in range(400)]}}))


# ---------------------------------------------------------------------------------------- stash search


def test_stash_search_finds_text_the_stored_json_escapes() -> None:
    agent = _agent(ContextManager(stash_search=True))
    asyncio.run(_session(agent))
    # "ERROR" sits after "\n" and "café" is stored as caf\u00e9: both are found in the decoded text.
    found = retrieve(agent, query="timeout error")
    assert found["status"] == "success"
    text = found["content"][0]["text"]
    assert text.splitlines()[1] == "[ref: tu_log_0] 12:01:00 ERROR upstream timeout after 30s in checkout"
    cafe = retrieve(agent, query="café")["content"][0]["text"]
    assert cafe.splitlines()[1].startswith("[ref: tu_json_0] ")
    assert "café" in cafe.splitlines()[1]
    assert len(cafe.splitlines()[1]) <= len("[ref: tu_json_0] ") + 201


def test_stash_search_orders_best_first_and_caps_at_ten() -> None:
    agent = _agent(ContextManager(stash_search=True))

    async def fill() -> None:
        await add_message(agent, {"role": "user", "content": [{"text": "start"}]})
        for i in range(14):
            await add_message(agent, _call(f"tu_{i:02d}"))
            words = "alpha beta" if i in (3, 11) else "alpha"
            await add_message(agent, _result(f"tu_{i:02d}", {"text": f"{words} number {i}"}))

    asyncio.run(fill())
    lines = retrieve(agent, query="alpha beta")["content"][0]["text"].splitlines()
    refs = [line.split("]")[0].removeprefix("[ref: ") for line in lines[1:-1]]
    assert refs[:2] == ["tu_03_0", "tu_11_0"]  # both words, stash order among equals
    assert len(refs) == 10
    assert lines[0].startswith("[14 stashed entries match")


def test_stash_search_uses_bm25_when_the_storage_is_configured_for_it() -> None:
    storage = InMemoryStorage(search_strategy=Bm25SearchStrategy(in_memory=True))
    agent = _agent(ContextManager(stash={"storage": storage}, stash_search=True))
    asyncio.run(_session(agent))
    text = retrieve(agent, query="upstream checkout")["content"][0]["text"]
    assert text.splitlines()[1].startswith("[ref: tu_log_0] 12:01:00 ERROR upstream")


def _bm25_backends(tmp_path: Path) -> dict[str, Any]:
    sdk_backend = SdkLocalFileStorage(str(tmp_path / "sdk"), search_strategy=SdkBm25SearchStrategy())
    return {
        "ours": InMemoryStorage(search_strategy=Bm25SearchStrategy(in_memory=True)),
        "sdk": sdk_backend,
        "sdk-view": sdk_storage._NamespacedStorage(sdk_backend, "views"),
        "keyword": InMemoryStorage(),
    }


@pytest.mark.parametrize("backend", ["ours", "sdk", "sdk-view", "keyword"])
def test_stash_search_finds_the_bm25_strategy_of_our_or_the_sdks_storage(backend: str, tmp_path: Path) -> None:
    # Both entries hold both words: keyword scoring ties them (stash order), BM25 puts the short one first.
    stash = Stash(_bm25_backends(tmp_path)[backend], "session", "agent")

    async def search() -> str:
        await stash.store("a", 0, json.dumps({"text": "alpha beta " + "filler " * 50}).encode())
        await stash.store("b", 0, json.dumps({"text": "alpha beta"}).encode())
        return await search_stash(stash, "alpha beta")

    refs = [line.split("]")[0] for line in asyncio.run(search()).splitlines()[1:3]]
    assert refs == (["[ref: a_0", "[ref: b_0"] if backend == "keyword" else ["[ref: b_0", "[ref: a_0"])


def test_stash_keyword_search_scores_lone_surrogates_and_unicode_words_as_python_re() -> None:
    stash = Stash(InMemoryStorage(), "session", "agent")
    originals = [{"text": "x\ud800y Straße"}, {"text": "ǅemal ΣΑΣ x²"}, {"json": {"naïve": ["東京"]}}]

    async def search(query: str) -> list[str]:
        for i, original in enumerate(originals):
            await stash.store(f"t{i}", 0, json.dumps(original).encode())
        return (await search_stash(stash, query)).splitlines()

    assert asyncio.run(search("y straße"))[1] == "[ref: t0_0] x\ud800y Straße"
    assert [line[:11] for line in asyncio.run(search("σας ǆemal x² naïve 東京"))[1:3]] == ["[ref: t1_0]", "[ref: t2_0]"]


def test_stash_search_is_off_by_default_and_needs_a_query() -> None:
    plain = _agent(ContextManager())
    spec = plain.tool_registry.registry["retrieve_context"].tool_spec
    assert "query" not in spec["inputSchema"]["properties"]
    searching = _agent(ContextManager(stash_search=True))
    assert retrieve(searching, query="  ") == {
        "status": "error",
        "content": [{"text": "Error: give a reference, or a query to search the stash."}],
    }
    assert (
        retrieve(searching, query="nothing here")["content"][0]["text"] == "No stashed content matches 'nothing here'."
    )


# ---------------------------------------------------------------------------------------- clear_at_least


def _drop_conversation() -> list[dict[str, Any]]:
    return [
        {"role": "user", "content": [{"text": "go"}]},
        _call("a"),
        _result("a", {"text": "x" * 400}),  # 100 tokens
        {"role": "assistant", "content": [{"text": "next"}]},
        {"role": "user", "content": [{"text": "more"}]},
    ]


@pytest.mark.parametrize(("at_least", "acts"), [(None, True), (90, True), (99, False), (5000, False)])
def test_clear_at_least_acts_only_when_the_edit_frees_enough(at_least: int | None, acts: bool) -> None:
    # Dropping the 100-token result leaves "[Dropped] [ref: a_0]" (20 chars, 5 tokens): 95 freed.
    strategy = Offload.drop("tool_results").when(threshold=50, clear_at_least=at_least)
    messages = _drop_conversation()
    agent = _agent(ContextManager(strategies=[strategy]), json.loads(json.dumps(messages)))
    asyncio.run(before_model_call(agent))
    dropped = agent.messages[2]["content"][0]["toolResult"]["content"][0]["text"]
    assert (dropped == "[Dropped] [ref: a_0]") is acts
    if not acts:
        assert agent.messages == messages


def test_clear_at_least_never_blocks_overflow_recovery() -> None:
    from _cm_harness import overflow

    strategy = Offload.drop("tool_results").when(threshold=50, clear_at_least=10**9)
    agent = _agent(ContextManager(strategies=[strategy]), json.loads(json.dumps(_drop_conversation())))
    assert asyncio.run(overflow(agent)) is True
    assert agent.messages[2]["content"][0]["toolResult"]["content"][0]["text"] == "[Dropped] [ref: a_0]"


@tool
def read_part(part: int) -> str:
    """Read one part of the service log."""
    return "\n".join(f"12:00:{i % 60:02d} INFO part {part} request {i} ok" for i in range(300))


def _reading_session(manager: Any) -> tuple[Agent, ContextModel]:
    """Six tool calls of about 2,700 tokens each in an 8,000-token window, through a real Agent."""
    calls = [Reply("", [ToolCall("read_part", {"part": part}, f"tu_part_{part}")]) for part in range(6)]
    model = ContextModel(replies(*calls), context_window_limit=8_000)
    agent = Agent(model=model, tools=[read_part], context_manager=manager, callback_handler=None)
    with fixed_tracking_ids():
        agent("read every part of the log")
    return agent, model


_SUMMARIZE_WHEN = {
    "messages": {"utilization": 0.3},
    "blocks": {"threshold": 100, "preserve_recent": 1},
}


@pytest.mark.parametrize("level", list(_SUMMARIZE_WHEN))
def test_clear_at_least_out_of_reach_makes_no_summarizer_call(level: str) -> None:
    # Before, every pass asked the model for a summary and then threw it away as too small a gain
    # (5 summaries over 7 model calls for messages, 12 for blocks); the span's tokens were known first.
    strategy = Offload.summarize("*" if level == "messages" else "tool_results").when(
        **_SUMMARIZE_WHEN[level], clear_at_least=10**9
    )
    agent, model = _reading_session(ContextManager(strategies=[strategy]))
    assert len(model.calls) == 7 and model.summary_requests == []
    # The conversation is the one a pipeline without the strategy gives, the reference's included.
    reference_agent, reference_model = _reading_session(REFERENCE.ContextManager(strategies=[]))
    assert without_usage(model.calls) == without_usage(reference_model.calls)
    assert without_usage(agent.messages) == without_usage(reference_agent.messages)


@pytest.mark.parametrize("level", list(_SUMMARIZE_WHEN))
def test_clear_at_least_within_reach_still_summarizes(level: str) -> None:
    strategy = Offload.summarize("*" if level == "messages" else "tool_results").when(
        **_SUMMARIZE_WHEN[level], clear_at_least=500
    )
    agent, model = _reading_session(ContextManager(strategies=[strategy]))
    assert model.summary_requests
    assert any(
        "text" in block and block["text"].startswith("[Summarized: ")
        for message in agent.messages
        for item in message["content"]
        for block in [item, *item.get("toolResult", {}).get("content", [])]
    )


# ---------------------------------------------------------------------------------------- tokenizer


def test_exact_tokenizer_decides_thresholds_and_cuts_on_bpe_tokens() -> None:
    # A run of "é" costs more than one BPE token per 4 characters: chars/4 under-counts it.
    text = "é" * 6000
    exact = count_tokens(text, "cl100k_base")
    assert exact > 1501 >= -(-len(text) // 4)
    messages = [{"role": "user", "content": [{"text": "go"}]}, _call("a"), _result("a", {"text": text})]

    def run(tokenizer: str | None) -> str:
        manager = ContextManager(
            strategies=[Offload.truncate("tool_results", {"preview_tokens": 100}).when(threshold=1501)],
            tokenizer=tokenizer,
        )
        agent = _agent(manager, json.loads(json.dumps(messages)))
        asyncio.run(before_model_call(agent))
        return str(agent.messages[2]["content"][0]["toolResult"]["content"][0]["text"])

    assert run(None) == text  # 1,500 heuristic tokens: not above the threshold
    cut = run("cl100k_base")
    header, head = cut.split("\n\n")[:2]
    assert header == f"[Truncated: 1 block, ~{exact:,} tokens]"
    assert count_tokens(head, "cl100k_base") <= 60 < count_tokens(head + "é", "cl100k_base") + 1


def test_unknown_tokenizer_is_refused() -> None:
    with pytest.raises(ValueError, match="tokenizer must be one of"):
        ContextManager(tokenizer="gpt2")
