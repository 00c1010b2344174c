"""Allocation failure is MemoryError, never an abort or a PanicException.

Each case runs in a child process whose address space is capped (`RLIMIT_AS`, as
strict overcommit or a container limit would) just above what the input itself
takes, so the native output buffer cannot be had. The child reports the exception
it caught; a process killed by SIGABRT, or a `PanicException` (a BaseException),
fails the test.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest

pytestmark = pytest.mark.skipif(sys.platform != "linux", reason="RLIMIT_AS and /proc are Linux's")

_PRELUDE = """
import json, resource, sys
from strands_offload import _native, json_dumps, search_content

def capped(extra_mb):
    with open("/proc/self/status") as status:
        vm = next(int(line.split()[1]) * 1024 for line in status if line.startswith("VmSize:"))
    limit = vm + extra_mb * 2**20
    resource.setrlimit(resource.RLIMIT_AS, (limit, limit))

def report(fn):
    try:
        fn()
    except MemoryError:
        print("MemoryError")
    except BaseException as exc:
        print("other", type(exc).__name__, exc)
    else:
        print("no error")

def report_same(fn, want):
    try:
        got = fn()
    except MemoryError:
        print("MemoryError")
    except BaseException as exc:
        print("other", type(exc).__name__, exc)
    else:
        print("same" if got == want else f"differs {got!r:.200} != {want!r:.200}")
"""


def run_capped(body: str) -> str:
    code = _PRELUDE + textwrap.dedent(body)
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, (done.returncode, done.stderr[-2000:])
    return done.stdout.strip().splitlines()[-1]


@pytest.mark.parametrize("function", ["json_dumps", "_native.json_dumps_utf8"])
def test_json_writers_raise_memory_error(function: str) -> None:
    # 64 MB of control characters: 384 MB of escapes, past a 200 MB cap.
    got = run_capped(
        f"""
        doc = ["\\x01" * (64 << 20)]
        capped(200)
        report(lambda: {function}(doc))
        """
    )
    assert got == "MemoryError"


def test_json_dumps_with_indent_raises_memory_error() -> None:
    got = run_capped(
        """
        doc = [{"k": "\\x02" * (1 << 20)} for _ in range(64)]
        capped(200)
        report(lambda: json_dumps(doc, indent=2))
        """
    )
    assert got == "MemoryError"


def test_json_dumps_with_a_huge_indent_raises_memory_error() -> None:
    # The indent text (40 MB, made by Python under the cap) is copied for the writer.
    got = run_capped(
        """
        capped(60)
        report(lambda: json_dumps([[1]], indent=40 << 20))
        """
    )
    assert got == "MemoryError"


def test_search_with_a_huge_budget_raises_memory_error() -> None:
    # Every line matches: the answer (numbered lines) is larger than the text.
    got = run_capped(
        """
        text = "ab\\n" * (40 << 20)
        capped(150)
        report(lambda: search_content(text, pattern="a", max_chars=2**62))
        """
    )
    assert got == "MemoryError"


def test_encode_of_a_large_text_raises_memory_error() -> None:
    got = run_capped(
        """
        text = "token " * (16 << 20)
        capped(120)
        report(lambda: _native.encode(text, _native.token_counter("cl100k_base")))
        """
    )
    assert got == "MemoryError"


def test_the_same_calls_succeed_with_room() -> None:
    # The cap itself is not what fails: with room the child answers normally.
    got = run_capped(
        """
        doc = ["\\x01" * 1000]
        counter = _native.token_counter("cl100k_base")
        capped(400)
        report(lambda: (json_dumps(doc), _native.json_dumps_utf8(doc), _native.encode("token " * 1000, counter),
                        search_content("ab\\n" * 1000, pattern="a", max_chars=2**62)))
        """
    )
    assert got == "no error"


# Issue 36: the JSONPath engine and the tokenizer grow their input-sized buffers
# through the core's fallible helpers too. Under a cap just above the input, each
# call either answers or raises MemoryError; an abort (SIGABRT) or a
# PanicException fails. Where a call may still answer under the cap,
# `report_same` checks the answer against the one computed before the cap.
_ANSWERED_OR_MEMORY_ERROR = ("MemoryError", "same")


@pytest.mark.parametrize(
    "document",
    [
        # 80 MB of numbers: the index of 40 million nodes is far past the cap.
        'b"[" + b"1," * (40 << 20) + b"1]"',
        # 80 MB of strings with escapes: decoded key and string buffers as well.
        'b"[" + b\'"\\\\u00e9\\\\n",\' * (8 << 20) + b\'{"k\\\\u00e9": "\\\\t"}]\'',
        # The same text, taken from a str the caller holds.
        '("[" + "1," * (40 << 20) + "1]").encode()',
    ],
    ids=["numbers", "escaped-strings", "from-str"],
)
def test_json_query_on_a_large_document_under_a_cap(document: str) -> None:
    got = run_capped(
        f"""
        from strands_offload import json_query
        data = {document}
        capped(120)
        report(lambda: json_query(data, "$[0]"))
        """
    )
    assert got == "MemoryError"


# What each tokenizer case builds before the cap, the cap above it, and the answers it allows.
_TOKENIZER_SETUPS = {
    # 100 MB of text whose pieces are long runs (the encoder's own buffers grow with a piece) and
    # short words; a cap of 60 MB above it: the call answers as with room, or raises MemoryError.
    "large text": (
        """
        text = ("token " * 100_000 + "a" * 400_000 + "\\n") * 100
        want = {call}
        capped(60)
        report_same(lambda: {call}, want)
        """,
        _ANSWERED_OR_MEMORY_ERROR,
    ),
    # Buffers that follow their input past a cap of 70 MB: the call raises MemoryError.
    "past the cap": (
        """
        one_piece = "a" * (64 << 20)
        surrogates = "\u4e16\u754c " * (6 << 20) + "\\ud800"
        ids = [15339] * (10 << 20)
        capped(70)
        report(lambda: {call})
        """,
        ("MemoryError",),
    ),
}


@pytest.mark.parametrize(
    ("setup", "call"),
    [
        ("large text", "count_tokens(text)"),
        ("large text", "count_tokens(text, limit=10**12)"),
        ("large text", "count_tokens(text, 'o200k_base', limit=10**12)"),
        ("large text", "count_tokens_batch([text, text[: 1 << 20], 'x'])"),
        ("large text", "preview(text, 10**12, mode='head_tail', encoding='cl100k_base', count=True).head_end"),
        ("large text", "QueryScorer({'zebra', 'token'}).score_text(text)"),
        # One 64 MB piece: the BPE crate's encoder buffers follow the piece.
        ("past the cap", "count_tokens(one_piece)"),
        ("past the cap", "count_tokens(one_piece, limit=10**12)"),
        ("past the cap", "count_tokens_batch([one_piece, 'x'])"),
        ("past the cap", "preview(one_piece, 10**12, encoding='cl100k_base', count=True)"),
        ("past the cap", "_native.encode(one_piece, _native.token_counter('o200k_base'))"),
        # A lone surrogate: the text is repaired into a copy as long as its UTF-8 (mostly
        # 3-byte characters, so CPython's own encoding peak is no larger than that copy).
        ("past the cap", "count_tokens(surrogates)"),
        ("past the cap", "count_tokens_batch(['x', surrogates])"),
        # Token ids of 5 bytes each: the decoded bytes.
        ("past the cap", "decode(ids)"),
    ],
)
def test_tokenizer_and_scans_under_a_cap(setup: str, call: str) -> None:
    body, allowed = _TOKENIZER_SETUPS[setup]
    got = run_capped(
        """
        from strands_offload import count_tokens, count_tokens_batch, decode, preview
        from strands_offload.storage.search.keyword import QueryScorer
        """
        + body.format(call=call)
    )
    assert got in allowed


def test_bm25_search_of_a_large_text_under_a_cap() -> None:
    # The index is SQLite's; what our code adds (decoding, hashing, the query) stays
    # small. A search under the cap answers, or fails with MemoryError, never aborts.
    got = run_capped(
        """
        import asyncio
        from strands_offload.storage.in_memory_storage import InMemoryStorage
        from strands_offload.storage.search.bm25 import Bm25SearchStrategy

        async def main():
            storage = InMemoryStorage()
            strategy = Bm25SearchStrategy(in_memory=True)
            text = ("lorem ipsum dolor " * 200_000 + "zebra crossing\\n").encode() * 10
            await strategy.index(storage, "big.txt", text)
            want = [hit.key for hit in await strategy.search(storage, "zebra crossing")]
            capped(60)
            async def search():
                return [hit.key for hit in await strategy.search(storage, "zebra crossing")]
            try:
                got = await search()
            except MemoryError:
                print("MemoryError")
            except BaseException as exc:
                print("other", type(exc).__name__, exc)
            else:
                print("same" if got == want == ["big.txt"] else f"differs {got} {want}")

        asyncio.run(main())
        """
    )
    assert got in _ANSWERED_OR_MEMORY_ERROR


def test_allocation_failure_while_writing_a_new_key_keeps_every_reference() -> None:
    # Every key is new (one dict of distinct keys), so the walk writes each through the key cache,
    # which keeps a reference to the keys it caches. The output buffer's growth fails during one
    # of those writes: the key must not be left cached without its reference (released again when
    # the walk ends: a count one short), nor an evicted key left with one too many. A dict
    # subclass written first runs Python code, so the walk also holds the containers then open.
    got = run_capped(
        """
        class Runs(dict):
            def items(self):
                return super().items()

        keys = [f"key-{i:040d}" for i in range(400_000)]
        inner = [Runs(a=1), dict.fromkeys(keys, 0)]
        doc = {"wrap": inner}
        keys += [doc, inner]
        before = [sys.getrefcount(k) for k in keys]
        capped(8)
        try:
            json_dumps(doc)
            outcome = "no error"
        except MemoryError:
            outcome = "MemoryError"
        after = [sys.getrefcount(k) for k in keys]
        print(outcome, "changed:", sum(a != b for a, b in zip(before, after)))
        """
    )
    assert got == "MemoryError changed: 0"
