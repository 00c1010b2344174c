"""The run's journal is settled once, after the strategies (issue 38): into the savings ledger and the reduction log.

Our strategies only record their edits in the journal of the run (``_run.Edit``); the manager puts
them into the ledger (counts, never a block) and hands the replacements to the reduction log, which
records a preview as derived from the journal's strategy, place and references, without looking
through the conversation for it.
"""

from __future__ import annotations

import gc
import weakref
from pathlib import Path
from typing import Any

import pytest
from _cm_harness import ContextModel, Reply, ToolCall, encode_for_compare, replies
from strands import Agent, tool
from strands.session.file_session_manager import FileSessionManager
from strands_offload._heuristic import block_tokens
from strands_offload._native import token_counter
from strands_offload.context_manager import ContextManager, Offload, _persist
from strands_offload.context_manager._edits import now_ns
from strands_offload.context_manager._persist import RECIPE_KEY, ReductionLog, derive, truncate_rule
from strands_offload.context_manager._run import Edit, run_of
from strands_offload.context_manager.types import ContextState

# ---------------------------------------------------------------------------- the ledger


class _Block(dict[str, Any]):
    """A block a weak reference can follow (a plain dict cannot)."""


class _JournalOnly:
    """A strategy that shortens the first block once and says so in the run's journal only.

    It calls no recorder: whatever the ledger shows of its edit came from the journal. It also
    records an edit it held back, which is not an edit.
    """

    name = "offload:truncate"

    def __init__(self) -> None:
        self.done = False

    async def apply(self, context: ContextState) -> bool:
        run = run_of(context)
        if self.done or run is None:
            return False
        self.done = True
        message = context.messages[0]
        new = {"text": "shortened"}
        message["content"][0] = new
        run.record(Edit("held", self))
        run.record(Edit("replace", self, message, 0, tokens_before=123, block=new, started_ns=now_ns()))
        return True


def test_the_ledger_counts_the_journal_once_and_holds_no_block() -> None:
    original = _Block(text="x" * 4_000)
    strategy = _JournalOnly()
    manager = ContextManager(strategies=[strategy])
    agent = Agent(
        model=ContextModel(replies(), context_window_limit=1_000_000),
        messages=[{"role": "user", "content": [original]}, {"role": "assistant", "content": [{"text": "ok"}]}],
        context_manager=manager,
        callback_handler=None,
    )
    assert agent.messages[0]["content"][0] is original  # the object followed is the conversation's
    gone = weakref.ref(original)
    del original
    agent("go on")
    assert strategy.done and agent.messages[0]["content"][0] == {"text": "shortened"}
    gc.collect()
    # With no provider the ledger's records wait, unsettled, until read: none of them holds the original.
    assert gone() is None
    savings = manager.savings(agent)
    added = block_tokens({"text": "shortened"}, token_counter("heuristic"))
    assert (savings.edits, savings.tokens_removed, savings.tokens_added) == (1, 123, added)
    agent("and again")  # a later call settles its own (empty) journal: the edit is not counted twice
    assert manager.savings(agent).edits == 1


# ---------------------------------------------------------------------------- the reduction log


LINES = [f"12:00:{i % 60:02d} INFO request {i} served from cache shard {i % 7}" for i in range(300)]


@tool
def read_log(part: int) -> str:
    """Read one part of the service log."""
    return f"part {part}\n" + "\n".join(LINES)


@tool
def read_note(part: int) -> str:
    """Read one note."""
    return f"note {part}: " + "the shard served the request from its cache " * 40


def _agent(folder: Path) -> Agent:
    manager = ContextManager(
        strategies=[
            Offload.truncate(["tool::read_log"], {"preview_tokens": 100}).when(threshold=1_000),
            Offload.summarize(["tool::read_note"]).when(threshold=200),
        ],
        persist_reductions=True,
    )
    calls = [("read_log", 0), ("read_note", 1), ("read_log", 2), ("read_note", 3), ("read_note", 4)]
    return Agent(
        model=ContextModel(replies(*[Reply("", [ToolCall(name, {"part": p}, f"tu_{p}")]) for name, p in calls])),
        tools=[read_log, read_note],
        context_manager=manager,
        session_manager=FileSessionManager(session_id="journal", storage_dir=str(folder)),
        agent_id="main",
        callback_handler=None,
    )


def test_the_reduction_log_takes_the_derived_blocks_from_the_journal(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    made: list[str] = []
    real = _persist.derive

    def counted(rule: Any, *args: Any, **kwargs: Any) -> Any:
        made.append(rule["kind"])
        return real(rule, *args, **kwargs)

    monkeypatch.setattr(_persist, "derive", counted)
    live = _agent(tmp_path)
    live("read the log and the notes")
    texts = [
        block["toolResult"]["content"][0]["text"]
        for message in live.messages
        for block in message["content"]
        if "toolResult" in block
    ]
    assert sum(text.startswith("[Truncated") for text in texts) == 2
    assert sum(text.startswith("[Summarized") for text in texts) == 3
    # One preview made per truncation the journal recorded, to check that a restore makes it again;
    # none to guess what made the summaries (the journal says: a strategy without a rule).
    assert made == ["truncate", "truncate"]
    recipe = live.state.get(RECIPE_KEY)
    assert len(_persist.decode_places(recipe["derived"]["at"][0])) == 2
    monkeypatch.setattr(_persist, "derive", real)
    restored = _agent(tmp_path)
    assert encode_for_compare(restored.messages) == encode_for_compare(live.messages)


def test_the_log_records_a_preview_with_the_references_of_the_journal() -> None:
    rule = truncate_rule({"preview_tokens": 20}, None, True)
    result = {"toolUseId": "t1", "status": "success", "content": [{"text": "line\n" * 2_000}]}
    message = {"role": "user", "content": [{"toolResult": result}], "tracking_id": "m1"}
    log = ReductionLog([rule])
    log.arrived(message)
    # A preview naming other references than a restore gives the log block is not derived: a
    # restore could not make it again (it is recorded as a new block instead).
    other = derive(rule, message["content"][0], "m1", 0, ["elsewhere_0"])
    message["content"][0] = other
    assert not log.replaced(message, 0, 0, ["elsewhere_0"])
    recipe = log.recipe([message], 0, 1)  # nothing changed outside the journal: no look through the messages
    assert "derived" not in recipe and "new" in recipe["messages"][0]["message"]["content"][0]
    # The journal's references are the restore's: derived, from the journal alone.
    fresh = {"role": "user", "content": [{"toolResult": dict(result, toolUseId="t2")}], "tracking_id": "m2"}
    log.arrived(fresh)
    preview = derive(rule, fresh["content"][0], "m2", 0, ["t2_0"])
    fresh["content"][0] = preview
    assert log.replaced(fresh, 0, 0, ("t2_0",))
    recipe = log.recipe([message, fresh], 1, 2)
    assert _persist.decode_places(recipe["derived"]["at"][0]) == [(1, 0)]
    assert recipe["messages"][-1] == {"keep": [1, 1]}
