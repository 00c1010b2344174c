"""The latency a summarizing turn adds: the reference against ``Offload.summarize(..., ahead=True)``.

A real Agent makes three tool calls; each tool sleeps ``T`` seconds and returns about 2,500 tokens;
the summarizer (the same scripted model) sleeps ``S`` seconds per summary. In a 10,000-token
window with ``utilization=0.6, preserve_recent=2`` exactly one summary happens, before the model
call that follows the third batch. We time the whole invocation for three pipelines, alternating:
no summarize strategy (the baseline), the reference's summarize, and ours with ``ahead=True``. The
latency a pipeline adds is its time minus the baseline's. The reference summarizes inside the
model call's hook, after the tools, so it adds ``S``; ours starts the summary when the model asks
for the third batch, concurrently with the tools, so it should add at most ``max(0, S - T)`` (the
issue's goal allows 5% of ``S`` more).

Run: ``python benches/summary_ahead.py [--rounds 2] [--json OUT]`` (about a minute per round).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import time
from collections.abc import AsyncIterable
from typing import Any

from strands import Agent, tool
from strands.experimental.context_manager import ContextManager as RefContextManager
from strands.experimental.context_manager import Offload as RefOffload
from strands.types.content import Messages
from strands.types.streaming import StreamEvent
from strands_offload.context_manager import ContextManager, Offload
from strands_offload.demo.scripted_model import Reply, ScriptedModel, ToolCall

CALLS = 3
WINDOW = 10_000
CASES = ((2.0, 3.0), (2.0, 1.0))  # (S, T) seconds


def _is_summary_request(messages: Messages) -> bool:
    first = messages[0]["content"] if messages else []
    return len(messages) == 1 and bool(first) and first[0] == {"text": "<content>"}


class SlowSummaries(ScriptedModel):
    """Plays the tool calls, then "done"; a summarization request takes ``summary_seconds``."""

    def __init__(self, summary_seconds: float) -> None:
        queue = [Reply("", [ToolCall("fetch", {"part": p}, f"tu_{p}")]) for p in range(CALLS)]
        super().__init__(lambda messages: queue.pop(0) if queue else Reply("done"))
        self.update_config(context_window_limit=WINDOW)
        self.summary_seconds = summary_seconds
        self.summaries = 0

    async def stream(self, messages: Messages, *args: Any, **kwargs: Any) -> AsyncIterable[StreamEvent]:
        if _is_summary_request(messages):
            self.summaries += 1
            await asyncio.sleep(self.summary_seconds)
            async for event in self._summary_events():
                yield event
            return
        async for event in super().stream(messages, *args, **kwargs):
            yield event

    async def _summary_events(self) -> AsyncIterable[StreamEvent]:
        from strands_offload.demo.scripted_model import reply_events

        async for event in reply_events(Reply("the parts were read; all requests ok"), 0):
            yield event


def _fetch_tool(tool_seconds: float) -> Any:
    @tool
    async def fetch(part: int) -> str:
        """Fetch one part of the service log."""
        await asyncio.sleep(tool_seconds)
        return "\n".join(f"12:00:{i % 60:02d} INFO part {part} request {i} ok" for i in range(280))

    return fetch


def _manager(member: str) -> Any:
    if member == "baseline":
        return RefContextManager(strategies=[])
    if member == "reference":
        return RefContextManager(strategies=[RefOffload.summarize("*").when(utilization=0.6, preserve_recent=2)])
    return ContextManager(strategies=[Offload.summarize("*", ahead=True).when(utilization=0.6, preserve_recent=2)])


def run(member: str, summary_seconds: float, tool_seconds: float) -> tuple[float, int]:
    """Seconds of one invocation, and the summaries made."""
    model = SlowSummaries(summary_seconds)
    agent = Agent(
        model=model, tools=[_fetch_tool(tool_seconds)], context_manager=_manager(member), callback_handler=None
    )
    started = time.perf_counter()
    agent("read the three parts of the log")
    return time.perf_counter() - started, model.summaries


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--json", help="write the figures here")
    args = parser.parse_args(argv)
    report: list[dict[str, Any]] = []
    for summary_seconds, tool_seconds in CASES:
        times: dict[str, list[float]] = {"baseline": [], "reference": [], "ours": []}
        summaries: dict[str, int] = {}
        for _ in range(args.rounds):
            for member in times:
                seconds, made = run(member, summary_seconds, tool_seconds)
                times[member].append(seconds)
                summaries[member] = made
        base = statistics.median(times["baseline"])
        added = {m: statistics.median(times[m]) - base for m in ("reference", "ours")}
        goal = max(0.0, summary_seconds - tool_seconds) + 0.05 * summary_seconds
        print(
            f"S={summary_seconds:g} s, T={tool_seconds:g} s: baseline {base:.2f} s; added by the summarizing turn: "
            f"reference {added['reference']:.2f} s ({summaries['reference']} summary), "
            f"ours {added['ours']:.2f} s ({summaries['ours']} summary); goal <= {goal:.2f} s"
        )
        report.append(
            {
                "S": summary_seconds,
                "T": tool_seconds,
                "times": times,
                "added": added,
                "goal": goal,
                "summaries": summaries,
            }
        )
    if args.json:
        with open(args.json, "w") as out:
            json.dump(report, out, indent=2)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
