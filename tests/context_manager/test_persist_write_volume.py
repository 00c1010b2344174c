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

import json
from pathlib import Path
from typing import Any

from _cm_harness import REFERENCE, ContextModel, Reply, ToolCall, encode_for_compare
from strands import Agent, tool
from strands.session.file_session_manager import FileSessionManager
from strands.types.content import Messages
from strands_offload.context_manager import ContextManager, Offload
from strands_offload.context_manager._persist import RECIPE_KEY, decode_places


class CountingSessionManager(FileSessionManager):
    """A ``FileSessionManager`` that counts the bytes of every file its repository writes."""

    def __init__(self, session_id: str, storage_dir: str) -> None:
        self.written = {"session": 0, "agent": 0, "message": 0}
        self.agent_writes: list[int] = []
        super().__init__(session_id=session_id, storage_dir=storage_dir)

    def _count(self, kind: str, record: Any) -> None:
        size = len(json.dumps(record.to_dict(), indent=2, ensure_ascii=False).encode())
        self.written[kind] += size
        if kind == "agent":
            self.agent_writes.append(size)

    def create_session(self, session: Any, **kwargs: Any) -> Any:
        created = super().create_session(session, **kwargs)
        self._count("session", session)
        return created

    def create_agent(self, session_id: str, session_agent: Any, **kwargs: Any) -> None:
        super().create_agent(session_id, session_agent, **kwargs)
        self._count("agent", session_agent)

    def update_agent(self, session_id: str, session_agent: Any, **kwargs: Any) -> None:
        super().update_agent(session_id, session_agent, **kwargs)
        self._count("agent", session_agent)

    def create_message(self, session_id: str, agent_id: str, session_message: Any, **kwargs: Any) -> None:
        super().create_message(session_id, agent_id, session_message, **kwargs)
        self._count("message", session_message)

    def update_message(self, session_id: str, agent_id: str, session_message: Any, **kwargs: Any) -> None:
        super().update_message(session_id, agent_id, session_message, **kwargs)
        self._count("message", session_message)

    @property
    def total(self) -> int:
        return sum(self.written.values())


@tool
def read_part(part: int) -> str:
    """Read one part of the service log."""
    return "\n".join(f"12:00:{i % 60:02d} INFO part {part} request {i} ok" for i in range(300))


def _script(messages: Messages) -> Reply:
    if any("toolResult" in block for block in messages[-1]["content"]):
        return Reply("noted")
    part = sum(1 for message in messages if message["role"] == "user")
    return Reply("", [ToolCall("read_part", {"part": part}, f"tu_{part}")])


def _manager(member: str) -> Any:
    if member == "reference":
        return REFERENCE.ContextManager(
            strategies=[REFERENCE.Offload.truncate("tool_results", {"preview_tokens": 200}).when(threshold=1000)]
        )
    return ContextManager(
        strategies=[Offload.truncate("tool_results", {"preview_tokens": 200}).when(threshold=1000)],
        persist_reductions=True,
    )


def _session(member: str, messages: int, folder: Path) -> tuple[CountingSessionManager, Agent]:
    session = CountingSessionManager("writes", str(folder))
    agent = Agent(
        model=ContextModel(_script, context_window_limit=10_000_000),
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
