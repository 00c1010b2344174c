"""Pipeline measurements equal the model's count_tokens, natively where the model uses the heuristic."""

from __future__ import annotations

import asyncio
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
