"""``_native.HeuristicTally``: the SDK's base token heuristic over messages, in one native pass."""

from __future__ import annotations

import asyncio
import json
from collections import OrderedDict
from typing import Any

import pytest
from _content_strategies import BLOCKS
from _models import HeuristicModel
from hypothesis import given, settings
from hypothesis import strategies as st
from strands_offload._native import HeuristicTally, json_dumps_utf8

_Heuristic = HeuristicModel


def sdk_count(messages: list[Any]) -> int:
    return int(asyncio.run(_Heuristic().count_tokens(messages)))


def sdk_block(block: Any) -> int:
    return sdk_count([{"role": "user", "content": [block]}])


_MESSAGES = st.lists(
    st.builds(
        lambda role, blocks: {"role": role, "content": blocks},
        st.sampled_from(["user", "assistant"]),
        st.lists(BLOCKS, max_size=4),
    ),
    max_size=6,
)


@settings(max_examples=300, deadline=None)
@given(_MESSAGES)
def test_counts_equal_the_sdk_heuristic(messages: list[Any]) -> None:
    tally = HeuristicTally()
    assert tally.messages(messages) == sdk_count(messages)
    for message in messages:
        for block in message["content"]:
            assert tally.block(block) == sdk_block(block)
    assert tally.messages(messages) == sdk_count(messages)  # from memory now, same numbers


@settings(max_examples=100, deadline=None)
@given(_MESSAGES, st.integers(min_value=0, max_value=40))
def test_over_names_the_messages_holding_a_larger_block(messages: list[Any], floor: int) -> None:
    expected = [i for i, m in enumerate(messages) if any(sdk_block(b) > floor for b in m["content"])]
    assert HeuristicTally().over(messages, floor) == expected


def test_text_is_counted_in_code_points() -> None:
    block = {"text": "é😀x" * 5}  # 15 code points, more UTF-8 bytes
    assert HeuristicTally().block(block) == sdk_block(block) == 4


@pytest.mark.parametrize(
    "messages",
    [
        [{"role": "user", "content": [OrderedDict(text="a dict subclass")]}],
        [{"role": "user", "content": [{"text": ["not", "a", "str"]}]}],
        [{"role": "user", "content": ({"text": "a tuple of blocks"},)}],
        [{"role": "user", "content": [{"toolResult": {"toolUseId": "t", "content": ({"text": "tuple"},)}}]}],
        [{"role": "user", "content": [{"toolUse": {"toolUseId": "t", "name": None, "input": {}}}]}],
        [{"role": "user", "content": [{"guardContent": {"text": "a str where a dict goes"}}]}],
        [{"role": "user"}],  # no content: the SDK raises KeyError
        ({"role": "user", "content": []},),  # a tuple of messages
    ],
)
def test_unusual_shapes_are_left_to_python(messages: Any) -> None:
    tally = HeuristicTally()
    assert tally.messages(messages) is None
    assert tally.over(messages, 0) is None


def test_unusual_block_is_left_to_python() -> None:
    assert HeuristicTally().block(OrderedDict(text="x")) is None
    assert HeuristicTally().block("not a block") is None


def test_json_that_json_rejects_counts_zero_and_deep_json_raises_like_the_sdk() -> None:
    rejected = {"toolResult": {"toolUseId": "t", "status": "success", "content": [{"json": {1j: 1}}]}}
    assert HeuristicTally().block(rejected) == sdk_block(rejected) == 0
    circular: list[Any] = []
    circular.append(circular)
    looped = {"toolUse": {"toolUseId": "t", "name": "abcd", "input": circular}}
    assert HeuristicTally().block(looped) == sdk_block(looped) == 1
    deep: Any = 0
    for _ in range(100_000):
        deep = [deep]
    too_deep = {"toolUse": {"toolUseId": "t", "name": "n", "input": deep}}
    with pytest.raises(RecursionError):
        sdk_block(too_deep)
    with pytest.raises(RecursionError):
        HeuristicTally().block(too_deep)


def test_blocks_with_json_are_remembered_by_identity_until_cleared() -> None:
    payload = {"rows": [1, 2, 3]}
    block = {"toolResult": {"toolUseId": "t", "status": "success", "content": [{"json": payload}]}}
    text = {"text": "abcd" * 10}
    tally = HeuristicTally()
    before = tally.block(block)
    assert tally.block(text) == 10
    assert len(tally) == 1  # only the block carrying JSON
    payload["rows"].extend(range(1000))  # changed in place: the remembered count stays
    assert tally.block(block) == before
    assert tally.messages([{"role": "user", "content": [block]}]) == before
    tally.clear()
    assert len(tally) == 0
    assert tally.block(block) == sdk_block(block) > before


def test_remembered_blocks_stay_alive() -> None:
    tally = HeuristicTally()
    tally.block({"toolUse": {"toolUseId": "t", "name": "n", "input": {"a": 1}}})
    # The block is referenced by the tally only; a new block may not take its place in memory.
    for _ in range(1000):
        other = {"toolUse": {"toolUseId": "t", "name": "n", "input": {"a": "x" * 100}}}
        assert tally.block(other) == sdk_block(other)
        del other


@pytest.mark.parametrize("indent", [None, 2, "\t"])
def test_json_dumps_utf8_is_the_encoded_dumps(indent: Any) -> None:
    doc = {"é": ["😀", 1.5, None, True, {"k": "line\nbreak"}], "n": 10**30}
    assert json_dumps_utf8(doc, indent=indent) == json.dumps(doc, indent=indent).encode("utf-8")
    with pytest.raises(TypeError, match="not JSON serializable"):
        json_dumps_utf8({"b": b"bytes"})
