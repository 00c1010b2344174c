"""Replay one sequence of storage operations on our backend and the reference's, record outcomes."""

from __future__ import annotations

from typing import Any

from hypothesis import strategies as st
from strands.types.exceptions import StorageError

SEGMENTS = st.sampled_from(["a", "b", "ab", "notes", "x.md", "auth.txt", ".hidden", "..", "", "é", "%2e%2e", "c d"])
KEYS = st.lists(SEGMENTS, min_size=1, max_size=3).map("/".join)
PREFIXES = st.one_of(st.just(""), KEYS, KEYS.map(lambda k: k + "/"))
WORDS = st.sampled_from(["alpha", "beta", "Gamma", "the", "notes", "auth", "md", "x", "é", "hidden", "a"])
TEXTS = st.lists(WORDS, max_size=6).map(" ".join)
DATA = st.one_of(TEXTS.map(str.encode), st.binary(max_size=16))

OPERATIONS = st.lists(
    st.one_of(
        st.tuples(st.just("write"), KEYS, DATA),
        st.tuples(st.just("read"), KEYS),
        st.tuples(st.just("delete"), KEYS),
        st.tuples(st.just("list"), PREFIXES),
        st.tuples(st.just("search"), TEXTS),
    ),
    max_size=14,
)


async def replay(storage: Any, operations: list[tuple[Any, ...]]) -> list[Any]:
    """Apply ``operations`` to ``storage`` and return comparable outcomes."""
    outcomes: list[Any] = []
    for operation in operations:
        name, *args = operation
        try:
            result = await getattr(storage, name)(*args)
        except StorageError as error:
            outcomes.append(("StorageError", str(error)))
            continue
        if name == "search":
            result = [(hit.key, hit.score, hit.data) for hit in result]
        outcomes.append((name, result))
    return outcomes


def percent_escape(operations: list[tuple[Any, ...]]) -> bool:
    """Tell whether a sequence uses a percent-encoded ``..`` (refused by us, accepted by the reference)."""
    return any("%2e%2e" in str(op[1]) for op in operations)
