"""Pipeline measurements equal the model's count_tokens, natively where the model uses the heuristic."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest
from _content_strategies import BLOCKS
from _models import HeuristicModel
from hypothesis import given, settings
from hypothesis import strategies as st
from strands_offload._heuristic import uses_base_heuristic
from strands_offload._native import token_counter
from strands_offload.context_manager._measure import Measure

_Heuristic = HeuristicModel


class _Own(_Heuristic):
    async def count_tokens(self, messages: Any, *args: Any, **kwargs: Any) -> int:
        return 7 * sum(len(m["content"]) for m in messages)


def test_base_heuristic_is_recognised_and_overrides_are_not() -> None:
    assert uses_base_heuristic(_Heuristic())
    assert not uses_base_heuristic(_Own())


def test_bedrock_without_native_counting_falls_back_to_the_heuristic() -> None:
    from strands.models.bedrock import BedrockModel

    assert uses_base_heuristic(BedrockModel(model_id="m", region_name="us-east-1"))
    assert not uses_base_heuristic(BedrockModel(model_id="m", region_name="us-east-1", use_native_token_count=True))


def test_a_model_with_its_own_count_is_asked() -> None:
    block = {"text": "x" * 400}
    assert asyncio.run(Measure(_Own()).block("user", block)) == 7
    assert asyncio.run(Measure(_Own()).messages([{"role": "user", "content": [block, block]}])) == 14


@settings(max_examples=300, deadline=None)
@given(
    st.lists(st.tuples(st.sampled_from(["user", "assistant"]), st.lists(BLOCKS, min_size=1, max_size=4)), max_size=6)
)
def test_native_counts_equal_the_models(conversation: list[tuple[str, list[dict[str, Any]]]]) -> None:
    model = _Heuristic()
    messages = [{"role": role, "content": blocks} for role, blocks in conversation]
    measure = Measure(model)
    assert measure.native

    async def both() -> None:
        assert await measure.messages(messages) == await model.count_tokens(messages)  # type: ignore[arg-type]
        for message in messages:
            for block in message["content"]:
                one = [{"role": message["role"], "content": [block]}]
                assert await measure.block(message["role"], block) == await model.count_tokens(one)  # type: ignore[arg-type]
        # Remembered counts are the same numbers; forgetting them changes nothing.
        assert await measure.messages(messages) == await model.count_tokens(messages)  # type: ignore[arg-type]
        measure.forget()
        assert await measure.messages(messages) == await model.count_tokens(messages)  # type: ignore[arg-type]

    asyncio.run(both())


@pytest.mark.parametrize("encoding", ["cl100k_base", "o200k_base"])
def test_exact_block_counts_are_bpe(encoding: str) -> None:
    from strands_offload import count_tokens, json_dumps

    block = {
        "toolResult": {
            "toolUseId": "t",
            "status": "success",
            "content": [{"text": "héllo wörld"}, {"json": {"a": [1, 2.5]}}],
        }
    }
    expected = count_tokens("héllo wörld", encoding) + count_tokens(json_dumps({"a": [1, 2.5]}), encoding)
    assert asyncio.run(Measure(_Heuristic(), token_counter(encoding)).block("user", block)) == expected


def _tool_result(chars: int) -> dict[str, Any]:
    return {"toolResult": {"toolUseId": "t", "status": "success", "content": [{"json": {"v": "x" * chars}}]}}


def test_messages_holding_blocks_above_a_floor_come_from_one_native_pass() -> None:
    messages = [
        {"role": "user", "content": [{"text": "short"}]},
        {"role": "user", "content": [_tool_result(10), _tool_result(5000)]},
        {"role": "assistant", "content": [{"text": "y" * 9000}]},
    ]
    assert Measure(_Heuristic()).holding_more_than(messages, 1500) == [1, 2]
    assert Measure(_Heuristic()).holding_more_than(messages, 10_000) == []
    # No native answer with an exact encoding, a model counting its own way, or an unusual shape.
    assert Measure(_Heuristic(), token_counter("cl100k_base")).holding_more_than(messages, 1500) is None
    assert Measure(_Own()).holding_more_than(messages, 1500) is None
    assert Measure(_Heuristic()).holding_more_than([{"role": "user", "content": ("x",)}], 0) is None


def test_forget_keeps_counts_only_after_announced_replacements() -> None:
    inner = {"v": "x" * 100}
    block = {"toolResult": {"toolUseId": "t", "status": "success", "content": [{"json": inner}]}}
    messages = [{"role": "user", "content": [block]}]
    measure = Measure(_Heuristic())

    async def count() -> int:
        return await measure.messages(messages)

    first = asyncio.run(count())
    inner["v"] = "x" * 1000  # changed in place, as only a custom strategy would
    measure.blocks_replaced()
    measure.forget()  # announced replacements: the remembered count stays
    assert asyncio.run(count()) == first
    measure.forget()  # anything else: counted afresh
    assert asyncio.run(count()) == asyncio.run(_Heuristic().count_tokens(messages)) > first  # type: ignore[arg-type]


# --------------------------------------------------------------------------------------------------
# A strategy not of ours that edits a block in place (issue 36, item 9)

_GROWN_CHARS = 28_000


def _grown_text() -> str:
    return "".join(f"line {i:05d} of the grown result\n" for i in range(_GROWN_CHARS // 28 + 1))[:_GROWN_CHARS]


class _GrowInPlace:
    """A user's own strategy: rewrites a tool result's content inside the same block, reports no change."""

    def __init__(self, item: str) -> None:
        self.item = item
        self.ran = 0

    @property
    def name(self) -> str:
        return "user:grow-in-place"

    async def apply(self, context: Any) -> bool:
        self.ran += 1
        for message in context.messages:
            for block in message["content"]:
                if block.get("toolResult", {}).get("toolUseId") != "tu_small":
                    continue
                content = block["toolResult"]["content"]
                if self.item == "text":
                    content[0]["text"] = _grown_text()  # a new string in the same item dict
                else:
                    content[0]["json"]["rows"] = _grown_text().splitlines()  # the same JSON value, grown
        return False  # as a strategy that does not count its edit as a reduction may


def _small_history(item: str) -> list[dict[str, Any]]:
    small: dict[str, Any] = {"text": "ok " * 40} if item == "text" else {"json": {"rows": ["ok"] * 10}}
    result = {"toolUseId": "tu_small", "status": "success", "content": [small]}
    messages: list[dict[str, Any]] = [
        {"role": "user", "content": [{"text": "read the log"}]},
        {"role": "assistant", "content": [{"toolUse": {"toolUseId": "tu_small", "name": "read_log", "input": {}}}]},
        {"role": "user", "content": [{"toolResult": result}]},
        {"role": "assistant", "content": [{"text": "read"}]},
    ]
    for index, message in enumerate(messages):
        message["tracking_id"] = f"h{index}"
    return messages


def _run_grown(impl: Any, item: str, truncate_first: bool) -> tuple[Any, Any]:
    from _cm_harness import ContextModel, Reply, fixed_tracking_ids, replies
    from strands import Agent

    grow = _GrowInPlace(item)
    truncate = impl.Offload.truncate("tool_results", {"preview_tokens": 200}).when(threshold=1_000)
    strategies: list[Any] = [grow, truncate]
    if truncate_first:  # our strategy measures the small block before the edit, in the same run
        strategies.insert(0, impl.Offload.truncate("tool_results", {"preview_tokens": 200}).when(threshold=1_000))
    model = ContextModel(replies(Reply("done")), context_window_limit=200_000)
    agent = Agent(
        model=model,
        messages=_small_history(item),  # type: ignore[arg-type]
        context_manager=impl.ContextManager(strategies=strategies),
        callback_handler=None,
    )
    with fixed_tracking_ids():
        agent("and now?")
    assert grow.ran >= 1
    return agent, model


@pytest.mark.parametrize("item", ["text", "json"])
@pytest.mark.parametrize("truncate_first", [False, True], ids=["grow-then-truncate", "truncate-grow-truncate"])
def test_a_block_a_foreign_strategy_grew_in_place_is_counted_afresh(item: str, truncate_first: bool) -> None:
    """The shared meter does not keep a count from before a foreign strategy's in-place edit.

    The custom strategy grows a tool result to 28 KB inside the same block and reports no change;
    the truncation after it must see 28 KB, as the reference's does, not the count from before.
    """
    from _cm_harness import OURS, REFERENCE, without_usage

    reference_agent, reference_model = _run_grown(REFERENCE, item, truncate_first)
    agent, model = _run_grown(OURS, item, truncate_first)
    sent = model.calls[0][2]["content"][0]["toolResult"]["content"]
    # The reference truncates the grown block; so do we, byte for byte.
    assert len(json.dumps(reference_model.calls[0])) < _GROWN_CHARS
    assert len(json.dumps(sent)) < _GROWN_CHARS, "the grown result was sent whole"
    assert without_usage(model.calls) == without_usage(reference_model.calls)
    assert without_usage(agent.messages) == without_usage(reference_agent.messages)


def test_counts_are_forgotten_after_a_strategy_not_of_ours_only() -> None:
    from strands_offload.context_manager import Offload
    from strands_offload.context_manager._measure import is_ours
    from strands_offload.context_manager.strategies.offload.truncate import TruncateStrategy

    class _UsersTruncate(TruncateStrategy):  # a user's subclass may override any step
        pass

    ours = Offload.truncate("tool_results", {"preview_tokens": 10})
    users = _UsersTruncate("tool_results", {"preview_tokens": 10})
    assert is_ours(ours) and not is_ours(users) and not is_ours(_GrowInPlace("text"))

    inner = {"v": "x" * 100}
    messages = [{"role": "user", "content": [{"toolResult": {"toolUseId": "t", "content": [{"json": inner}]}}]}]
    measure = Measure(_Heuristic())
    first = asyncio.run(measure.messages(messages))
    inner["v"] = "x" * 1000
    measure.strategy_ran(ours)  # ours never edits in place: the remembered count stays
    assert asyncio.run(measure.messages(messages)) == first
    measure.blocks_replaced()
    measure.strategy_ran(users)  # any other: counted afresh, even after announced replacements
    assert asyncio.run(measure.messages(messages)) == asyncio.run(_Heuristic().count_tokens(messages)) > first  # type: ignore[arg-type]
