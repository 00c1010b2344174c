"""Grep and page speed: the reference's _search_content against search_content.

Text: Python standard library sources from this machine, concatenated and cut to
1 MB and 10 MB. The reference member searches the ``str``, as the reference does.
The native member is handed the UTF-8 ``bytes`` (what the retrieval path holds),
so it pays strict UTF-8 validation and line indexing on every call; the
``native-cached`` member reuses a prebuilt :class:`TextIndex`, and ``native-str``
passes the ``str``.

The ``grep vs ripgrep`` groups time the four retrieval searches on 10 MB of code,
prose, logs, C headers and package logs (and on code, prose and logs a case-insensitive
literal and a small alternation too) against ripgrep's own search time for ``rg -c`` on the same bytes
(``benches/ripgrep.py``); the two sides do not do the same work: rg counts the
matching lines, ours also validates the UTF-8, indexes the lines and formats the
matching lines with their context up to the reference's budget (``max_chars``,
10,000 characters), as the plugin's retrieval tool returns them. The table is
printed after the run and kept in each benchmark's ``extra_info``
(``python benches/ratios.py --peers BENCH.json``). Its last columns come from 7
rounds that alternate one call of ours and one rg run: both sides under the same
load when other work shares the machine, but each of our calls then starts with
the text out of cache (rg's process ran in between), where the timed loop of
pytest-benchmark keeps the 10 MB in cache. The first figures are the ones asked
for (medians of the two series); the alternating ones bound the cache effect.
Beside each rare-literal row, the floor: one ``memchr`` pass over the same bytes
(``bytes.find`` of a byte UTF-8 never holds), timed in 7 rounds alternating with rg
like our calls, so also starting with the text out of cache.

Run: ``pytest benches/bench_grep.py --benchmark-group-by=group``
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import corpora
import pytest
import ripgrep
from strands.vended_plugins.context_offloader.search import _search_content as ref_search
from strands_offload import TextIndex, search_content

SIZES = {"1MB": 1_000_000, "10MB": 10_000_000}
PATTERNS = {
    "rare-literal": "frobnicate_xyz",
    "common-word": "self",
    "alternation": "import|return|yield",
    "case-insensitive": "(?i)unicode",
}


def corpus(size: int) -> str:
    return corpora.stdlib_code(size)


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


# ---------------------------------------------------------------- against ripgrep

#: The four retrieval searches, with words that fit each corpus.
PEER_PATTERNS = {
    "code": {
        "rare-literal": "frobnicate_xyz",
        "common-word": "self",
        "alternation": "import|return|yield",
        "case-insensitive": "(?i)unicode",
    },
    "prose": {
        "rare-literal": "walrus",
        "common-word": "the",
        "alternation": "which|where|when",
        "case-insensitive": "(?i)python",
    },
    "logs": {
        "rare-literal": "req=deadbeef",
        "common-word": "INFO",
        "alternation": "ERROR|WARNING",
        "case-insensitive": "(?i)error",
    },
}
PEER_PATTERNS["headers"] = {
    "rare-literal": "zlib",
    "common-word": "define",
    "alternation": "typedef|struct|enum",
    "case-insensitive": "(?i)deprecated",
}
PEER_PATTERNS["pkglogs"] = {
    "rare-literal": "libssl3",
    "common-word": "status",
    "alternation": "configure|unpack",
    "case-insensitive": "(?i)error",
}
# Case-insensitive literals and small alternations (issue #43) on the three generated kinds.
PEER_PATTERNS["code"].update({"ci-literal": "(?i)valueerror", "small-alternation": "raise|except"})
PEER_PATTERNS["prose"].update({"ci-literal": "(?i)exception", "small-alternation": "however|therefore"})
PEER_PATTERNS["logs"].update({"ci-literal": "(?i)timeout", "small-alternation": "error|warn(ing)?"})
PEER_CORPORA = {
    "code": corpora.stdlib_code,
    "prose": corpora.prose,
    "logs": corpora.logs,
    # Real files of this machine, of other shapes: C headers, and the package manager's logs.
    "headers": corpora.c_headers,
    "pkglogs": corpora.package_logs,
}
PEER_SIZE = 10_000_000
_MATCH_COUNT = re.compile(r"^\[(\d+) match")


@pytest.fixture(scope="module")
def peer_rows(request: pytest.FixtureRequest) -> Iterator[list[str]]:
    """Collects one line per case and prints the table after the module's benches."""
    rows: list[str] = []
    yield rows
    plugins = request.config.pluginmanager
    reporter, capture = plugins.get_plugin("terminalreporter"), plugins.get_plugin("capturemanager")
    if rows and reporter is not None and capture is not None:
        with capture.global_and_fixture_disabled():  # printed, not captured
            reporter.write_line("")
            reporter.write_line("grep vs ripgrep, 10 MB, medians (ours: bytes in, formatted text out; rg: -c --stats)")
            for row in [ripgrep_header(), *rows]:
                reporter.write_line(row)


def ripgrep_header() -> str:
    # Then three columns: 7 rounds alternating one call of ours (cache-cold) and one rg run; and
    # on rare-literal rows the floor: 7 rounds alternating one memchr pass and one rg run.
    return (
        f"{'corpus':7} {'search':17} {'ours ms':>8} {'rg ms':>8} {'ours/rg':>8}"
        f" {'alt ours':>9} {'alt rg':>9} {'ours/rg':>8} {'memchr':>8}"
    )


def memchr_pass(data: bytes) -> Callable[[], object]:
    """One ``memchr`` over all of ``data``: ``bytes.find`` of one byte is C's ``memchr`` (CPython's
    one-character search), and ``0xFF`` never occurs in UTF-8, so the pass reads every byte."""
    return lambda: data.find(b"\xff")


PEER_CASES = [(kind, name) for kind, patterns in PEER_PATTERNS.items() for name in patterns]


@pytest.mark.skipif(not ripgrep.available(), reason="ripgrep (rg) is not installed")
@pytest.mark.parametrize(("kind", "name"), PEER_CASES)
def test_grep_vs_ripgrep(benchmark: Any, tmp_path: Path, peer_rows: list[str], kind: str, name: str) -> None:
    """``native``: the plugin's retrieval search on the stored bytes (validation, line index,
    matching, and the numbered lines with context formatted up to the reference's 10,000
    characters); the ripgrep figure rides in ``extra_info``: its median search time for
    ``rg -c`` on the same bytes in a file (counting matching lines only)."""
    benchmark.group = f"grep vs ripgrep {name} {kind} 10MB"
    benchmark.extra_info["member"] = "native"
    data = PEER_CORPORA[kind](PEER_SIZE).encode("utf-8")
    pattern = PEER_PATTERNS[kind][name]
    path = tmp_path / f"{kind}.txt"
    path.write_bytes(data)
    rg_seconds, rg_count = ripgrep.search_time(path, pattern)
    out = benchmark(lambda: search_content(data, pattern=pattern))
    found = _MATCH_COUNT.match(out)
    assert (int(found.group(1)) if found else 0) == rg_count, "ripgrep counts other lines than ours"
    if benchmark.stats is None:  # --benchmark-disable: the call ran once, untimed
        return
    ours = benchmark.stats.stats.median
    paired_ours, paired_rg = ripgrep.paired(path, pattern, lambda: search_content(data, pattern=pattern))
    benchmark.extra_info.update(
        peer="ripgrep",
        peer_median=rg_seconds,
        peer_ratio=ours / rg_seconds,
        paired_ours_median=paired_ours,
        paired_peer_median=paired_rg,
    )
    floor = ""
    if name == "rare-literal":
        assert data.find(b"\xff") == -1
        floor_seconds, _ = ripgrep.paired(path, pattern, memchr_pass(data))
        benchmark.extra_info["memchr_floor_median"] = floor_seconds
        floor = f"{floor_seconds * 1e3:8.3f}"
    row = (
        f"{kind:7} {name:17} {ours * 1e3:8.3f} {rg_seconds * 1e3:8.3f} {ours / rg_seconds:8.2f}"
        f" {paired_ours * 1e3:9.3f} {paired_rg * 1e3:9.3f} {paired_ours / paired_rg:8.2f} {floor:>8}"
    )
    peer_rows.append(row.rstrip())
