"""The SDK's own turn, as a new user runs it, with and without ``accelerate()`` (issue 39).

A real ``strands.Agent`` with ``NullConversationManager``, no context manager or plugin, a scripted
model that answers at once and reports usage, and a conversation of ``n`` plain text messages: one
turn (``agent("next?")``: one model call) is timed. What grows with the conversation in that turn
is the SDK's: the deep copies of the messages for the model middleware's context and for
``_normalize_messages``, and the tracer's message events (every message serialized into the agent,
cycle and model spans). Two tracing set-ups: ``none`` (no tracer provider: the spans record nothing)
and ``in_memory`` (an OpenTelemetry SDK provider with an in-memory span exporter).

Members: ``reference`` (strands-agents as installed) and ``native`` (under ``accelerate()``). Each
``native`` round follows one ``reference`` round (``paired.py``), so their ratio comes from the same
stretch of time. Goal: at 4,000 messages ``native`` at most 15% of ``reference`` with no provider,
35% with the in-memory exporter.

Run: ``pytest benches/sdk_turn.py --benchmark-group-by=group`` then ``python benches/ratios.py``;
or ``python benches/sdk_turn.py`` for the figures of the README (alternate rounds, each size and
set-up in 3 fresh processes per side, the median of the processes' medians).
"""

from __future__ import annotations

import json
import statistics
import subprocess
import sys
import time
from collections.abc import AsyncIterable
from pathlib import Path
from typing import Any

import pytest
import strands_offload
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from paired import Paired
from strands import Agent
from strands.agent.conversation_manager import NullConversationManager
from strands.models.model import Model
from strands.telemetry.tracer import get_tracer

ROUNDS = 7
SIZES = (1_000, 4_000, 16_000)
TRACING = ("none", "in_memory")


class AnsweringModel(Model):
    """Answers every request at once with a short text and reports usage (no counting of its own)."""

    def update_config(self, **model_config: Any) -> None: ...

    def get_config(self) -> Any:
        return {"model_id": "answering"}

    def structured_output(self, *args: Any, **kwargs: Any) -> Any:
        raise NotImplementedError

    async def stream(self, messages: Any, *args: Any, **kwargs: Any) -> AsyncIterable[Any]:
        yield {"messageStart": {"role": "assistant"}}
        yield {"contentBlockStart": {"start": {}}}
        yield {"contentBlockDelta": {"delta": {"text": "Noted."}}}
        yield {"contentBlockStop": {}}
        yield {"messageStop": {"stopReason": "end_turn"}}
        usage = {"inputTokens": 40 * len(messages), "outputTokens": 2, "totalTokens": 40 * len(messages) + 2}
        yield {"metadata": {"usage": usage, "metrics": {"latencyMs": 1}}}


def history(n: int) -> list[dict[str, Any]]:
    """``n`` plain text messages, user and assistant in turn, with the tracking ids a past turn gave them."""
    return [
        {
            "role": "user" if k % 2 == 0 else "assistant",
            "content": [{"text": f"message {k}: " + "lorem ipsum " * 8}],
            "tracking_id": f"00000000-0000-4000-8000-{k:012d}",
        }
        for k in range(n)
    ]


class Turn:
    """One turn of a fresh agent on the conversation, plain or accelerated, with the tracing set-up."""

    def __init__(self, n: int, tracing: str, accelerated: bool) -> None:
        self.messages = history(n)
        self.tracing = tracing
        self.accelerated = accelerated
        self.exporter = InMemorySpanExporter()
        provider = TracerProvider()
        provider.add_span_processor(SimpleSpanProcessor(self.exporter))
        self.recording = provider.get_tracer("strands.telemetry.tracer")

    def prepare(self) -> Agent:
        """Switch accelerate() and the tracer as this member needs; build the agent (untimed)."""
        if self.accelerated:
            strands_offload.accelerate()
        else:
            strands_offload.deaccelerate()
        tracer = get_tracer()
        if self.tracing == "in_memory":
            tracer.tracer = self.recording
            self.exporter.clear()
        else:
            tracer.tracer = tracer.tracer_provider.get_tracer(tracer.service_name)
        return Agent(
            model=AnsweringModel(),
            messages=[dict(m, content=list(m["content"])) for m in self.messages],
            conversation_manager=NullConversationManager(),
            callback_handler=None,
        )

    def __call__(self, agent: Agent) -> Any:
        return agent("next?")


def _check(agent: Agent, n: int) -> None:
    assert len(agent.messages) == n + 2 and agent.messages[-1]["content"][0]["text"] == "Noted."


@pytest.mark.parametrize("tracing", TRACING)
@pytest.mark.parametrize("n", SIZES)
@pytest.mark.parametrize("member", ["reference", "native"])
def test_sdk_turn(benchmark: Any, member: str, n: int, tracing: str) -> None:
    benchmark.group = f"sdk_turn_{n}_{tracing}"
    turn = Turn(n, tracing, member == "native")
    baseline = Turn(n, tracing, False) if member == "native" else None
    paired = Paired("reference", baseline.prepare, baseline) if baseline is not None else None
    agents: list[Agent] = []

    def fresh() -> tuple[tuple[Any, ...], dict[str, Any]]:
        if paired is not None:
            paired.round()
        agents.append(turn.prepare())
        return (agents[-1],), {}

    try:
        benchmark.pedantic(turn, setup=fresh, rounds=ROUNDS, warmup_rounds=1)
    finally:
        strands_offload.deaccelerate()
    if paired is not None:
        paired.record(benchmark, ROUNDS)
    _check(agents[-1], n)


def _one(n: int, tracing: str, rounds: int) -> dict[str, float]:
    """Medians of ``rounds`` alternate rounds (after one warm-up of each) in this process."""
    members = {"reference": Turn(n, tracing, False), "native": Turn(n, tracing, True)}
    seconds: dict[str, list[float]] = {"reference": [], "native": []}
    for round_number in range(rounds + 1):
        order = ["reference", "native"] if round_number % 2 == 0 else ["native", "reference"]
        for member in order:
            agent = members[member].prepare()
            started = time.perf_counter()
            members[member](agent)
            elapsed = time.perf_counter() - started
            _check(agent, n)
            if round_number:
                seconds[member].append(elapsed)
    strands_offload.deaccelerate()
    return {member: statistics.median(values) for member, values in seconds.items()}


def _processes(n: int, tracing: str, rounds: int, processes: int) -> tuple[float, float]:
    """The median over fresh processes of each member's median turn."""
    found: dict[str, list[float]] = {"reference": [], "native": []}
    for _ in range(processes):
        out = subprocess.run(
            [sys.executable, __file__, "--one", str(n), tracing, str(rounds)],
            check=True,
            capture_output=True,
            text=True,
            cwd=Path(__file__).parent,
        ).stdout
        medians = json.loads(out.strip().splitlines()[-1])
        for member in found:
            found[member].append(medians[member])
    return statistics.median(found["reference"]), statistics.median(found["native"])


def main(argv: list[str]) -> None:
    if argv[:1] == ["--one"]:
        print(json.dumps(_one(int(argv[1]), argv[2], int(argv[3]))))
        return
    rounds = int(argv[0]) if argv else ROUNDS
    sizes = [int(a) for a in argv[1:]] or list(SIZES)
    print("| messages | tracing | reference turn | accelerated turn | accelerated / reference |")
    print("|---:|---|---:|---:|---:|")
    for n in sizes:
        for tracing in TRACING:
            reference, native = _processes(n, tracing, rounds, 3)
            print(
                f"| {n:,} | {tracing} | {reference * 1e3:.1f} ms | {native * 1e3:.1f} ms | {native / reference:.0%} |",
                flush=True,
            )


if __name__ == "__main__":
    main(sys.argv[1:])
