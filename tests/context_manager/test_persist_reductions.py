"""``ContextManager(persist_reductions=True)``: reductions that survive a session restore.

Each case runs a real Agent with a message-log session manager (files in a temporary folder, or
S3 over HTTP to the moto server the tests start) until its pipeline has reduced the conversation,
then restores a second Agent from the same session and checks: its messages equal the live ones
byte for byte (key order included), every reference in them resolves to the original, the next
model call sends what the live agent sends, and the summarizer is not asked again.
"""

from __future__ import annotations

import asyncio
import logging
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from _cm_harness import REFERENCE, ContextModel, Reply, ToolCall, encode_for_compare, replies, without_usage
from _s3_support import session_agent, session_managers
from strands import Agent, tool
from strands_offload.context_manager import ContextManager, Offload, ReductionRestoreError
from strands_offload.context_manager._persist import RECIPE_KEY
from strands_offload.storage import LocalFileStorage

_REFS = re.compile(r"\[refs?: ([^\[\]]+)\]\Z")


@tool
def read_part(part: int) -> str:
    """Read one part of the service log."""
    return "\n".join(f"12:00:{i % 60:02d} INFO part {part} request {i} ok" for i in range(300))


# ----------------------------------------------------------------------------------------- sessions


@pytest.fixture(params=["file", "s3"])
def sessions(request: pytest.FixtureRequest, tmp_path: Path) -> Callable[[str], Any]:
    """Makes session managers of one kind for a session id (each call a fresh manager)."""
    return session_managers(request, tmp_path)


def _truncating() -> list[Any]:
    return [Offload.truncate("tool_results", {"preview_tokens": 200}).when(threshold=1000)]


def _summarizing() -> list[Any]:
    return [Offload.summarize("*").when(utilization=0.6, preserve_recent=2)]


def _both() -> list[Any]:
    return [*_truncating(), Offload.summarize("*").when(utilization=0.25, preserve_recent=2)]


def _dropping() -> list[Any]:
    return [Offload.drop("tool_results").when(threshold=1000, preserve_recent=1)]


CASES: dict[str, dict[str, Any]] = {
    "truncate": {"strategies": _truncating},
    "summarize": {"strategies": _summarizing},
    "truncate+summarize": {"strategies": _both},
    "drop": {"strategies": _dropping},
    "overflow recovery": {"strategies": lambda: [], "overflow_calls": (4,)},
    # The model summarizes its own history with the agentic mode's tool, mid-turn.
    "agentic": {
        "agentic": True,
        "script": lambda: replies(
            *[Reply("", [ToolCall("read_part", {"part": p}, f"tu_part_{p}")]) for p in range(4)],
            Reply("", [ToolCall("summarize_context", {"keep_recent": 2}, "tu_summarize")]),
        ),
    },
}


def _manager(case: dict[str, Any], durable: Path | None, *, persist: bool = True) -> ContextManager:
    stash: Any = {"storage": LocalFileStorage(str(durable))} if durable is not None else None
    if case.get("agentic"):
        return ContextManager.from_strategy("agentic", stash=stash, persist_reductions=persist)
    return ContextManager(strategies=case["strategies"](), stash=stash, persist_reductions=persist)


def _model(case: dict[str, Any], script: Any) -> ContextModel:
    return ContextModel(script, context_window_limit=8_000, overflow_calls=case.get("overflow_calls", ()))


def _reads(n: int, first: int = 0) -> Any:
    return replies(*[Reply("", [ToolCall("read_part", {"part": p}, f"tu_part_{p}")]) for p in range(first, first + n)])


def _agent(manager: Any, model: ContextModel, session: Any, **kwargs: Any) -> Agent:
    return session_agent(model, [read_part], manager, session, **kwargs)


def _references(messages: list[Any]) -> list[str]:
    found: list[str] = []
    for message in messages:
        for block in message["content"]:
            texts = [block.get("text")] + [i.get("text") for i in block.get("toolResult", {}).get("content", [])]
            for text in texts:
                match = _REFS.search(text or "")
                if match:
                    found.extend(match.group(1).split(", "))
    return found


def _stashed(agent: Agent, key: str) -> Any:
    stash = agent.context_manager.stash
    return asyncio.run(stash.retrieve(key))


# ----------------------------------------------------------------------------------------- round trips


@pytest.mark.parametrize("durable_stash", [False, True], ids=["memory-stash", "durable-stash"])
@pytest.mark.parametrize("name", list(CASES))
def test_a_restored_agent_starts_where_the_live_one_is(
    name: str, durable_stash: bool, sessions: Callable[[str], Any], tmp_path: Path
) -> None:
    case = CASES[name]
    durable = tmp_path / "stash" if durable_stash else None
    live_model = _model(case, case["script"]() if "script" in case else _reads(6))
    live = _agent(_manager(case, durable), live_model, sessions("s1"))
    live("read every part of the log")
    recipe = live.state.get(RECIPE_KEY)
    reduced = "derived" in recipe or any("message" in entry for entry in recipe["messages"])
    assert reduced, "nothing was reduced: the case tests nothing"
    summaries = len(live_model.summary_requests)

    restored_model = _model({}, replies())
    restored = _agent(_manager(case, durable), restored_model, sessions("s1"))

    assert encode_for_compare(restored.messages) == encode_for_compare(live.messages)
    references = _references(restored.messages)
    for key in references:
        assert _stashed(restored, key) is not None, key
        assert _stashed(restored, key) == _stashed(live, key), key

    # The next call sends what the live agent's next call sends; nothing is summarized again.
    live_model_calls = len(live_model.calls)
    live("and what now?")
    restored("and what now?")
    assert without_usage(restored_model.calls[-1]) == without_usage(live_model.calls[-1])
    assert len(live_model.calls) == live_model_calls + 1
    assert len(restored_model.summary_requests) == len(live_model.summary_requests) - summaries

    # What the restored agent reduced in turn survives the next restore.
    restored_model.calls.clear()
    restored("read two more parts")
    again = _agent(_manager(case, durable), _model({}, replies()), sessions("s1"))
    assert encode_for_compare(again.messages) == encode_for_compare(restored.messages)


def test_the_recipe_holds_no_copy_of_the_conversation(sessions: Callable[[str], Any]) -> None:
    live = _agent(_manager(CASES["truncate+summarize"], None), _model({}, _reads(6)), sessions("s2"))
    live("read every part of the log")
    recipe = live.state.get(RECIPE_KEY)
    conversation = len(encode_for_compare(live.messages))
    log = sum(len(read_part(part=p)) for p in range(6))
    size = len(encode_for_compare(recipe))
    assert size < log / 5, (size, log)
    assert size <= conversation
    assert {next(iter(entry)) for entry in recipe["messages"]} <= {"keep", "message"}


def test_pins_survive_the_restore(sessions: Callable[[str], Any]) -> None:
    case = CASES["summarize"]
    live = _agent(_manager(case, None), _model(case, _reads(6)), sessions("s3"))
    live("read every part of the log")
    # A pin set after the message was stored is not in the log: only the recipe carries it.
    live.messages[1].setdefault("metadata", {})["custom"] = {"pinned": True}
    live("and what now?")
    restored = _agent(_manager(case, None), _model({}, replies()), sessions("s3"))
    assert encode_for_compare(restored.messages) == encode_for_compare(live.messages)
    assert restored.messages[1]["metadata"]["custom"]["pinned"] is True


# ----------------------------------------------------------------------------------------- compatibility


def _reduced_session(sessions: Callable[[str], Any], session_id: str) -> Agent:
    live = _agent(_manager(CASES["truncate"], None), _model({}, _reads(6)), sessions(session_id))
    live("read every part of the log")
    return live


def test_without_the_option_the_whole_log_comes_back_with_one_warning(
    sessions: Callable[[str], Any], caplog: pytest.LogCaptureFixture
) -> None:
    live = _reduced_session(sessions, "s4")
    logged = len(live.messages)
    with caplog.at_level(logging.WARNING, logger="strands_offload"):
        plain = _agent(ContextManager(strategies=[]), _model({}, replies()), sessions("s4"))
    warnings = [r for r in caplog.records if "persist_reductions off" in r.getMessage()]
    assert len(warnings) == 1
    assert len(plain.messages) == logged
    assert "[Stashed]" not in encode_for_compare(plain.messages)  # the originals, as the log holds them


def test_the_reference_restores_the_whole_log(sessions: Callable[[str], Any]) -> None:
    live = _reduced_session(sessions, "s5")
    reference = _agent(REFERENCE.ContextManager(strategies=[]), _model({}, replies()), sessions("s5"))
    assert len(reference.messages) == len(live.messages)
    assert "[Stashed]" not in encode_for_compare(reference.messages)
    reference("and what now?")  # and goes on with it


def test_a_log_that_is_not_the_recorded_one_is_refused(sessions: Callable[[str], Any]) -> None:
    _reduced_session(sessions, "s6")
    session = sessions("s6")
    # Another session's recipe under this one's state: the log's ids do not match it.
    other = _reduced_session(sessions, "s7")
    session_agent = session.session_repository.read_agent("s6", "main")
    session_agent.state[RECIPE_KEY] = other.state.get(RECIPE_KEY)
    session.session_repository.update_agent("s6", session_agent)
    with pytest.raises(ReductionRestoreError, match="is not the one recorded"):
        _agent(_manager(CASES["truncate"], None), _model({}, replies()), sessions("s6"))


def test_a_reference_nothing_holds_is_refused(sessions: Callable[[str], Any], tmp_path: Path) -> None:
    # A durable stash that lost an entry, for a block whose original the log no longer holds
    # (a preview written by hand into the recipe).
    live = _reduced_session(sessions, "s8")
    recipe = live.state.get(RECIPE_KEY)
    preview = {"text": "[Truncated: 1 block, ~900 tokens]\n\nhead\n\n[Stashed] [ref: gone_0]"}
    recipe["messages"].append({"message": {"role": "user", "content": [{"new": preview}]}})
    session = sessions("s8")
    session_agent = session.session_repository.read_agent("s8", "main")
    session_agent.state[RECIPE_KEY] = recipe
    session.session_repository.update_agent("s8", session_agent)
    with pytest.raises(ReductionRestoreError, match="gone_0"):
        _agent(_manager(CASES["truncate"], None), _model({}, replies()), sessions("s8"))


def test_without_a_message_log_nothing_is_recorded() -> None:
    agent = _agent(_manager(CASES["truncate"], None), _model({}, _reads(3)), None)
    agent("read")
    assert agent.state.get(RECIPE_KEY) is None


def test_from_strategy_takes_our_options_for_presets_and_configs_only() -> None:
    assert isinstance(ContextManager.from_strategy("auto", persist_reductions=True), ContextManager)
    assert isinstance(ContextManager.from_strategy({"strategies": []}, persist_reductions=True), ContextManager)
    with pytest.raises(TypeError, match="options apply to a preset name or a config dict"):
        ContextManager.from_strategy(ContextManager(), persist_reductions=True)
    with pytest.raises(TypeError):
        ContextManager.from_strategy("auto", no_such_option=True)


def test_the_state_changes_only_when_the_conversation_is_reduced(sessions: Callable[[str], Any]) -> None:
    # Every changed agent state is another write of the agent record (an S3 PUT per message, say):
    # new messages alone do not change the recipe, since a restore appends them as they are.
    quiet = _agent(_manager(CASES["truncate"], None), _model({}, replies()), sessions("s9"))
    quiet("hello")
    quiet("and again")
    assert quiet.state.get(RECIPE_KEY) is None
    live = _reduced_session(sessions, "s10")
    recorded = live.state.get(RECIPE_KEY)
    live("and what now?")
    live("one more question")
    assert live.state.get(RECIPE_KEY) == recorded
    restored = _agent(_manager(CASES["truncate"], None), _model({}, replies()), sessions("s10"))
    assert encode_for_compare(restored.messages) == encode_for_compare(live.messages)
    restored_quiet = _agent(_manager(CASES["truncate"], None), _model({}, replies()), sessions("s9"))
    assert encode_for_compare(restored_quiet.messages) == encode_for_compare(quiet.messages)


def test_a_recipe_the_state_cannot_keep_leaves_the_last_one(
    sessions: Callable[[str], Any], caplog: pytest.LogCaptureFixture
) -> None:
    live = _reduced_session(sessions, "s11")
    recorded = live.state.get(RECIPE_KEY)
    # A message put in by hand, past the session manager: the recipe would have to hold its bytes.
    live.messages.append({"role": "user", "content": [{"image": {"format": "png", "source": {"bytes": b"\x89PNG"}}}]})
    live.messages.append({"role": "assistant", "content": [{"text": "a picture"}]})
    with caplog.at_level(logging.WARNING, logger="strands_offload"):
        live("what was in it?")
    assert any("cannot keep (not JSON)" in r.getMessage() for r in caplog.records)
    assert live.state.get(RECIPE_KEY) == recorded
