"""JSON dumps of a ~10 MB API-like document: ``json.dumps`` (reference) vs the native writer.

The ``*_fresh`` groups add orjson, the fastest serialiser we know, as a peer. Its
output differs from ``json.dumps`` (no ensure_ascii escapes, its own float text),
so it is a yardstick, not an implementation. Every round of those groups dumps a
document freshly loaded by ``json.loads`` (outside the timing): writers that reuse
UTF-8 copies cached on strings by an earlier round would otherwise look faster
than they are on a tool's result, which is always fresh. The ``native`` member of those
groups also times one orjson round before each of its own (``paired.py``): orjson's
median from the same stretch of time, beside the separate series.

Run: ``pytest benches/bench_json.py --benchmark-group-by=group``.
"""

from __future__ import annotations

import functools
import importlib.util
import json
import sys
from pathlib import Path
from typing import Any

import pytest

sys.path.insert(0, str(Path(__file__).parent))

from json_document import build_document  # noqa: E402
from json_shapes import SHAPES, TARGET, build_shape  # noqa: E402
from paired import Paired  # noqa: E402
from strands_offload import json_dumps, json_dumps_len  # noqa: E402
from strands_offload._native import json_query  # noqa: E402


@pytest.fixture(scope="module")
def document() -> list[dict[str, Any]]:
    doc = build_document(10_000_000)
    # Same bytes before timing anything.
    assert json_dumps(doc, indent=2) == json.dumps(doc, indent=2)
    assert json_dumps(doc) == json.dumps(doc)
    assert json_dumps_len(doc) == len(json.dumps(doc))
    return doc


@pytest.mark.benchmark(group="json_dumps_indent2")
def test_indent2_reference(benchmark: Any, document: Any) -> None:
    benchmark.pedantic(json.dumps, args=(document,), kwargs={"indent": 2}, rounds=5, warmup_rounds=1)


@pytest.mark.benchmark(group="json_dumps_indent2")
def test_indent2_native(benchmark: Any, document: Any) -> None:
    benchmark.pedantic(json_dumps, args=(document,), kwargs={"indent": 2}, rounds=20, warmup_rounds=1)


@pytest.mark.benchmark(group="json_dumps_compact")
def test_compact_reference(benchmark: Any, document: Any) -> None:
    benchmark.pedantic(json.dumps, args=(document,), rounds=10, warmup_rounds=1)


@pytest.mark.benchmark(group="json_dumps_compact")
def test_compact_native(benchmark: Any, document: Any) -> None:
    benchmark.pedantic(json_dumps, args=(document,), rounds=20, warmup_rounds=1)


def _reference_len(obj: Any) -> int:
    return len(json.dumps(obj))


@pytest.mark.benchmark(group="json_dumps_len")
def test_len_reference(benchmark: Any, document: Any) -> None:
    benchmark.pedantic(_reference_len, args=(document,), rounds=10, warmup_rounds=1)


@pytest.mark.benchmark(group="json_dumps_len")
def test_len_native(benchmark: Any, document: Any) -> None:
    benchmark.pedantic(json_dumps_len, args=(document,), rounds=20, warmup_rounds=1)


# ---------------------------------------------------------------------------
# json_query on 10 MB of stored JSON (as the plugin stores it: indent=2 bytes)
# ---------------------------------------------------------------------------

QUERY = "$[5000].address.city"
FILTER_QUERY = "$[?(@.score > 99.9)].id"


@pytest.fixture(scope="module")
def stored(document: list[dict[str, Any]]) -> bytes:
    data = json_dumps(document, indent=2).encode()
    # Same answers before timing anything.
    assert json_query(data, QUERY) == _reference_query(data)
    assert json_query(data, FILTER_QUERY) == _reference_filter(data)
    return data


def _answer(query: str, matches: list[Any]) -> str:
    noun = "match" if len(matches) == 1 else "matches"
    return f"[{len(matches)} {noun} for {query}]\n\n{json.dumps(matches, indent=2)}"


def _reference_query(data: bytes) -> str:
    """What a caller does without us: load everything, index, dump the answer."""
    doc = json.loads(data)
    return _answer(QUERY, [doc[5000]["address"]["city"]])


def _reference_filter(data: bytes) -> str:
    doc = json.loads(data)
    return _answer(FILTER_QUERY, [r["id"] for r in doc if isinstance(r, dict) and "score" in r and r["score"] > 99.9])


@pytest.mark.benchmark(group="json_query_10mb")
def test_query_reference(benchmark: Any, stored: bytes) -> None:
    benchmark.pedantic(_reference_query, args=(stored,), rounds=5, warmup_rounds=1)


@pytest.mark.benchmark(group="json_query_10mb")
def test_query_native(benchmark: Any, stored: bytes) -> None:
    benchmark.pedantic(json_query, args=(stored, QUERY), rounds=20, warmup_rounds=1)


@pytest.mark.benchmark(group="json_query_10mb_filter")
def test_filter_reference(benchmark: Any, stored: bytes) -> None:
    benchmark.pedantic(_reference_filter, args=(stored,), rounds=5, warmup_rounds=1)


@pytest.mark.benchmark(group="json_query_10mb_filter")
def test_filter_native(benchmark: Any, stored: bytes) -> None:
    benchmark.pedantic(json_query, args=(stored, FILTER_QUERY), rounds=20, warmup_rounds=1)


# ---------------------------------------------------------------------------
# json_query on the same 10 MB compact (as an API returns it), an item three quarters in
# ---------------------------------------------------------------------------


@pytest.fixture(scope="module")
def compact(document: list[dict[str, Any]]) -> tuple[bytes, int]:
    data = json_dumps(document).encode()
    index = len(document) * 3 // 4
    # Same answer before timing anything.
    assert json_query(data, _item_name_query(index)) == _reference_item_name(data, index)
    return data, index


def _item_name_query(index: int) -> str:
    return f"$[{index}].name"


def _reference_item_name(data: bytes, index: int) -> str:
    """Load everything, index, dump the answer."""
    return _answer(_item_name_query(index), [json.loads(data)[index]["name"]])


@pytest.mark.benchmark(group="json_query_10mb_compact")
def test_compact_query_reference(benchmark: Any, compact: tuple[bytes, int]) -> None:
    benchmark.pedantic(_reference_item_name, args=compact, rounds=5, warmup_rounds=1)


@pytest.mark.benchmark(group="json_query_10mb_compact")
def test_compact_query_native(benchmark: Any, compact: tuple[bytes, int]) -> None:
    data, index = compact
    benchmark.pedantic(json_query, args=(data, _item_name_query(index)), rounds=20, warmup_rounds=1)


# ---------------------------------------------------------------------------
# Against orjson, on freshly loaded objects
# ---------------------------------------------------------------------------

FRESH_ROUNDS = 9


@functools.cache
def _document_text(shape: str) -> str:
    text = json.dumps(build_shape(shape))
    assert abs(len(text) - TARGET) <= TARGET * 0.05, f"{shape}: {len(text):,} bytes"
    return text


def _dumper(member: str, indent: bool) -> Any:
    if member == "reference":
        return functools.partial(json.dumps, indent=2 if indent else None)
    if member == "native":
        return functools.partial(json_dumps, indent=2 if indent else None)
    orjson = pytest.importorskip("orjson")
    option = orjson.OPT_INDENT_2 if indent else 0
    return functools.partial(orjson.dumps, option=option)


@pytest.mark.parametrize("shape", list(SHAPES))
@pytest.mark.parametrize("layout", ["indent2", "compact"])
@pytest.mark.parametrize("member", ["reference", "native", "orjson"])
def test_fresh_objects(benchmark: Any, member: str, layout: str, shape: str) -> None:
    benchmark.group = f"json_dumps_{layout}_fresh_{shape}"
    text = _document_text(shape)
    dump = _dumper(member, layout == "indent2")
    if member == "native":
        assert dump(json.loads(text)) == _dumper("reference", layout == "indent2")(json.loads(text))

    # ``native``: each round of ours follows one orjson round on its own fresh document, when
    # orjson is installed (see paired.py).
    pair = member == "native" and importlib.util.find_spec("orjson") is not None
    peer_rounds = Paired("orjson", lambda: json.loads(text), _dumper("orjson", layout == "indent2")) if pair else None

    def fresh() -> tuple[tuple[Any, ...], dict[str, Any]]:
        if peer_rounds is not None:
            peer_rounds.round()
        return (json.loads(text),), {}

    rounds = 3 if member == "reference" else FRESH_ROUNDS
    benchmark.pedantic(dump, setup=fresh, rounds=rounds, warmup_rounds=0)
    if peer_rounds is not None:
        peer_rounds.record(benchmark, rounds)
