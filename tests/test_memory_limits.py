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
