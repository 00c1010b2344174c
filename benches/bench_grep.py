"""Grep and page speed: the reference's _search_content against search_content.

Text: Python standard library sources from this machine, concatenated and cut to
1 MB and 10 MB. The reference member searches the ``str``, as the reference does.
The native member is handed the UTF-8 ``bytes`` (what the retrieval path holds),
so it pays strict UTF-8 validation and line indexing on every call; the
``native-cached`` member reuses a prebuilt :class:`TextIndex`, and ``native-str``
passes the ``str``.

Run: ``pytest benches/bench_grep.py --benchmark-group-by=group``
"""

from __future__ import annotations

import functools
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from strands.vended_plugins.context_offloader.search import _search_content as ref_search
from strands_offload import TextIndex, search_content

SIZES = {"1MB": 1_000_000, "10MB": 10_000_000}
PATTERNS = {
    "rare-literal": "frobnicate_xyz",
    "common-word": "self",
    "alternation": "import|return|yield",
    "case-insensitive": "(?i)unicode",
}


@functools.cache
def corpus(size: int) -> str:
    root = Path(os.__file__).parent
    parts: list[str] = []
    total = 0
    for path in sorted(root.rglob("*.py")):
        try:
            text = path.read_text(encoding="utf-8")
        except (UnicodeDecodeError, OSError):
            continue
        parts.append(text)
        total += len(text.encode("utf-8"))
        if total >= size:
            break
    return "".join(parts).encode("utf-8")[:size].decode("utf-8", "ignore")


def run(benchmark: Any, fn: Callable[[], str], expected: str | None = None) -> None:
    out = benchmark(fn)
    if expected is not None:
        assert out == expected


@pytest.mark.parametrize("size", list(SIZES))
@pytest.mark.parametrize("name", list(PATTERNS))
@pytest.mark.parametrize("member", ["reference", "native", "native-cached", "native-str"])
def test_grep(benchmark: Any, member: str, name: str, size: str) -> None:
    benchmark.group = f"grep {name} {size}"
    text = corpus(SIZES[size])
    pattern = PATTERNS[name]
    expected = ref_search(text, pattern=pattern)
    if member == "reference":
        run(benchmark, lambda: ref_search(text, pattern=pattern), expected)
    elif member == "native":
        data = text.encode("utf-8")
        run(benchmark, lambda: search_content(data, pattern=pattern), expected)
    elif member == "native-str":
        run(benchmark, lambda: search_content(text, pattern=pattern), expected)
    else:
        index = TextIndex(text.encode("utf-8"))
        run(benchmark, lambda: search_content(index, pattern=pattern), expected)


@pytest.mark.parametrize("member", ["reference", "native", "native-cached", "native-str"])
def test_page_middle_of_10mb(benchmark: Any, member: str) -> None:
    benchmark.group = "page 100 lines mid 10MB"
    text = corpus(SIZES["10MB"])
    middle = text.count("\n") // 2
    rng = (middle, middle + 99)
    expected = ref_search(text, line_range=rng)
    if member == "reference":
        run(benchmark, lambda: ref_search(text, line_range=rng), expected)
    elif member == "native":
        data = text.encode("utf-8")
        run(benchmark, lambda: search_content(data, line_range=rng), expected)
    elif member == "native-str":
        run(benchmark, lambda: search_content(text, line_range=rng), expected)
    else:
        index = TextIndex(text.encode("utf-8"))
        run(benchmark, lambda: search_content(index, line_range=rng), expected)
