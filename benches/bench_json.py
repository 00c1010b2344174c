"""JSON dumps of a ~10 MB API-like document: ``json.dumps`` (reference) vs the native writer.

Run: ``pytest benches/bench_json.py --benchmark-group-by=group``.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest

sys.path.insert(0, str(Path(__file__).parent))

from json_document import build_document  # noqa: E402
from strands_offload import json_dumps, json_dumps_len  # noqa: E402


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
