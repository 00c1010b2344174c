"""Each function accelerate() swaps in answers exactly as the SDK function it replaces (hypothesis).

The replacements are built around the SDK's own functions, as accelerate() builds them, and
called side by side with them: same result, or same exception type and message.
"""

from __future__ import annotations

import base64
import json
import math
from collections.abc import Callable, Iterator
from typing import Any

import pytest
import strands._context_manager.stash as sdk_stash
import strands.models.model as sdk_model
import strands.vended_plugins.context_offloader.search as sdk_search
from hypothesis import given, settings
from hypothesis import strategies as st
from strands_offload._accelerate._replacements import make_encode, make_estimate, make_search
from test_accelerate_json import ItemsDict, IterList, Name, json_values, plain_json

ORIGINAL_SEARCH: Callable[..., str] = sdk_search._search_content
ORIGINAL_ENCODE: Callable[[object], bytes] = sdk_stash._encode
ORIGINAL_ESTIMATE: Callable[..., int] = sdk_model._estimate_tokens_with_heuristic

search = make_search(ORIGINAL_SEARCH)
encode = make_encode(ORIGINAL_ENCODE)
estimate = make_estimate(
    ORIGINAL_ESTIMATE,
    sdk_model._count_content_block_tokens,
    sdk_model._heuristic_estimate_text,
    sdk_model._heuristic_estimate_json,
)


def outcome(function: Callable[..., Any], *args: Any, **kwargs: Any) -> tuple[str, Any]:
    try:
        return "ok", function(*args, **kwargs)
    except Exception as error:
        return type(error).__name__, str(error)


def test_replacements_look_like_the_originals() -> None:
    for replacement, original in ((search, ORIGINAL_SEARCH), (encode, ORIGINAL_ENCODE), (estimate, ORIGINAL_ESTIMATE)):
        assert replacement.__wrapped__ is original  # type: ignore[attr-defined]
        assert replacement.__name__ == original.__name__ and replacement.__doc__ == original.__doc__


# ---------------------------------------------------------------------------- _search_content

LINES = ["ERROR disk full", "ok", "", "café naïve", "東京 データ", "x" * 120, "a\tb", "cr\r", "ERROR again", "😀 end"]
_text = st.lists(st.sampled_from(LINES) | st.text(max_size=15), max_size=40).map("\n".join)
_patterns = (
    st.none()
    | st.sampled_from(
        [
            "",
            "ERROR",
            "error",
            "(?i)error",
            r"\d+",
            r"^\w+$",
            "caf[eé]",
            "(unclosed",
            "(a+)+",
            "a**",
            r"(?<=ERROR )\w+",
            r"(?<!x)ok",
            r"(\w)\1",
            r"\bend$",
            "東京|データ",
            ".",
            "x" * 250,
            "[\\]/\n\r]",
            "\\",
            r"(?=a)",
        ]
    )
    | st.text(max_size=6)
)
_ints = st.integers(-3, 60) | st.sampled_from([0, 10**20, -(10**20), 2**63, 2**64])
_ranges = st.none() | st.tuples(_ints, _ints) | st.tuples(_ints, _ints).map(list) | st.just((True, 3))


@settings(max_examples=500)
@given(
    text=_text,
    pattern=_patterns,
    line_range=_ranges,
    context_lines=_ints | st.just(True),
    max_chars=st.integers(-5, 400) | st.sampled_from([10_000, 0, 2**70]),
)
def test_search_is_the_sdk_search(text: str, pattern: Any, line_range: Any, context_lines: Any, max_chars: Any) -> None:
    kwargs = {"pattern": pattern, "line_range": line_range, "context_lines": context_lines, "max_chars": max_chars}
    assert outcome(search, text, **kwargs) == outcome(ORIGINAL_SEARCH, text, **kwargs)


@pytest.mark.parametrize(
    "args, kwargs",
    [
        ((), {}),
        (("a", "b"), {}),
        (("a",), {"unknown": 1}),
        ((b"bytes",), {}),
        ((Name("ERROR x"),), {"pattern": "ERROR"}),
        (("abc",), {"pattern": Name("b")}),
        (("abc",), {"pattern": 5}),
        (("a\nb",), {"line_range": (1.5, 2)}),
    ],
)
def test_search_unusual_calls_get_the_sdk_answer(args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
    assert outcome(search, *args, **kwargs) == outcome(ORIGINAL_SEARCH, *args, **kwargs)


def test_search_range_errors_are_answered_without_the_sdk() -> None:
    calls: list[Any] = []

    def counting(*args: Any, **kwargs: Any) -> str:
        calls.append(args)
        return ORIGINAL_SEARCH(*args, **kwargs)

    counted = make_search(counting)
    text = "one\ntwo\nthree"
    for line_range in [(0, 2), (3, 1), (9, 12)]:
        assert outcome(counted, text, line_range=line_range) == outcome(ORIGINAL_SEARCH, text, line_range=line_range)
    assert counted(text, pattern="t") == ORIGINAL_SEARCH(text, pattern="t")
    assert calls == []
    # A back-reference on a surrogate the native grep cannot tell apart goes to Python's re.
    assert outcome(counted, "\ud800\ud800", pattern=r"(.)\1") == outcome(
        ORIGINAL_SEARCH, "\ud800\ud800", pattern=r"(.)\1"
    )


# ---------------------------------------------------------------------------- stash _encode

_blocks = st.fixed_dictionaries(
    {},
    optional={
        "text": st.text(max_size=10),
        "json": json_values,
        "image": st.fixed_dictionaries(
            {"format": st.just("png"), "source": st.fixed_dictionaries({"bytes": st.binary(max_size=20)})}
        ),
        "raw": st.binary(max_size=5) | st.builds(bytearray, st.binary(max_size=5)),
    },
)


@settings(max_examples=400)
@given(value=_blocks | json_values | plain_json)
def test_encode_is_the_sdk_encode(value: Any) -> None:
    assert outcome(encode, value) == outcome(ORIGINAL_ENCODE, value)


def test_encode_bytes_are_base64_through_the_sdk() -> None:
    value = {"image": {"source": {"bytes": b"\x00\xff"}}}
    assert (
        encode(value)
        == ORIGINAL_ENCODE(value)
        == json.dumps({"image": {"source": {"bytes": base64.b64encode(b"\x00\xff").decode()}}}).encode("utf-8")
    )
    assert outcome(encode) == outcome(ORIGINAL_ENCODE)
    assert outcome(encode, 1, 2) == outcome(ORIGINAL_ENCODE, 1, 2)  # type: ignore[call-arg]


# ---------------------------------------------------------------------------- heuristic estimate

_texts = st.text(max_size=30) | st.sampled_from(["é" * 9, "東京", "\ud800"])
_odd_texts = st.sampled_from([["list"], ("t",), Name("sub"), 5, None, b"raw"])
_json_like = plain_json | json_values


def _block_strategy() -> st.SearchStrategy[Any]:
    item = st.fixed_dictionaries({}, optional={"text": _texts | _odd_texts, "json": _json_like}) | st.just(
        {"image": {"format": "png", "source": {"bytes": b"x"}}}
    )
    tool_result = st.fixed_dictionaries(
        {"toolUseId": st.just("t1"), "status": st.just("success")},
        optional={"content": st.lists(item, max_size=3) | st.lists(item, max_size=2).map(tuple)},
    )
    tool_use = st.fixed_dictionaries(
        {"toolUseId": st.just("t1")}, optional={"name": _texts, "input": _json_like}
    ) | st.just(ItemsDict(name="x"))
    reasoning = st.fixed_dictionaries(
        {}, optional={"reasoningText": st.fixed_dictionaries({}, optional={"text": _texts})}
    )
    guard = st.fixed_dictionaries({}, optional={"text": st.fixed_dictionaries({}, optional={"text": _texts})})
    citations = st.fixed_dictionaries(
        {}, optional={"content": st.lists(st.fixed_dictionaries({}, optional={"text": _texts}), max_size=2)}
    ) | st.just(["not", "a", "dict"])
    block = st.fixed_dictionaries(
        {},
        optional={
            "text": _texts | _odd_texts,
            "toolUse": tool_use,
            "toolResult": tool_result,
            "reasoningContent": reasoning,
            "guardContent": guard,
            "citationsContent": citations,
            "cachePoint": st.just({"type": "default"}),
        },
    )
    return block | _texts.map(lambda t: {"text": t}) | st.sampled_from([ItemsDict(text="x"), {"text": IterList([1])}])


_messages = st.lists(
    st.fixed_dictionaries(
        {"role": st.sampled_from(["user", "assistant"]), "content": st.lists(_block_strategy(), max_size=4)}
    ),
    max_size=5,
)
_specs = st.none() | st.lists(_json_like, max_size=3)
_system = st.none() | _texts
_system_content = st.none() | st.lists(st.fixed_dictionaries({}, optional={"text": _texts}), max_size=2)


@settings(max_examples=500)
@given(messages=_messages, tool_specs=_specs, system_prompt=_system, system_prompt_content=_system_content)
def test_estimate_is_the_sdk_estimate(
    messages: Any, tool_specs: Any, system_prompt: Any, system_prompt_content: Any
) -> None:
    args = (messages, tool_specs, system_prompt, system_prompt_content)
    assert outcome(estimate, *args) == outcome(ORIGINAL_ESTIMATE, *args)


@pytest.mark.parametrize(
    "messages",
    [
        [],
        None,
        [{"role": "user"}],
        [{"role": "user", "content": None}],
        [{"role": "user", "content": [{"toolUse": "not a dict"}]}],
        [{"role": "user", "content": [{"toolResult": {"content": [{"json": {1, 2}}]}}]}],
        [{"role": "user", "content": [{"toolUse": {"name": "n", "input": [IterList([1, 2, 3])]}}]}],
        ({"role": "user", "content": ({"text": "tuple"},)},),
        iter([{"role": "user", "content": [{"text": "from an iterator"}]}]),
    ],
    ids=repr,
)
def test_estimate_unusual_shapes_get_the_sdk_answer(messages: Any) -> None:
    if isinstance(messages, Iterator):
        items = list(messages)
        assert outcome(estimate, iter(items)) == outcome(ORIGINAL_ESTIMATE, iter(items))
    else:
        assert outcome(estimate, messages) == outcome(ORIGINAL_ESTIMATE, messages)


def _nested(depth: int) -> Any:
    value: Any = 0
    for _ in range(depth):
        value = [value]
    return value


@pytest.mark.parametrize("depth", [10, 900, 990, 1_000, 1_010, 3_000, 100_000])
def test_estimate_of_deep_json_is_the_sdk_s_near_and_past_the_recursion_limit(depth: int) -> None:
    # The one-pass meter leaves what it cannot answer as json would to the SDK's walk.
    messages = [{"role": "user", "content": [{"toolUse": {"toolUseId": "t", "name": "n", "input": _nested(depth)}}]}]
    assert outcome(estimate, messages) == outcome(ORIGINAL_ESTIMATE, messages)


def test_estimate_of_circular_and_subclassed_json_is_the_sdk_s() -> None:
    looped: list[Any] = []
    looped.append(looped)
    for value in (looped, {"k": ItemsDict(a=1)}, [IterList([1, 2])], {"ok": [1, 2.5, None]}):
        messages = [{"role": "user", "content": [{"text": "abc"}, {"toolUse": {"name": "n", "input": value}}]}]
        assert outcome(estimate, messages) == outcome(ORIGINAL_ESTIMATE, messages)


def test_estimate_arity_errors_are_the_sdk_s() -> None:
    assert outcome(estimate) == outcome(ORIGINAL_ESTIMATE)
    assert outcome(estimate, [], None, None, None, None) == outcome(ORIGINAL_ESTIMATE, [], None, None, None, None)
    assert outcome(estimate, [], bogus=1) == outcome(ORIGINAL_ESTIMATE, [], bogus=1)


def test_estimate_of_a_large_json_result() -> None:
    rows = [{"id": i, "name": f"row {i}", "tags": ["é", i / 7]} for i in range(2_000)]
    messages = [
        {
            "role": "user",
            "content": [{"toolResult": {"toolUseId": "t", "status": "success", "content": [{"json": rows}]}}],
        }
    ]
    assert estimate(messages) == ORIGINAL_ESTIMATE(messages) == math.ceil(len(json.dumps(rows)) / 2)
