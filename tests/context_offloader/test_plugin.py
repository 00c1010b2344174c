"""ContextOffloader behaviour: validation, hooks, eviction, failures and our own options."""

from __future__ import annotations

import asyncio
import logging
from typing import Any

import pytest
import strands_offload
import strands_offload.storage as our_storage
from _agent_harness import references_in, run
from strands import tool
from strands.types.tools import ToolContext
from strands.vended_plugins.context_offloader import ContextOffloader as RefOffloader
from strands_offload.context_offloader import ContextOffloader
from strands_offload.context_offloader.plugin import SKIP_OFFLOAD_KEY, skip_offload

BIG = "\n".join(f"row {i}: value={i * 7} status={'FAIL' if i % 50 == 0 else 'ok'}" for i in range(4000))


@pytest.mark.parametrize(
    "kwargs",
    [
        {"max_result_tokens": 0},
        {"max_result_tokens": -3},
        {"preview_tokens": -1},
        {"max_result_tokens": 10, "preview_tokens": 10},
        {"evict_after_cycles": 0},
        {"evict_after_cycles": 2.5},
        {"evict_after_cycles": "3"},
    ],
)
def test_constructor_errors_match_reference(kwargs: dict[str, Any]) -> None:
    with pytest.raises(ValueError) as theirs:
        RefOffloader(**kwargs)
    with pytest.raises(ValueError) as ours:
        ContextOffloader(**kwargs)
    assert str(ours.value) == str(theirs.value)


def test_constructor_accepts_what_reference_accepts() -> None:
    ContextOffloader(None, 10, 0, evict_after_cycles=True)
    ContextOffloader(evict_after_cycles=None)
    with pytest.raises(ValueError, match="tokenizer"):
        ContextOffloader(tokenizer="gpt2")


def test_tool_spec_matches_reference_parameters() -> None:
    ours = ContextOffloader().tools
    theirs = RefOffloader().tools
    assert [t.tool_name for t in ours] == [t.tool_name for t in theirs] == ["retrieve_offloaded_content"]
    our_schema = ours[0].tool_spec["inputSchema"]["json"]
    ref_schema = theirs[0].tool_spec["inputSchema"]["json"]

    def shape(schema: dict[str, Any]) -> Any:
        if isinstance(schema, dict):
            return {k: shape(v) for k, v in schema.items() if k != "description"}
        if isinstance(schema, list):
            return [shape(v) for v in schema]
        return schema

    assert shape(our_schema) == shape(ref_schema)


def test_json_queries_option_adds_query_parameter() -> None:
    (spec,) = [t.tool_spec for t in ContextOffloader(json_queries=True).tools]
    assert spec["name"] == "retrieve_offloaded_content"
    assert "query" in spec["inputSchema"]["json"]["properties"]


def test_without_retrieval_tool_nothing_is_registered() -> None:
    agent, results = run(ContextOffloader(include_retrieval_tool=False), [{"text": BIG}])
    assert "retrieve_offloaded_content" not in agent.tool_names
    assert "retrieve_offloaded_content" not in results[0]["content"][0]["text"]


@pytest.mark.parametrize("verdict", [True, False])
def test_should_offload_sync_and_async(verdict: bool) -> None:
    calls: list[tuple[Any, ...]] = []

    def sync_cb(*args: Any, **kwargs: Any) -> bool:
        calls.append(args + tuple(kwargs))
        return verdict

    async def async_cb(tool_name: str, token_count: int, **kwargs: Any) -> bool:
        return verdict

    for callback in (sync_cb, async_cb):
        _, results = run(ContextOffloader(should_offload=callback), [{"text": BIG}])
        offloaded = results[0]["content"][0]["text"].startswith("[Offloaded: ")
        assert offloaded is verdict
    assert calls == [("produce", -(-len(BIG) // 4))]


def test_should_offload_failure_offloads_anyway(caplog: pytest.LogCaptureFixture) -> None:
    def broken(tool_name: str, token_count: int, **kwargs: Any) -> bool:
        raise RuntimeError("boom")

    with caplog.at_level(logging.WARNING):
        _, results = run(ContextOffloader(should_offload=broken), [{"text": BIG}])
    assert results[0]["content"][0]["text"].startswith("[Offloaded: 1 blocks")
    assert "should_offload" in caplog.text


class _FailingStorage:
    def __init__(self) -> None:
        self.writes = 0

    async def write(self, key: str, data: bytes) -> None:
        self.writes += 1
        raise OSError("disk on fire")

    async def read(self, key: str) -> bytes | None:
        return None

    async def delete(self, key: str) -> None:
        return None


def test_store_failure_keeps_original_result(caplog: pytest.LogCaptureFixture) -> None:
    storage = _FailingStorage()
    with caplog.at_level(logging.WARNING):
        _, results = run(ContextOffloader(storage), [{"text": BIG}])
    assert storage.writes == 1
    assert results[0]["content"] == [{"text": BIG}]
    assert "keeping the original" in caplog.text


def test_storage_keys_escape_is_refused_and_result_kept() -> None:
    _, results = run(ContextOffloader(our_storage.InMemoryStorage()), [{"text": BIG}], tool_use_id="../escape")
    assert results[0]["content"] == [{"text": BIG}]


def test_eviction_of_unified_storage_after_cycles() -> None:
    storage = our_storage.InMemoryStorage()
    plugin = ContextOffloader(storage, evict_after_cycles=1)
    retrievals = [{"reference": 0, "line_range": {"start": 1, "end": 2}}] * 4
    _, results = run(plugin, [{"text": BIG}], retrievals)
    # Each retrieval refreshes the entry, so it survives every later cycle.
    assert all(r["status"] == "success" for r in results)

    storage2 = our_storage.InMemoryStorage()
    plugin2 = ContextOffloader(storage2, evict_after_cycles=1)
    retrievals2 = [{"reference": "missing", "pattern": "x"}] * 3 + [{"reference": 0, "pattern": "FAIL"}]
    _, results2 = run(plugin2, [{"text": BIG}], retrievals2)
    assert results2[-1]["status"] == "error"
    assert "reference not found" in results2[-1]["content"][0]["text"]
    assert asyncio.run(storage2.list("offloader/")) == []


def test_skip_offload_marks_only_that_call() -> None:
    @tool(context=True)
    def raw_dump(tool_context: ToolContext) -> str:
        """Return a big value that must stay raw."""
        skip_offload(tool_context)
        return BIG

    from strands import Agent
    from strands_offload.demo.scripted_model import Reply, ScriptedModel, ToolCall

    def script(messages: list[dict[str, Any]]) -> Reply:
        if len(messages) == 1:
            return Reply("", [ToolCall("raw_dump", {}, "t1")])
        return Reply("done")

    agent = Agent(model=ScriptedModel(script), tools=[raw_dump], plugins=[ContextOffloader()], callback_handler=None)
    agent("go")
    result = agent.messages[2]["content"][0]["toolResult"]
    assert result["content"] == [{"text": BIG}]
    assert SKIP_OFFLOAD_KEY == "strands_offload.skip_tool_use_ids"


def test_manual_offload_then_retrieve() -> None:
    plugin = ContextOffloader(our_storage.InMemoryStorage())
    agent, _ = run(plugin, [{"text": "small"}])
    offloaded = asyncio.run(plugin.offload(agent, BIG, key="upload"))
    assert offloaded.references == ["upload_0"]
    assert offloaded.notice.startswith(f"[Offloaded: 1 blocks, ~{-(-len(BIG) // 4):,} tokens]")
    found = asyncio.run(plugin._retrieve(agent, "upload_0", "row 3999:", None, 0, None))
    assert found == "[1 match for /row 3999:/]\n\n> 4000| row 3999: value=27993 status=ok"


def test_opaque_references_hide_keys() -> None:
    storage = our_storage.InMemoryStorage()
    _, results = run(
        ContextOffloader(storage, opaque_references=True),
        [{"text": BIG}],
        [{"reference": 0, "pattern": "row 1:"}, {"reference": "tooluse_big_1_0", "pattern": "row"}],
    )
    notice = results[0]["content"][0]["text"]
    (handle,) = references_in(notice)
    assert handle.startswith("ref_") and "tooluse" not in notice.split("[Stored references:]")[1]
    assert results[1]["status"] == "success"
    assert results[2]["status"] == "error"


def test_exact_tokenizer_counts_bpe(tiktoken_offline: Any) -> None:
    import tiktoken

    encoding = tiktoken.get_encoding("cl100k_base")
    _, results = run(
        ContextOffloader(tokenizer="cl100k_base", max_result_tokens=2500, preview_tokens=100), [{"text": BIG}]
    )
    notice = results[0]["content"][0]["text"]
    header = notice.split("\n", 1)[0]
    true_count = len(encoding.encode_ordinary(BIG))
    assert header == f"[Offloaded: 1 blocks, ~{true_count:,} tokens]"
    preview = notice.split("\n\n", 1)[1].split("\n\n[Stored references:]")[0]
    assert BIG.startswith(preview)
    assert len(encoding.encode_ordinary(preview)) <= 100 < len(encoding.encode_ordinary(BIG[: len(preview) + 8]))


def test_exact_tokenizer_keeps_results_under_threshold(tiktoken_offline: Any) -> None:
    # 'aaaa...' compresses well under BPE: the heuristic says offload, exact counting says keep.
    text = "a" * 12_000
    _, heuristic = run(ContextOffloader(), [{"text": text}])
    _, exact = run(ContextOffloader(tokenizer="cl100k_base"), [{"text": text}])
    assert heuristic[0]["content"][0]["text"].startswith("[Offloaded")
    assert exact[0]["content"] == [{"text": text}]


def test_top_level_exports() -> None:
    assert strands_offload.ContextOffloader is ContextOffloader
