"""The first turns after a session restore: the reference against ``persist_reductions=True``.

A chat of 100 turns (200 messages) runs through a real Agent with a ``FileSessionManager`` and
the "auto"-like summarize strategy, in a window small enough for three summaries. A second Agent
is then restored from the same session and asked two more questions; we report, per turn, its
model calls, summarizer calls, the messages of its request and its time. The reference's context
manager edits ``agent.messages`` where no session manager sees it, so its restored agent starts
from the whole unreduced log (which the first request cuts by emergency truncation, the summaries
gone, and a later one summarizes again); ours rebuilds the reduced conversation from the recorded
recipe and sends what the live agent would have sent.

The summarizer is a scripted model that sleeps ``--summary-seconds`` (default 0.5 s) per call,
standing in for a provider's latency.

Then the write volume of a long session (``--write-messages``, default 1,000 and 2,000 messages):
a truncate-only pipeline (tool results of 12 KB truncated on arrival to 200-token previews), one
prompt, tool call, result and answer per invocation, on a ``FileSessionManager`` that counts the
bytes of every file it writes (session, agent record, messages). The goal (issue 36): ours within
3x the reference's at 1,000 messages, and growing at most 2.5x when the session doubles.

Run: ``python benches/session_restore.py [--rounds 3] [--write-messages 1000 2000] [--json OUT]``.
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

from strands import Agent
from strands.experimental.context_manager import ContextManager as RefContextManager
from strands.experimental.context_manager import Offload as RefOffload
from strands.session.file_session_manager import FileSessionManager
from strands.types.content import Messages
from strands_offload.bench.session_writes import CountingFileSessionManager, read_part, read_turns
from strands_offload.context_manager import ContextManager, Offload
from strands_offload.demo.scripted_model import Reply, ScriptedModel

TURNS = 100
WINDOW = 30_000
WORDS = ("latency", "deploy", "service", "region", "request", "error", "budget", "cache", "queue", "shard")


class BenchModel(ScriptedModel):
    """Answers chat turns at once and summarization requests after a delay, counting both."""

    def __init__(self, summary_seconds: float) -> None:
        super().__init__(self._answer)
        self.update_config(context_window_limit=WINDOW)
        self.summary_seconds = summary_seconds
        self.summaries = 0
        self.turns = 0
        self.requests: list[Messages] = []  # the agent-loop requests (summarizer calls apart)

    def _answer(self, messages: Messages) -> Reply:
        first = messages[0]["content"] if messages else []
        if len(messages) == 1 and first and first[0] == {"text": "<content>"}:
            self.summaries += 1
            time.sleep(self.summary_seconds)
            return Reply(f"summary {self.summaries}: the user asked about services and their budgets")
        self.turns += 1
        self.requests.append(messages)
        return Reply(" ".join(WORDS[(self.turns + i) % len(WORDS)] for i in range(120)))


def _prompt(turn: int) -> str:
    return f"question {turn}: " + " ".join(WORDS[(turn * 7 + i) % len(WORDS)] for i in range(400))


def _manager(member: str) -> Any:
    if member == "reference":
        return RefContextManager(strategies=[RefOffload.summarize("*").when(utilization=0.85, preserve_recent=4)])
    return ContextManager(
        strategies=[Offload.summarize("*").when(utilization=0.85, preserve_recent=4)], persist_reductions=True
    )


def _agent(member: str, model: BenchModel, folder: str) -> Agent:
    session = FileSessionManager(session_id="restore-bench", storage_dir=folder)
    return Agent(model=model, context_manager=_manager(member), session_manager=session, callback_handler=None)


def run(member: str, summary_seconds: float) -> dict[str, Any]:
    """Build a session with ``member``'s manager, restore it, and measure the first turn."""
    with tempfile.TemporaryDirectory() as folder:
        live_model = BenchModel(0.0)
        live = _agent(member, live_model, folder)
        for turn in range(TURNS):
            live(_prompt(turn))
        live_next = len(live.messages) + 1  # what the live agent would send next: its messages and the prompt
        model = BenchModel(summary_seconds)
        started = time.perf_counter()
        restored = _agent(member, model, folder)
        restored_at = time.perf_counter()
        restored_messages = len(restored.messages)
        turns = []
        for turn in (TURNS, TURNS + 1):
            before = time.perf_counter()
            restored(_prompt(turn))
            turns.append(
                {
                    "seconds": time.perf_counter() - before,
                    "model_calls": model.turns - sum(t["model_calls"] for t in turns),
                    "summarizer_calls": model.summaries - sum(t["summarizer_calls"] for t in turns),
                    "request_messages": len(model.requests[-1]),
                }
            )
        return {
            "live_summaries": live_model.summaries,
            "live_next_request_messages": live_next,
            "restored_messages": restored_messages,
            "restore_seconds": restored_at - started,
            "turns": turns,
        }


def writes(member: str, messages: int) -> dict[str, Any]:
    """Bytes the session manager writes over a truncate-only session of ``messages`` messages."""
    if member == "reference":
        manager: Any = RefContextManager(
            strategies=[RefOffload.truncate("tool_results", {"preview_tokens": 200}).when(threshold=1000)]
        )
    else:
        manager = ContextManager(
            strategies=[Offload.truncate("tool_results", {"preview_tokens": 200}).when(threshold=1000)],
            persist_reductions=True,
        )
    with tempfile.TemporaryDirectory() as folder:
        session = CountingFileSessionManager("write-bench", folder)
        model = ScriptedModel(read_turns)
        model.update_config(context_window_limit=10_000_000)
        agent = Agent(
            model=model, tools=[read_part], context_manager=manager, session_manager=session, callback_handler=None
        )
        started = time.perf_counter()
        for turn in range(messages // 4):
            agent(f"read part {turn}")
        seconds = time.perf_counter() - started
        on_disk = sum(f.stat().st_size for f in Path(folder).rglob("*") if f.is_file())
        return {
            "messages": len(agent.messages),
            "written": dict(session.written),
            "total": session.total,
            "agent_writes": len(session.agent_writes),
            "on_disk": on_disk,
            "seconds": seconds,
        }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--summary-seconds", type=float, default=0.5)
    parser.add_argument("--json", help="write the figures here")
    parser.add_argument("--write-messages", type=int, nargs="*", default=[1000, 2000], help="session sizes")
    args = parser.parse_args(argv)
    figures: dict[str, Any] = {"reference": [], "ours": []}
    for _ in range(args.rounds):
        for member in ("reference", "ours"):  # alternating, so both see the same phases of the machine
            figures[member].append(run(member, args.summary_seconds))
    for member, rounds in figures.items():
        if not rounds:
            continue  # --rounds 0: the write volume only
        first = rounds[0]
        restore = statistics.median(r["restore_seconds"] for r in rounds)
        print(
            f"{member}: {first['live_summaries']} summaries while live, next request would hold "
            f"{first['live_next_request_messages']} messages; restored {first['restored_messages']} messages "
            f"in {restore * 1e3:.1f} ms"
        )
        for number in range(len(first["turns"])):
            seconds = statistics.median(r["turns"][number]["seconds"] for r in rounds)
            turn = first["turns"][number]
            print(
                f"  turn {number + 1} after restore: {turn['model_calls']} model call(s), "
                f"{turn['summarizer_calls']} summarizer call(s), "
                f"request of {turn['request_messages']} messages, {seconds * 1e3:.1f} ms (median of {len(rounds)})"
            )
    volumes: dict[str, list[dict[str, Any]]] = {"reference": [], "ours": []}
    for messages in args.write_messages:
        for member in ("reference", "ours"):
            volumes[member].append(writes(member, messages))
    if volumes["ours"]:
        print("session writes, truncate-only pipeline (MB: agent record / messages / total; agent-record writes):")
    for number, messages in enumerate(args.write_messages):
        ref, ours = volumes["reference"][number], volumes["ours"][number]
        growth = ""
        if number > 0:
            before = volumes["ours"][number - 1]
            growth = f", ours x{ours['total'] / before['total']:.2f} over {before['messages']} messages"
        print(
            f"  {messages} messages: reference {ref['written']['agent'] / 1e6:.3f} / "
            f"{ref['written']['message'] / 1e6:.3f} / {ref['total'] / 1e6:.3f} ({ref['agent_writes']}); "
            f"ours {ours['written']['agent'] / 1e6:.3f} / {ours['written']['message'] / 1e6:.3f} / "
            f"{ours['total'] / 1e6:.3f} ({ours['agent_writes']}); ours / reference {ours['total'] / ref['total']:.2f}"
            f"{growth}"
        )
    figures["writes"] = volumes
    if args.json:
        with open(args.json, "w") as out:
            json.dump(figures, out, indent=2)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
