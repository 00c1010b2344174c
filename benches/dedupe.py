"""What ``Offload.dedupe`` saves: a 40-turn session re-reading the same 5 results, billed.

A real ``strands.Agent`` on strands' own ``BedrockModel`` whose client is stubbed
(:mod:`strands_offload.bench.stub_clients`): every request is billed by the prompt-cache simulator
(:class:`strands_offload.bench.prompt_cache.PromptCache`: uncached x1, cache write x1.25, cache read
x0.1, in token equivalents of a quarter of each block's JSON), with the model's prompt caching on
(``CacheConfig(strategy="auto")``) and off. Each of the 40 user turns reads one of 5 files (about
2,000 tokens each, seeded order), so 35 reads are copies of a result still in the conversation.

Policies: a context manager with no strategy, and the same with ``Offload.dedupe("tool_results")``
(its default keep: ``"first"`` with caching, ``"last"`` without). Figures: billed input, model
calls, duplicates rewritten, and a check that every rewritten copy reads back from the stash as
the original.

Deterministic (seeded, simulated clock): run once, ``python benches/dedupe.py``.
"""

from __future__ import annotations

import asyncio
import random
from dataclasses import dataclass
from typing import Any

from strands import Agent, tool
from strands.models.model import CacheConfig
from strands_offload.bench.prompt_cache import PromptCache, SimClock
from strands_offload.bench.stub_clients import Reply, bedrock_model
from strands_offload.context_manager import ContextManager, Offload
from strands_offload.context_manager.stash import refs_at_end

TURNS = 40
FILES = 5
FILE_TOKENS = 2_000
CALL_SECONDS = 8.0
THINK_SECONDS = 30.0
WINDOW = 200_000


def _file(index: int) -> str:
    rng = random.Random(1000 + index)
    words = "config handler request cache shard token window retry parser buffer stream module".split()
    lines = []
    while sum(len(line) + 1 for line in lines) < FILE_TOKENS * 4:
        lines.append(f"def f_{len(lines)}(x):  # " + " ".join(rng.choice(words) for _ in range(8)))
    return "\n".join(lines)


CONTENTS = {f"src/module_{i}.py": _file(i) for i in range(FILES)}


@tool
def read_file(path: str) -> str:
    """Read a source file."""
    return CONTENTS[path]


class _Responder:
    def __init__(self, clock: SimClock, order: list[str]) -> None:
        self.clock, self.order = clock, order
        self.queue: list[Reply] = []

    def plan(self, turn: int) -> None:
        call = {"toolUse": {"toolUseId": f"t{turn}", "name": "read_file", "input": {"path": self.order[turn]}}}
        self.queue = [Reply([call]), Reply([{"text": f"Read {self.order[turn]}; looks fine."}])]

    def __call__(self, request: dict[str, Any]) -> Reply:
        self.clock.advance(CALL_SECONDS)
        return self.queue.pop(0) if self.queue else Reply([{"text": "done"}])


@dataclass
class Figures:
    billed: float
    calls: int
    duplicates: int
    retrievable: bool


def run(*, caching: bool, dedupe: bool) -> Figures:
    rng = random.Random(42)
    order = [f"src/module_{i}.py" for i in range(FILES)] + [
        f"src/module_{rng.randrange(FILES)}.py" for _ in range(TURNS - FILES)
    ]
    clock = SimClock()
    cache = PromptCache(clock)
    responder = _Responder(clock, order)
    config: dict[str, Any] = {"cache_config": CacheConfig(strategy="auto")} if caching else {}
    model = bedrock_model(cache, responder, context_window_limit=WINDOW, **config)
    strategies = [Offload.dedupe("tool_results")] if dedupe else []
    manager = ContextManager(strategies=strategies)
    agent = Agent(model=model, tools=[read_file], context_manager=manager, callback_handler=None)
    for turn in range(TURNS):
        responder.plan(turn)
        agent(f"Turn {turn}: check {order[turn]} again")
        clock.advance(THINK_SECONDS)
    markers: list[tuple[str, list[str]]] = []
    for message in agent.messages:
        for block in message["content"]:
            result = block.get("toolResult")
            if result and result["content"][0].get("text", "").startswith("[Duplicate of the result of"):
                markers.append((result["toolUseId"], refs_at_end(result["content"][0]["text"])))
    path_of = {f"t{turn}": order[turn] for turn in range(TURNS)}
    stash = manager._stash
    assert stash is not None
    retrievable = all(
        asyncio.run(stash.retrieve(ref)) == {"text": CONTENTS[path_of[call]]} for call, refs in markers for ref in refs
    )
    return Figures(round(cache.billed()), len(cache.calls), len(markers), retrievable)


def main() -> None:
    print(
        "| prompt caching | policy | billed input (token equivalents) | model calls | copies rewritten | retrievable |"
    )
    print("|---|---|---:|---:|---:|---|")
    for caching in (True, False):
        base = run(caching=caching, dedupe=False)
        deduped = run(caching=caching, dedupe=True)
        label = "on" if caching else "off"
        print(f"| {label} | no strategy | {base.billed:,.0f} | {base.calls} | {base.duplicates} | - |")
        saving = 1 - deduped.billed / base.billed
        print(
            f"| {label} | Offload.dedupe | {deduped.billed:,.0f} ({saving:.0%} less) | {deduped.calls} | "
            f"{deduped.duplicates} | {'yes' if deduped.retrievable else 'NO'} |"
        )


if __name__ == "__main__":
    main()
