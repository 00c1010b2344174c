"""Two agents served at once (issue 38): the model that interleaves their calls, a one-tool-per-turn
script, the concurrent sessions and what each manager is left with. Used by ``test_run_state.py``
and ``test_shared_strategies.py``."""

from __future__ import annotations

import asyncio
import dataclasses
import re
from collections.abc import AsyncIterable, Callable, Sequence
from typing import Any, TypeVar

from _cm_harness import ContextModel, Reply, ToolCall, encode_for_compare
from strands import Agent
from strands.types.content import Messages
from strands.types.streaming import StreamEvent

T = TypeVar("T")


class YieldingModel(ContextModel):
    """A ContextModel that gives the event loop a turn at every event: two agents' calls interleave."""

    async def stream(self, messages: Messages, *args: Any, **kwargs: Any) -> AsyncIterable[StreamEvent]:
        async for event in super().stream(messages, *args, **kwargs):
            await asyncio.sleep(0)
            yield event


def tool_each_turn(
    agent: int, name: str, tool_input: Callable[[int], dict[str, Any]], answer: str
) -> Callable[[Messages], Reply]:
    """Agent ``agent``'s script: each user turn calls the tool ``name`` once (input ``tool_input(turn)``,
    id ``a{agent}-t{turn}``), and the tool's result is answered with ``answer``."""

    def script(messages: Messages) -> Reply:
        if any("toolResult" in block for block in messages[-1]["content"]):
            return Reply(answer)
        turn = sum(1 for m in messages if m["role"] == "user" and any("text" in b for b in m["content"]))
        return Reply("", [ToolCall(name, tool_input(turn), f"a{agent}-t{turn}")])

    return script


def run_together(agents: Sequence[Agent], prompts: Callable[[int], Sequence[str]]) -> None:
    """Invoke every agent ``k`` with ``prompts(k)`` in order, the agents' sessions concurrently."""

    async def session(k: int) -> None:
        for prompt in prompts(k):
            await agents[k].invoke_async(prompt)

    async def run() -> None:
        await asyncio.gather(*(session(k) for k in range(len(agents))))

    asyncio.run(run())


def held_refs(manager: Any, messages: Messages, agent: int) -> set[str]:
    """The ``[ref: ...]`` references in ``messages``, after checking that ``manager``'s stash holds each."""
    stash = manager.stash
    assert stash is not None
    refs = set(re.findall(r"\[ref: ([^\]]+)\]", encode_for_compare(messages)))
    resolved = {ref for ref in refs if asyncio.run(stash.retrieve_raw(ref)) is not None}
    assert resolved == refs, f"agent {agent}: references its manager's stash does not hold: {refs - resolved}"
    return refs


def counted_savings(manager: Any) -> Any:
    """``manager``'s savings with the native time zeroed: the counts, which two runs must share."""
    return dataclasses.replace(manager.savings(), native_seconds=0.0)


def shared_as_separate(sessions: Callable[[bool], list[T]]) -> list[T]:
    """Run ``sessions`` once with one set of strategy objects shared by both managers and once with a
    set for each; return the shared run's outcomes per agent after checking each equals the separate
    run's (each manager saw and counted its own agent's work, none of the other's)."""
    separate = sessions(False)
    shared = sessions(True)
    assert len(shared) == len(separate)
    for k, (got, want) in enumerate(zip(shared, separate, strict=True)):
        assert got == want, f"agent {k}: sharing the strategy objects changed its outcome"
    return shared


def outcomes(
    managers: Sequence[Any], agents: Sequence[Agent], text: Callable[[Messages], str]
) -> list[tuple[str, Any, set[str]]]:
    """Per agent after its session: its messages as ``text`` writes them, its manager's
    :func:`counted_savings` and the :func:`held_refs` in its messages."""
    found = []
    for k, (manager, agent) in enumerate(zip(managers, agents, strict=True)):
        refs = held_refs(manager, agent.messages, k)
        found.append((text(agent.messages), counted_savings(manager), refs))
    return found
