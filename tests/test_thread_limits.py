"""A thread the OS refuses is counted on the calling thread, never a PanicException.

Counting a text of 128 KB or more splits it over worker threads. Under a process or
container thread limit the kernel refuses new threads; the count must then come out
of the calling thread alone, equal to the unrestricted one.

How the limit is made real here: `RLIMIT_NPROC` caps the threads of the process's
*real user*, but the kernel never applies it to root (uid 0 of the initial user
namespace is exempt whatever its capabilities), and these tests may run as root. So
the child imports everything and computes the unrestricted answers first, then, when
it is root, switches to the unprivileged uid/gid 65534 ("nobody"; `setuid` to a
non-zero uid also drops every capability), and only then sets `RLIMIT_NPROC` to the
threads that user already has. It checks that a Python thread is refused before
trusting the result, so a platform where the limit does not bite is a skip with its
reason, never a silent pass.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import pytest

pytestmark = pytest.mark.skipif(sys.platform != "linux", reason="RLIMIT_NPROC and /proc are Linux's")

_PRELUDE = """
import os, resource, sys, threading
from strands_offload import count_tokens, count_tokens_batch, _native

def threads_of_user(uid):
    total = 0
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            with open(f"/proc/{pid}/status") as status:
                fields = dict(line.split(":", 1) for line in status if ":" in line)
        except OSError:
            continue
        if int(fields["Uid"].split()[0]) == uid:
            total += int(fields["Threads"])
    return total

def limit_threads():
    if os.getuid() == 0:
        os.setgroups([])
        os.setgid(65534)
        os.setuid(65534)
    # Room for nothing beyond the threads this user already runs.
    cap = threads_of_user(os.getuid())
    resource.setrlimit(resource.RLIMIT_NPROC, (cap, cap))
    try:
        t = threading.Thread(target=lambda: None)
        t.start()
        t.join()
    except RuntimeError:
        return
    print("SKIP a new thread was not refused under RLIMIT_NPROC")
    sys.exit(0)

def report(name, got, want):
    print(name, "same" if got == want else f"differs {got} != {want}")
"""


def run_limited(body: str) -> list[str]:
    code = _PRELUDE + textwrap.dedent(body)
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, (done.returncode, done.stdout[-2000:], done.stderr[-2000:])
    lines = done.stdout.strip().splitlines()
    if lines and lines[-1].startswith("SKIP "):
        pytest.skip(lines[-1][5:])
    return lines


@pytest.mark.skipif(os.cpu_count() == 1, reason="one core: long texts are counted on one thread anyway")
def test_counts_under_a_thread_limit_equal_the_unrestricted_ones() -> None:
    lines = run_limited(
        """
        long = "def f(x):\\n    return x + 1  # it's 2026\\n" * 20_000
        prose = "They'll say it's fine. Don't worry\\n\\n" * 30_000
        batch = [long, prose] + [f"line {i} " * 400 for i in range(64)]
        want = {
            enc: (count_tokens(long, enc), count_tokens(long, enc, limit=10**9), count_tokens_batch(batch, enc))
            for enc in ("cl100k_base", "o200k_base")
        }
        assert len(long) > 128 * 1024 and len(prose) > 128 * 1024
        limit_threads()
        for enc, (whole, limited, many) in want.items():
            for name, call, expected in (
                ("count_tokens", lambda: count_tokens(long, enc), whole),
                ("count_tokens_limit", lambda: count_tokens(long, enc, limit=10**9), limited),
                ("count_tokens_batch", lambda: count_tokens_batch(batch, enc), many),
                ("count_in_parts", lambda: _native._count_tokens_in_parts(long, _native.token_counter(enc), 4), whole),
            ):
                try:
                    report(f"{enc} {name}", call(), expected)
                except BaseException as exc:
                    print(f"{enc} {name} raised {type(exc).__name__}: {exc}")
        """
    )
    assert len(lines) == 8, lines
    assert all(line.endswith(" same") for line in lines), lines


@pytest.mark.skipif(os.cpu_count() == 1, reason="one core: long texts are counted on one thread anyway")
def test_an_agent_with_an_exact_tokenizer_runs_under_a_thread_limit() -> None:
    # The offloader counts an 800 KB tool result with the BPE tokenizer; the tool is
    # async, so the SDK itself needs no thread for it.
    lines = run_limited(
        """
        import asyncio
        from strands import Agent, tool
        from strands_offload import ContextOffloader
        from strands_offload.demo.scripted_model import Reply, ScriptedModel, ToolCall

        BIG = "def f(x):\\n    return x + 1  # it's 2026\\n" * 20_000

        @tool
        async def produce(size: int) -> str:
            \"\"\"Return a large text.\"\"\"
            return BIG

        def script(messages):
            if not any("toolResult" in block for block in messages[-1]["content"]):
                return Reply("", [ToolCall("produce", {"size": 1}, "tooluse_big")])
            return Reply("done")

        def run():
            agent = Agent(
                model=ScriptedModel(script),
                tools=[produce],
                plugins=[ContextOffloader(tokenizer="cl100k_base")],
                callback_handler=None,
            )
            asyncio.run(agent.invoke_async("go"))
            return [block["toolResult"] for m in agent.messages for block in m["content"] if "toolResult" in block]

        want = run()
        assert want[0]["content"][0]["text"].startswith("[Offloaded"), want
        limit_threads()
        try:
            report("invoke_async", run(), want)
        except BaseException as exc:
            print(f"invoke_async raised {type(exc).__name__}: {exc}")
        """
    )
    assert lines == ["invoke_async same"]


@pytest.mark.skipif(os.cpu_count() == 1, reason="one core: a text is read on one thread anyway")
def test_a_grep_of_a_long_text_under_a_thread_limit_equals_the_reference() -> None:
    # Bytes of 2 MiB or more are read in parts by the calling thread and a helper thread,
    # started on first use: refused, the calling thread reads every part.
    lines = run_limited(
        """
        from strands.vended_plugins.context_offloader.search import _search_content as ref_search
        from strands_offload import search_content

        text = "".join(f"line {i} holds é and some words\\n" for i in range(120_000))
        data = text.encode("utf-8")
        assert len(data) > 3 << 20
        patterns = ("line 119999 ", "(?i)LINE 7", "words$")
        want = [ref_search(text, pattern=p) for p in patterns]
        limit_threads()
        for p, expected in zip(patterns, want):
            try:
                report(p, search_content(data, pattern=p), expected)
            except BaseException as exc:
                print(f"{p} raised {type(exc).__name__}: {exc}")
        """
    )
    assert len(lines) == 3, lines
    assert all(line.endswith(" same") for line in lines), lines
