"""What each context policy costs in billed input, with a simulated provider prompt cache.

Three seeded sessions (a tool-heavy API session of 60 turns, a long chat of 200 turns, a coding
session reading files) run through real ``strands.Agent``s on strands' own ``BedrockModel`` with
``cache_config=CacheConfig(strategy="auto")``, whose client is stubbed: every request, the
summarizer's included, is billed by :class:`strands_offload.bench.prompt_cache.PromptCache`
(5-minute lifetime, 1,024-token minimum, 20-block look-back) on a simulated clock, and answered by
a scripted responder. Fixed: the window (32,000 tokens), the clock (8 s per model call, 1 s per
tool, 30 s between user turns), the billing token counter (a quarter of the characters of each
block's JSON), the seeds.

Policies: no management; the reference's "auto"; the same strategies (thresholds, previews) with
``cache_aligned`` and ``cache_aware`` on; our "cache-optimized" preset. Figures per policy: billed
input in token equivalents (uncached x1 + cache write x1.25 + cache read x0.1, summarizer calls
included), output tokens, prefix invalidations (agent requests that read less of the cache than
the previous request had cached), the largest context sent (the agent's own count), summarizer
calls, and whether any request went past the window.

Run by ``python benches/prompt_cache_sessions.py`` and by ``strands-offload bench`` (the report's
prompt-cache table).
"""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

from strands import Agent, tool
from strands.agent.conversation_manager import NullConversationManager
from strands.experimental.context_manager import ContextManager as RefContextManager
from strands.hooks.events import BeforeModelCallEvent
from strands.models.model import CacheConfig

from ..context_manager import ContextManager
from ..context_manager.presets import MANAGER_PRESETS
from .prompt_cache import PromptCache, SimClock
from .stub_clients import Reply, bedrock_model, summary_request

WINDOW = 32_000
CALL_SECONDS = 8.0
TOOL_SECONDS = 1.0
THINK_SECONDS = 30.0
SUMMARY_TOKENS = 400
SYSTEM_PROMPT = (
    "You are a careful engineering assistant. Use the tools to look things up before answering; "
    "cite identifiers exactly; keep answers short. " * 6
)
WORDS = (
    "request latency region cache index shard replica token window summary result status error "
    "retry budget quota tenant deploy build test module function handler parser buffer stream"
).split()


def _words(rng: random.Random, tokens: int) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(max(1, tokens * 4 // 6)))


@dataclass
class Turn:
    """One user turn: the prompt, the tool calls (one model answer each), the final answer's size."""

    prompt: str
    calls: list[tuple[str, dict[str, Any]]]
    answer_tokens: int


def api_session(seed: int = 1) -> list[Turn]:
    """60 turns, each 1-3 API calls returning 400-3,000 tokens of JSON."""
    rng = random.Random(seed)
    turns = []
    for number in range(60):
        calls = [
            ("api_get", {"path": f"/v1/items/{number}-{k}", "size": rng.randint(400, 3000), "seed": rng.random()})
            for k in range(rng.randint(1, 3))
        ]
        turns.append(Turn(f"Turn {number}: " + _words(rng, 60), calls, rng.randint(80, 200)))
    return turns


def chat_session(seed: int = 2) -> list[Turn]:
    """200 turns of conversation: prompts of 80-250 tokens, answers of 250-500."""
    rng = random.Random(seed)
    return [Turn(f"Turn {n}: " + _words(rng, rng.randint(80, 250)), [], rng.randint(250, 500)) for n in range(200)]


def coding_session(seed: int = 3) -> list[Turn]:
    """50 turns reading files of 600-4,000 tokens, sometimes editing one, then answering."""
    rng = random.Random(seed)
    turns = []
    for number in range(50):
        calls: list[tuple[str, dict[str, Any]]] = [
            ("read_file", {"path": f"src/module_{rng.randint(0, 40)}.py", "size": rng.randint(600, 4000)})
        ]
        if rng.random() < 0.5:
            calls.append(("edit_file", {"path": calls[0][1]["path"], "patch": _words(rng, rng.randint(40, 200))}))
        turns.append(Turn(f"Turn {number}: " + _words(rng, 50), calls, rng.randint(100, 300)))
    return turns


SHAPES: dict[str, Callable[[], list[Turn]]] = {"api": api_session, "chat": chat_session, "coding": coding_session}


def _payload(size: int, seed: float) -> dict[str, Any]:
    rng = random.Random(seed)
    return {"items": [{"id": f"item-{i}", "note": _words(rng, 14)} for i in range(max(1, size // 30))]}


@tool
def api_get(path: str, size: int, seed: float) -> dict[str, Any]:
    """Fetch a JSON document from the internal API."""
    return {"status": "success", "content": [{"json": _payload(size, seed)}]}


@tool
def read_file(path: str, size: int) -> str:
    """Read a source file."""
    rng = random.Random(path)
    return "\n".join(f"def f_{i}(x):  # {_words(rng, 8)}" for i in range(max(1, size // 14)))


@tool
def edit_file(path: str, patch: str) -> str:
    """Apply a patch to a source file."""
    return f"patched {path}"


class Responder:
    """Answers agent requests from the current turn's script, and summary requests with a summary."""

    def __init__(self, clock: SimClock) -> None:
        self.clock = clock
        self.queue: list[Reply] = []
        self.rng = random.Random(7)

    def plan(self, turn: Turn, number: int) -> None:
        """Script the answers of user turn ``number``: its tool calls, then its answer."""
        self.queue = [
            Reply([{"toolUse": {"toolUseId": f"t{number}-{k}", "name": name, "input": arguments}}])
            for k, (name, arguments) in enumerate(turn.calls)
        ]
        self.queue.append(Reply([{"text": _words(self.rng, turn.answer_tokens)}]))

    def __call__(self, request: dict[str, Any]) -> Reply:
        """Answer one request (a model call takes ``CALL_SECONDS`` of the simulated clock)."""
        self.clock.advance(CALL_SECONDS)
        if summary_request(request) is not None:
            return Reply([{"text": _words(self.rng, SUMMARY_TOKENS)}], label="summary")
        return self.queue.pop(0) if self.queue else Reply([{"text": "done"}])


def _policy(name: str, clock: SimClock) -> Any:
    if name == "none":
        return None
    if name == "auto":
        return RefContextManager.from_strategy("auto")
    if name == "auto+options":
        # "auto"'s strategies (thresholds, previews) with cache_aligned and cache_aware summaries.
        preset = replace(MANAGER_PRESETS["auto"], cache_aligned_summaries=True)
        return ContextManager(strategies=preset.strategies(), clock=clock)
    return ContextManager.from_strategy("cache-optimized", clock=clock)


POLICIES = ("none", "auto", "auto+options", "cache-optimized")


@dataclass
class Figures:
    """One policy on one session (see the module docstring)."""

    billed: float
    output_tokens: int
    invalidations: int
    largest_context: int
    summarizer_calls: int
    overflow: bool
    cache_invalidating_edits: int | None


def run(shape: str, policy: str, *, turns: int | None = None) -> Figures:
    """Play session ``shape`` (its first ``turns`` turns, when given) under ``policy``; the figures."""
    clock = SimClock()
    cache = PromptCache(clock)
    responder = Responder(clock)
    model = bedrock_model(cache, responder, cache_config=CacheConfig(strategy="auto"), context_window_limit=WINDOW)
    manager = _policy(policy, clock)
    management = {"context_manager": manager} if manager is not None else {}
    agent = Agent(
        model=model,
        system_prompt=SYSTEM_PROMPT,
        tools=[api_get, read_file, edit_file],
        callback_handler=None,
        conversation_manager=None if manager is not None else NullConversationManager(),
        **management,
    )
    largest = 0

    async def _size(event: BeforeModelCallEvent) -> None:
        nonlocal largest
        largest = max(largest, await event.agent.model.count_tokens(event.agent.messages))

    agent.hooks.add_callback(BeforeModelCallEvent, _size)
    for number, turn in enumerate(SHAPES[shape]()[:turns]):
        responder.plan(turn, number)
        agent(turn.prompt)
        clock.advance(THINK_SECONDS)
    invalidations, cached = 0, 0
    for call in cache.calls:
        if call.label != "agent":
            continue
        if call.cache_read < cached:
            invalidations += 1
        cached = call.cache_read + call.cache_write
    edits = manager.savings().cache_invalidating_edits if isinstance(manager, ContextManager) else None
    return Figures(
        billed=round(cache.billed()),
        output_tokens=sum(call.output_tokens for call in cache.calls),
        invalidations=invalidations,
        largest_context=largest,
        summarizer_calls=sum(1 for call in cache.calls if call.label == "summary"),
        overflow=largest > WINDOW,
        cache_invalidating_edits=edits,
    )


def table(report: dict[str, dict[str, Figures]]) -> str:
    """Markdown: one row per session and policy, with the saving against the reference's "auto"."""
    lines = [
        "| session | policy | billed input | vs auto | output | invalidated | largest context | summaries |",
        "|---|---|---:|---:|---:|---:|---:|---:|",
    ]
    for shape, rows in report.items():
        auto = rows["auto"].billed if "auto" in rows else None
        for policy, row in rows.items():
            versus = f"{row.billed / auto - 1:+.1%}" if auto and policy != "auto" else ""
            largest = f"{row.largest_context:,}" + (" (overflow)" if row.overflow else "")
            lines.append(
                f"| {shape} | {policy} | {row.billed:,.0f} | {versus} | {row.output_tokens:,} | "
                f"{row.invalidations} | {largest} | {row.summarizer_calls} |"
            )
    return "\n".join(lines)
