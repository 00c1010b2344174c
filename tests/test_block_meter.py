"""``_native.BlockMeter``: blocks and tool results measured in one native pass, by the SDK's heuristic or exact BPE."""

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
from strands_offload._native import BlockMeter, json_dumps_utf8, token_counter

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
    tally = BlockMeter(token_counter("heuristic"))
    assert tally.messages(messages) == sdk_count(messages)
    for message in messages:
        for block in message["content"]:
            assert tally.block(block) == sdk_block(block)
    assert tally.messages(messages) == sdk_count(messages)  # from memory now, same numbers


@settings(max_examples=100, deadline=None)
@given(_MESSAGES, st.integers(min_value=0, max_value=40))
def test_over_names_the_messages_holding_a_larger_block(messages: list[Any], floor: int) -> None:
    expected = [i for i, m in enumerate(messages) if any(sdk_block(b) > floor for b in m["content"])]
    assert BlockMeter(token_counter("heuristic")).over(messages, floor) == expected


def test_text_is_counted_in_code_points() -> None:
    block = {"text": "é😀x" * 5}  # 15 code points, more UTF-8 bytes
    assert BlockMeter(token_counter("heuristic")).block(block) == sdk_block(block) == 4


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
def test_unusual_shapes_are_left_to_the_sdk_walk(messages: Any) -> None:
    tally = BlockMeter(token_counter("heuristic"))
    assert tally.messages(messages) is None
    assert tally.over(messages, 0) is None


def test_unusual_block_is_left_to_the_sdk_walk() -> None:
    assert BlockMeter(token_counter("heuristic")).block(OrderedDict(text="x")) is None
    assert BlockMeter(token_counter("heuristic")).block("not a block") is None


def test_json_that_json_rejects_counts_zero_and_deep_json_raises_like_the_sdk() -> None:
    rejected = {"toolResult": {"toolUseId": "t", "status": "success", "content": [{"json": {1j: 1}}]}}
    assert BlockMeter(token_counter("heuristic")).block(rejected) == sdk_block(rejected) == 0
    circular: list[Any] = []
    circular.append(circular)
    looped = {"toolUse": {"toolUseId": "t", "name": "abcd", "input": circular}}
    assert BlockMeter(token_counter("heuristic")).block(looped) == sdk_block(looped) == 1
    deep: Any = 0
    for _ in range(100_000):
        deep = [deep]
    too_deep = {"toolUse": {"toolUseId": "t", "name": "n", "input": deep}}
    with pytest.raises(RecursionError):
        sdk_block(too_deep)
    with pytest.raises(RecursionError):
        BlockMeter(token_counter("heuristic")).block(too_deep)


def test_blocks_with_json_are_remembered_by_identity_until_cleared() -> None:
    payload = {"rows": [1, 2, 3]}
    block = {"toolResult": {"toolUseId": "t", "status": "success", "content": [{"json": payload}]}}
    text = {"text": "abcd" * 10}
    tally = BlockMeter(token_counter("heuristic"))
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
    tally = BlockMeter(token_counter("heuristic"))
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


# ---------------------------------------------------------------------------- exact counters


def _bpe_oracle(encoding: Any) -> tuple[Any, Any]:
    """The SDK's block walk measured with tiktoken: text tokens, and tokens of the single-line JSON."""

    def text(value: str) -> int:
        return len(encoding.encode_ordinary(value.encode("utf-8", "surrogatepass").decode("utf-8", "replace")))

    def as_json(value: Any) -> int:
        try:
            return text(json.dumps(value))
        except (TypeError, ValueError):
            return 0

    return text, as_json


@pytest.mark.parametrize("name", ["cl100k_base", "o200k_base"])
@settings(max_examples=60, deadline=None)
@given(messages=_MESSAGES)
def test_exact_block_counts_equal_tiktoken_over_the_sdk_walk(
    tiktoken_encodings: dict[str, Any], name: str, messages: list[Any]
) -> None:
    from strands.models.model import _count_content_block_tokens

    text, as_json = _bpe_oracle(tiktoken_encodings[name])
    meter = BlockMeter(token_counter(name))
    for message in messages:
        for block in message["content"]:
            assert meter.block(block) == _count_content_block_tokens(block, text, as_json)


_ITEMS = st.lists(
    st.one_of(
        st.builds(lambda t: {"text": t}, st.text(max_size=300)),
        st.builds(
            lambda v: {"json": v},
            st.recursive(
                st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=40),
                lambda inner: st.lists(inner, max_size=5) | st.dictionaries(st.text(max_size=8), inner, max_size=5),
                max_leaves=30,
            ),
        ),
    ),
    max_size=4,
)


@pytest.mark.parametrize("name", ["cl100k_base", "o200k_base"])
@settings(max_examples=60, deadline=None)
@given(content=_ITEMS, limit=st.integers(min_value=0, max_value=200))
def test_result_counts_texts_and_single_line_json(
    tiktoken_encodings: dict[str, Any], name: str, content: list[Any], limit: int
) -> None:
    text, as_json = _bpe_oracle(tiktoken_encodings[name])
    total = sum(text(i["text"]) if "text" in i else as_json(i["json"]) for i in content)
    meter = BlockMeter(token_counter(name), prefix=b"FRAME")
    assert meter.result(content) == total
    limited = meter.result(content, limit=limit)
    assert limited == total if total <= limit else limited is not None and limited > limit
    for item in content:
        if "json" in item:
            assert meter.stored(item["json"]) == b"FRAME" + json.dumps(item["json"], indent=2).encode()


def test_result_samples_long_parts_from_their_ends(tiktoken_encodings: dict[str, Any]) -> None:
    encoding = tiktoken_encodings["cl100k_base"]
    long_text = "".join(f"line {i}: value={i * 7919 % 1000} ok\n" for i in range(3000))
    long_json = {"rows": [{"id": i, "name": f"user_{i}"} for i in range(2000)]}
    compact = json.dumps(long_json)
    sample = 4096
    half = sample // 2

    def sampled(part: str) -> int:
        if len(part) <= sample:
            return len(encoding.encode_ordinary(part))
        ends = len(encoding.encode_ordinary(part[:half])) + len(encoding.encode_ordinary(part[-half:]))
        return round(ends * len(part) / (2 * half))

    meter = BlockMeter(token_counter("cl100k_base"))
    content = [{"text": long_text}, {"json": long_json}, {"text": "short"}]
    assert meter.result(content, sample=sample) == sampled(long_text) + sampled(compact) + sampled("short")
    with pytest.raises(ValueError, match="sample must be at least 2"):
        meter.result(content, sample=1)


def test_result_walks_each_json_value_once_for_count_and_storage() -> None:
    value = {"rows": list(range(100))}
    meter = BlockMeter(token_counter("heuristic"), prefix=b"P")
    assert meter.result([{"json": value}]) == -(-len(json.dumps(value)) // 2)
    stored = meter.stored(value)
    assert meter.stored(value) is stored  # remembered, not walked again
    meter.clear()
    assert meter.stored(value) is not stored and meter.stored(value) == stored


def test_result_of_unusual_shapes_is_left_to_the_sdk_walk() -> None:
    meter = BlockMeter(token_counter("cl100k_base"))
    assert meter.result(({"text": "a tuple"},)) is None
    assert meter.result([OrderedDict(text="x")]) is None
    assert meter.result([{"text": 42}]) is None
    assert meter.result([{"json": {1j: 2}}, {"text": "ok"}]) == 1  # rejected JSON counts 0


def test_the_time_spent_counting_is_taken_once() -> None:
    meter = BlockMeter(token_counter("heuristic"))
    assert meter.take_seconds() == 0.0
    messages = [{"role": "user", "content": [{"text": "word " * 20_000}, {"json": {"k": list(range(5_000))}}]}]
    meter.messages(messages)
    meter.over(messages, 10)
    meter.block(messages[0]["content"][0])
    spent = meter.take_seconds()
    assert 0.0 < spent < 60.0
    assert meter.take_seconds() == 0.0
