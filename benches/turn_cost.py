"""The context manager's own cost per turn, the reference's and ours side by side (issue 38).

A real ``strands.Agent`` on a ``BedrockModel`` with prompt caching configured (``cache_config``)
whose client is a stub (no network: it answers from a script and reports usage), after a history
of ``n`` messages: user questions (~40 tokens), tool calls, tool results of 300 to 1,400 tokens and
answers of ~150 tokens. One turn is ``agent("...")``: the model asks for a tool, the tool answers,
the model answers (two model calls). What is timed is every callback of the context manager under
test, over the turn: ``MessageAdded``, ``BeforeModelCall``, ``AfterModelCall``, ``BeforeTools``,
``AfterInvocation`` (the callbacks registered from the manager's package: the reference's
``strands._context_manager``, or ``strands_offload``); the model, the tools, the SDK's event loop
and the session manager's own writes are not.

Members (each keeps its agent from turn to turn; the rounds alternate the members, so all medians
come from the same stretch of time on a shared machine):

- ``reference auto``: ``strands.experimental.context_manager.ContextManager.from_strategy("auto")``;
- ``ours auto``: ``ContextManager.from_strategy("auto")`` with an in-memory stash;
- ``ours cache-optimized``: ``from_strategy("cache-optimized")``, in-memory stash;
- ``ours cache-optimized + persist``: ``from_strategy("cache-optimized", persist_reductions=True)``
  under a ``FileSessionManager``, in-memory stash, the ledger on with no telemetry provider.

Run: ``python benches/turn_cost.py [rounds] [sizes...]`` (default 7 rounds, after 2 warm-up turns;
sizes 200, 1,000, 4,000, 16,000). ``--profile n member`` prints a cProfile of that member's
callbacks over the rounds.
"""

from __future__ import annotations

import cProfile
import inspect
import pstats
import random
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from typing import Any

from strands import Agent, tool
from strands.experimental.context_manager import ContextManager as RefContextManager
from strands.models.bedrock import BedrockModel
from strands.models.model import CacheConfig
from strands.session.file_session_manager import FileSessionManager
from strands_offload.context_manager import ContextManager
from strands_offload.storage.in_memory_storage import InMemoryStorage

ROUNDS = 7
WARMUP = 2
SIZES = (200, 1_000, 4_000, 16_000)
WINDOW = 1_000_000_000  # no summary in the bench: the cost measured is the bookkeeping's
MEMBERS = ("reference auto", "ours auto", "ours cache-optimized", "ours cache-optimized + persist")
_WORDS = "the of and to in is that for it as with was on be by this are from or at an".split()


def _words(rng: random.Random, tokens: int) -> str:
    return " ".join(rng.choice(_WORDS) for _ in range(tokens * 4 // 3))


def history(n: int, seed: int = 7) -> list[dict[str, Any]]:
    """``n`` messages: question, tool call, tool result, answer, in turn (with past tracking ids)."""
    rng = random.Random(seed)
    messages: list[dict[str, Any]] = []
    k = 0
    while len(messages) < n:
        use_id = f"tooluse_{k:08d}"
        unit = [
            {"role": "user", "content": [{"text": f"Question {k}: " + _words(rng, 40)}]},
            {
                "role": "assistant",
                "content": [
                    {"text": "Let me search."},
                    {"toolUse": {"toolUseId": use_id, "name": "search", "input": {"query": _words(rng, 8)}}},
                ],
            },
            {
                "role": "user",
                "content": [
                    {
                        "toolResult": {
                            "toolUseId": use_id,
                            "status": "success",
                            "content": [{"text": _words(rng, rng.randint(300, 1_400))}],
                        }
                    }
                ],
            },
            {"role": "assistant", "content": [{"text": _words(rng, 150)}]},
        ]
        messages.extend(unit[: n - len(messages)])
        k += 1
    for number, message in enumerate(messages):
        message["tracking_id"] = f"00000000-0000-4000-8000-{number:012d}"
    if messages[-1]["role"] == "user":  # the next turn's question follows an assistant message
        messages.pop()
    return messages


class StubClient:
    """Stands for ``bedrock-runtime``: asks for the search tool after a question, answers after its result."""

    def __init__(self) -> None:
        self.calls = 0

    def converse(self, **request: Any) -> dict[str, Any]:
        self.calls += 1
        last = request["messages"][-1]["content"]
        if any("toolResult" in block for block in last):
            content: list[dict[str, Any]] = [{"text": "Here is what I found: " + "the answer " * 40}]
            stop = "end_turn"
        else:
            content = [
                {"text": "Let me search."},
                {"toolUse": {"toolUseId": f"live_{self.calls}", "name": "search", "input": {"query": "x"}}},
            ]
            stop = "tool_use"
        tokens = 60 * len(request["messages"])
        usage = {"inputTokens": 40, "outputTokens": 60, "totalTokens": tokens + 60, "cacheReadInputTokens": tokens - 40}
        return {
            "output": {"message": {"role": "assistant", "content": content}},
            "stopReason": stop,
            "usage": usage,
            "metrics": {"latencyMs": 1},
        }

    def count_tokens(self, **_: Any) -> dict[str, Any]:
        raise RuntimeError("CountTokens is not available here")  # the model counts with the SDK's heuristic


@tool
def search(query: str) -> str:
    """Search the notes for ``query``."""
    return f"Results for {query}: " + "a finding of some length " * 60


def _model() -> BedrockModel:
    model = BedrockModel(
        model_id="anthropic.claude-sonnet-4-20250514-v1:0",
        region_name="us-east-1",
        streaming=False,
        cache_config=CacheConfig(strategy="auto"),
        context_window_limit=WINDOW,
    )
    model.client = StubClient()
    return model


def _ours(callback: Any) -> str | None:
    module = getattr(callback, "__module__", None) or ""
    if module.startswith("strands_offload."):
        return "ours"
    if module.startswith("strands._context_manager"):
        return "reference"
    return None


class Member:
    """One member's agent, with its context manager's callbacks timed."""

    def __init__(self, name: str, n: int, directory: str) -> None:
        self.name = name
        self.seconds: list[float] = []
        self._spent = 0.0
        self.profile: cProfile.Profile | None = None
        options: dict[str, Any] = {}
        stash = {"storage": InMemoryStorage()}
        if name == "reference auto":
            manager: Any = RefContextManager.from_strategy("auto")
        elif name == "ours auto":
            manager = ContextManager(stash=stash)
        elif name == "ours cache-optimized":
            manager = ContextManager.from_strategy("cache-optimized", stash=stash)
        else:
            manager = ContextManager.from_strategy("cache-optimized", stash=stash, persist_reductions=True)
            options["session_manager"] = FileSessionManager(session_id=f"turn-cost-{n}", storage_dir=directory)
        self.agent = Agent(
            model=_model(),
            messages=history(n),
            tools=[search],
            context_manager=manager,
            callback_handler=None,
            **options,
        )
        owner = "reference" if name.startswith("reference") else "ours"
        for entries in self.agent.hooks._registered_callbacks.values():
            for entry in entries:
                if _ours(entry.callback) == owner:
                    entry.callback = self._timed(entry.callback)

    def _timed(self, callback: Callable[[Any], Any]) -> Callable[[Any], Any]:
        if inspect.iscoroutinefunction(callback):

            async def timed_async(event: Any) -> Any:
                profile = self.profile
                if profile is not None:
                    profile.enable()
                started = time.perf_counter()
                try:
                    return await callback(event)
                finally:
                    self._spent += time.perf_counter() - started
                    if profile is not None:
                        profile.disable()

            return timed_async

        def timed(event: Any) -> Any:
            profile = self.profile
            if profile is not None:
                profile.enable()
            started = time.perf_counter()
            try:
                return callback(event)
            finally:
                self._spent += time.perf_counter() - started
                if profile is not None:
                    profile.disable()

        return timed

    def turn(self, number: int, *, keep: bool) -> None:
        self._spent = 0.0
        before = len(self.agent.messages)
        self.agent(f"Question {number}: what did the search find about item {number}?")
        assert len(self.agent.messages) == before + 4, (self.name, before, len(self.agent.messages))
        if keep:
            self.seconds.append(self._spent)


def measure(n: int, rounds: int, members: tuple[str, ...] = MEMBERS) -> dict[str, float]:
    """Median seconds of each member's callbacks per turn, rounds alternating the members."""
    with tempfile.TemporaryDirectory() as directory:
        built = [Member(name, n, directory) for name in members]
        for number in range(WARMUP + rounds):
            order = built if number % 2 == 0 else built[::-1]
            for member in order:
                member.turn(number, keep=number >= WARMUP)
        return {member.name: statistics.median(member.seconds) for member in built}


def profile(n: int, name: str, rounds: int) -> None:
    with tempfile.TemporaryDirectory() as directory:
        member = Member(name, n, directory)
        for number in range(WARMUP):
            member.turn(number, keep=False)
        member.profile = cProfile.Profile()
        for number in range(rounds):
            member.turn(WARMUP + number, keep=True)
        print(f"{name} at {n:,}: median {statistics.median(member.seconds) * 1e3:.2f} ms per turn")
        pstats.Stats(member.profile).sort_stats("cumulative").print_stats(40)


def main(argv: list[str]) -> None:
    if argv[:1] in (["--help"], ["-h"]):
        print(__doc__)
        return
    if argv[:1] == ["--profile"]:
        profile(int(argv[1]), argv[2], int(argv[3]) if len(argv) > 3 else ROUNDS)
        return
    rounds = int(argv[0]) if argv else ROUNDS
    sizes = [int(a) for a in argv[1:]] or list(SIZES)
    print(f"| per turn (median of {rounds}) | " + " | ".join(f"N = {n:,}" for n in sizes) + " |")
    print("|---|" + "---:|" * len(sizes))
    found = {n: measure(n, rounds) for n in sizes}
    for name in MEMBERS:
        print(f"| {name} | " + " | ".join(f"{found[n][name] * 1e3:.2f} ms" for n in sizes) + " |", flush=True)


if __name__ == "__main__":
    main(sys.argv[1:])
