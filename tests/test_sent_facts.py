"""``_native.holds_any`` and ``_native.has_cache_point``: the ledger's two questions about a sent request."""

from __future__ import annotations

from typing import Any

from _content_strategies import BLOCKS
from hypothesis import given, settings
from hypothesis import strategies as st
from strands_offload._native import has_cache_point, holds_any

_CACHE_POINT = {"cachePoint": {"type": "default"}}
_ITEMS = st.one_of(
    st.builds(
        lambda role, blocks: {"role": role, "content": blocks},
        st.sampled_from(["user", "assistant"]),
        st.lists(st.one_of(BLOCKS, st.just(_CACHE_POINT), st.integers()), max_size=4),
    ),
    st.builds(lambda content: {"role": "user", "content": content}, st.one_of(st.none(), st.text(), st.integers())),
    st.just({"role": "user"}),
    st.integers(),
    st.text(max_size=3),
)


def _cache_point_oracle(messages: list[Any]) -> bool:
    for message in messages:
        content = message.get("content") if isinstance(message, dict) else None
        if isinstance(content, list) and any(isinstance(b, dict) and "cachePoint" in b for b in content):
            return True
    return False


@settings(max_examples=300, deadline=None)
@given(st.lists(_ITEMS, max_size=8), st.data())
def test_both_answers_equal_a_python_walk(messages: list[Any], data: st.DataObject) -> None:
    strangers = [{"role": "user", "content": []}, [], "x"]
    pool = messages + strangers
    touched = tuple(data.draw(st.lists(st.sampled_from(pool), max_size=3))) if pool else ()
    assert holds_any(messages, touched) is any(m is t for m in messages for t in touched)
    assert has_cache_point(messages) is _cache_point_oracle(messages)


def test_identity_not_equality_decides() -> None:
    sent = [{"role": "user", "content": [{"text": "a"}]}]
    equal_copy = {"role": "user", "content": [{"text": "a"}]}
    assert holds_any(sent, (sent[0],)) and not holds_any(sent, (equal_copy,))
    assert not holds_any([], (equal_copy,)) and not holds_any(sent, ())
    assert has_cache_point([{"role": "user", "content": [{"text": "a"}, _CACHE_POINT]}])
    assert not has_cache_point([{"role": "user", "content": [{"text": "cachePoint"}]}])
