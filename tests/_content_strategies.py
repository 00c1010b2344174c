"""Hypothesis strategies for message content: every block kind the SDK's token heuristic reads.

Shared by the tests that compare a native count with the SDK's own (``_measure``, ``BlockMeter``).
Besides well-formed blocks they draw the odd shapes a counter must survive: a tool result without
content, redacted reasoning, guard content without text, citations without content, an empty block.
"""

from __future__ import annotations

from hypothesis import strategies as st

JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=True) | st.text(max_size=20),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=6), inner, max_size=4),
    max_leaves=12,
)
TEXTS = st.text(max_size=60)
RESULT_ITEMS = st.one_of(
    st.builds(lambda t: {"text": t}, TEXTS),
    st.builds(lambda j: {"json": j}, JSON_VALUES),
    st.builds(lambda t, j: {"text": t, "json": j}, TEXTS, JSON_VALUES),
    st.just({"image": {"format": "png", "source": {"bytes": b"\x89PNG"}}}),
    st.just({"json": {"not": {1, 2}}}),  # json.dumps rejects a set: the heuristic counts it as 0
)
BLOCKS = st.one_of(
    st.builds(lambda t: {"text": t}, TEXTS),
    st.builds(lambda n, j: {"toolUse": {"toolUseId": "t", "name": n, "input": j}}, TEXTS, JSON_VALUES),
    st.builds(lambda n: {"toolUse": {"toolUseId": "t", "name": n}}, TEXTS),
    st.builds(
        lambda items, status: {"toolResult": {"toolUseId": "t", "status": status, "content": items}},
        st.lists(RESULT_ITEMS, max_size=4),
        st.sampled_from(["success", "error"]),
    ),
    st.just({"toolResult": {"toolUseId": "t", "status": "success"}}),
    st.builds(lambda t: {"reasoningContent": {"reasoningText": {"text": t, "signature": "s"}}}, TEXTS),
    st.just({"reasoningContent": {"redactedContent": b"x"}}),
    st.builds(lambda t: {"guardContent": {"text": {"text": t}}}, TEXTS),
    st.just({"guardContent": {"image": {"format": "png"}}}),
    st.builds(lambda ts: {"citationsContent": {"content": [{"text": t} for t in ts]}}, st.lists(TEXTS, max_size=3)),
    st.just({"citationsContent": {"citations": []}}),
    st.builds(lambda t: {"text": t, "toolUse": {"toolUseId": "t", "name": "n", "input": {}}}, TEXTS),
    st.just({"cachePoint": {"type": "default"}}),
    st.just({"image": {"format": "png", "source": {"bytes": b"x" * 100}}}),
    st.just({}),
)
