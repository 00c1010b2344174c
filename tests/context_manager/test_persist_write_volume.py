"""``persist_reductions`` writes stay linear in the session (issue 36, item 7).

A truncate-only pipeline on ``FileSessionManager``: each invocation is a prompt, a tool call, a
12 KB tool result truncated on arrival and an answer. Every byte the session manager writes
(session, agent record, messages) is counted through a subclass of ``FileSessionManager`` that
adds the size of each file it writes (the JSON it writes, as it writes it: ``indent=2``). The
reference's context manager edits nothing the session manager sees, so its writes are the log and
a small agent record: ours must stay within 3x of that, grow at most 2.5x when the session doubles,
write the agent record at most once per invocation, and keep that record small however many
results were truncated (previews are made again at restore, not stored).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from _cm_harness import REFERENCE, ContextModel, encode_for_compare
from strands import Agent
from strands.session.file_session_manager import FileSessionManager
from strands_offload.bench.session_writes import CountingFileSessionManager, read_part, read_turns
from strands_offload.context_manager import ContextManager, Offload
from strands_offload.context_manager._persist import RECIPE_KEY, decode_places


def _manager(member: str) -> Any:
    if member == "reference":
        return REFERENCE.ContextManager(
            strategies=[REFERENCE.Offload.truncate("tool_results", {"preview_tokens": 200}).when(threshold=1000)]
        )
    return ContextManager(
        strategies=[Offload.truncate("tool_results", {"preview_tokens": 200}).when(threshold=1000)],
        persist_reductions=True,
    )


def _session(member: str, messages: int, folder: Path) -> tuple[CountingFileSessionManager, Agent]:
    session = CountingFileSessionManager("writes", str(folder))
    agent = Agent(
        model=ContextModel(read_turns, context_window_limit=10_000_000),
        tools=[read_part],
        context_manager=_manager(member),
        session_manager=session,
        agent_id="main",
        callback_handler=None,
    )
    for turn in range(messages // 4):
        agent(f"read part {turn}")
    assert len(agent.messages) == messages
    return session, agent


def test_session_writes_stay_linear(tmp_path: Path) -> None:
    reference, _ = _session("reference", 320, tmp_path / "reference")
    half, _ = _session("ours", 160, tmp_path / "half")
    ours, live = _session("ours", 320, tmp_path / "ours")

    assert ours.total <= 3 * reference.total, (ours.written, reference.written)
    assert ours.total <= 2.5 * half.total, (ours.written, half.written)
    # The recipe adds at most one agent record per invocation (80 of them) to the SDK's own (the
    # reference's: the SDK writes one per invocation itself, when the model state changes).
    assert len(ours.agent_writes) <= len(reference.agent_writes) + 80
    # The record holds no preview: a few bytes per truncated result, not a kilobyte.
    assert max(ours.agent_writes) < 4_000, max(ours.agent_writes)
    recipe = live.state.get(RECIPE_KEY)
    assert "Truncated" not in encode_for_compare(recipe)
    assert len(decode_places(recipe["derived"]["at"][0])) == 80

    # And the session restores to exactly the live conversation, previews made again.
    restored = Agent(
        model=ContextModel(),
        tools=[read_part],
        context_manager=_manager("ours"),
        session_manager=FileSessionManager(session_id="writes", storage_dir=str(tmp_path / "ours")),
        agent_id="main",
        callback_handler=None,
    )
    assert encode_for_compare(restored.messages) == encode_for_compare(live.messages)
