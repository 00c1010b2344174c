"""The session write-volume workload: a byte-counting ``FileSessionManager`` and a tool-reading script.

Shared by the session write-volume bench (``benches/session_restore.py``) and its test
(``tests/context_manager/test_persist_write_volume.py``). Each record is counted as the file
session manager writes it: its JSON with ``indent=2``. Each prompt gets one ``read_part`` call
(a 12 KB result) and then an answer.
"""

from __future__ import annotations

import json
from typing import Any

from strands import tool
from strands.session.file_session_manager import FileSessionManager
from strands.types.content import Messages
from strands.types.session import Session, SessionAgent, SessionMessage

from strands_offload.demo.scripted_model import Reply, ToolCall

__all__ = ["CountingFileSessionManager", "read_part", "read_turns"]


@tool
def read_part(part: int) -> str:
    """Read one part of the service log."""
    return "\n".join(f"12:00:{i % 60:02d} INFO part {part} request {i} ok" for i in range(300))


def read_turns(messages: Messages) -> Reply:
    """A script for ``ScriptedModel``: one ``read_part`` call per prompt, then "noted"."""
    if any("toolResult" in block for block in messages[-1]["content"]):
        return Reply("noted")
    part = sum(1 for message in messages if message["role"] == "user")
    return Reply("", [ToolCall("read_part", {"part": part}, f"tu_{part}")])


class CountingFileSessionManager(FileSessionManager):
    """Bytes written: ``written`` per kind (session, agent, message), ``agent_writes`` each agent record's size."""

    def __init__(self, session_id: str, storage_dir: str) -> None:
        self.written = {"session": 0, "agent": 0, "message": 0}
        self.agent_writes: list[int] = []
        super().__init__(session_id=session_id, storage_dir=storage_dir)

    @property
    def total(self) -> int:
        """Every byte written, all kinds together."""
        return sum(self.written.values())

    def _count(self, kind: str, record: Session | SessionAgent | SessionMessage) -> None:
        size = len(json.dumps(record.to_dict(), indent=2, ensure_ascii=False).encode())
        self.written[kind] += size
        if kind == "agent":
            self.agent_writes.append(size)

    def create_session(self, session: Session, **kwargs: Any) -> Session:
        """Create the session, counting its record."""
        created = super().create_session(session, **kwargs)
        self._count("session", session)
        return created

    def create_agent(self, session_id: str, session_agent: SessionAgent, **kwargs: Any) -> None:
        """Create the agent record, counting it."""
        super().create_agent(session_id, session_agent, **kwargs)
        self._count("agent", session_agent)

    def update_agent(self, session_id: str, session_agent: SessionAgent, **kwargs: Any) -> None:
        """Rewrite the agent record, counting it."""
        super().update_agent(session_id, session_agent, **kwargs)
        self._count("agent", session_agent)

    def create_message(self, session_id: str, agent_id: str, session_message: SessionMessage, **kwargs: Any) -> None:
        """Write a new message, counting it."""
        super().create_message(session_id, agent_id, session_message, **kwargs)
        self._count("message", session_message)

    def update_message(self, session_id: str, agent_id: str, session_message: SessionMessage, **kwargs: Any) -> None:
        """Rewrite a message, counting it."""
        super().update_message(session_id, agent_id, session_message, **kwargs)
        self._count("message", session_message)
