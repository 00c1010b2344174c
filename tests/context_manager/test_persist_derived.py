"""``persist_reductions``: previews are made again at restore, not stored (issue 36, item 7).

The recipe records a truncated or dropped log block as derived (the rule that made its preview,
where it is, a digest of all previews); a restore makes each preview again from the log's original
and checks the digest. These cases pin that the previews come back byte for byte (exact token
encodings, text blocks, a drop made again of its own marker), and that a recipe whose derived
part was changed is refused with ``ReductionRestoreError``.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from _cm_harness import ContextModel, Reply, ToolCall, encode_for_compare, replies
from strands import Agent, tool
from strands.session.file_session_manager import FileSessionManager
from strands_offload.context_manager import ContextManager, Offload, ReductionRestoreError
from strands_offload.context_manager._persist import RECIPE_KEY, decode_places, encode_places

LINES = [f"12:00:{i % 60:02d} INFO request {i} served from cache shard {i % 7}" for i in range(300)]


@tool
def read_log(part: int) -> str:
    """Read one part of the service log."""
    return f"part {part}\n" + "\n".join(LINES)


@tool
def read_two(part: int) -> dict[str, Any]:
    """Read one part of the log as two items."""
    return {"status": "success", "content": [{"text": "\n".join(LINES[:150])}, {"text": "\n".join(LINES[150:])}]}


def _agent(folder: Path, manager: Any, script: Any = None) -> Agent:
    return Agent(
        model=ContextModel(script or replies(), context_window_limit=1_000_000),
        tools=[read_log, read_two],
        context_manager=manager,
        session_manager=FileSessionManager(session_id="derived", storage_dir=str(folder)),
        agent_id="main",
        callback_handler=None,
    )


def _round_trip(folder: Path, make: Callable[[], Any], script: Any, prompt: str = "read the log") -> Agent:
    live = _agent(folder, make(), script)
    live(prompt)
    live("and what now?")
    recipe = live.state.get(RECIPE_KEY)
    assert "derived" in recipe, recipe
    restored = _agent(folder, make())
    assert encode_for_compare(restored.messages) == encode_for_compare(live.messages)
    # The restored agent records the same derived blocks, and what it adds survives the next restore.
    restored("read more")
    again = _agent(folder, make())
    assert encode_for_compare(again.messages) == encode_for_compare(restored.messages)
    return live


def _reads(tool_name: str, *parts: int) -> Any:
    return replies(*[Reply("", [ToolCall(tool_name, {"part": p}, f"tu_{p}")]) for p in parts])


@pytest.mark.parametrize("tokenizer", [None, "cl100k_base", "o200k_base"])
def test_truncated_results_come_back(tmp_path: Path, tokenizer: str | None) -> None:
    def make() -> Any:
        strategy = Offload.truncate("tool_results", {"preview_tokens": 150}).when(threshold=600)
        return ContextManager(strategies=[strategy], tokenizer=tokenizer, persist_reductions=True)

    live = _round_trip(tmp_path, make, _reads("read_log", 1, 2, 3))
    rule = live.state.get(RECIPE_KEY)["derived"]["rules"][0]
    assert rule["encoding"] == tokenizer


def test_truncated_user_text_comes_back_and_without_a_stash(tmp_path: Path) -> None:
    def make() -> Any:
        strategy = Offload.truncate("user_text", {"preview_tokens": 100, "preview": "head"}).when(threshold=600)
        return ContextManager(strategies=[strategy], stash=False, persist_reductions=True)

    _round_trip(tmp_path, make, replies(), prompt="look at this:\n" + "\n".join(LINES))


def test_a_drop_made_again_of_its_marker_comes_back(tmp_path: Path) -> None:
    # Without a threshold, every pass drops the marker again: an equal block for a one-item result,
    # a marker naming one key for a two-item one (the reference's behaviour): each is recorded as it is.
    def make() -> Any:
        return ContextManager(strategies=[Offload.drop("tool_results").when(threshold=0)], persist_reductions=True)

    script = replies(
        Reply("", [ToolCall("read_log", {"part": 1}, "tu_1")]),
        Reply("", [ToolCall("read_two", {"part": 2}, "tu_2")]),
        Reply("", [ToolCall("read_log", {"part": 3}, "tu_3")]),
    )
    _round_trip(tmp_path, make, script)


# ----------------------------------------------------------------------------------------- tampering


def _recorded(folder: Path) -> dict[str, Any]:
    strategy = Offload.truncate("tool_results", {"preview_tokens": 150}).when(threshold=600)
    live = _agent(folder, ContextManager(strategies=[strategy], persist_reductions=True), _reads("read_log", 1, 2))
    live("read the log")
    return copy.deepcopy(live.state.get(RECIPE_KEY))


def _with(edit: Callable[[dict[str, Any]], None]) -> Callable[[dict[str, Any]], dict[str, Any]]:
    def apply(recipe: dict[str, Any]) -> dict[str, Any]:
        edit(recipe["derived"])
        return recipe

    return apply


def _plus(at: str, place: tuple[int, int]) -> str:
    return encode_places([*decode_places(at), place])


TAMPERED: dict[str, Callable[[dict[str, Any]], Any]] = {
    "digest changed": _with(lambda d: d.update(digest="0" * 64)),
    "preview size changed": _with(lambda d: d["rules"][0]["config"].update(preview_tokens=100)),
    "encoding changed": _with(lambda d: d["rules"][0].update(encoding="cl100k_base")),
    "encoding unknown": _with(lambda d: d["rules"][0].update(encoding="no_such_encoding")),
    "refs dropped": _with(lambda d: d["rules"][0].update(refs=False)),
    "rule kind unknown": _with(lambda d: d["rules"][0].update(kind="summarize")),
    "a block nothing truncates": _with(lambda d: d.update(at=[_plus(d["at"][0], (0, 0))])),
    "a block outside the log": _with(lambda d: d.update(at=[_plus(d["at"][0], (999, 0))])),
    "a block index outside": _with(lambda d: d.update(at=[_plus(d["at"][0], (3, 5))])),
    "a block twice": _with(lambda d: d.update(at=[d["at"][0] + " " + d["at"][0]])),
    "a block missing": _with(lambda d: d.update(at=[encode_places(decode_places(d["at"][0])[1:])])),
    "a group malformed": _with(lambda d: d.update(at=["0-AAA="])),
    "a bitmap not base64": _with(lambda d: d.update(at=["0:**"])),
    "a negative index": _with(lambda d: d.update(at=["-1:CA=="])),
    "at a list of lists": _with(lambda d: d.update(at=[[3, 0]])),
    "more rules than spots": _with(lambda d: d["rules"].append(d["rules"][0])),
    "rules a dict": _with(lambda d: d.update(rules={"kind": "drop"})),
    "derived a list": lambda r: r.update(derived=[]) or r,
    "no digest": _with(lambda d: d.pop("digest")),
}


@pytest.mark.parametrize("name", list(TAMPERED))
def test_a_tampered_derived_part_is_a_restore_error(name: str, tmp_path: Path) -> None:
    recipe = _recorded(tmp_path)
    session = FileSessionManager(session_id="derived", storage_dir=str(tmp_path))
    stored = session.session_repository.read_agent("derived", "main")
    assert stored is not None
    stored.state[RECIPE_KEY] = TAMPERED[name](recipe)
    session.session_repository.update_agent("derived", stored)
    strategy = Offload.truncate("tool_results", {"preview_tokens": 150}).when(threshold=600)
    with pytest.raises(ReductionRestoreError, match="session_id=<derived>"):
        _agent(tmp_path, ContextManager(strategies=[strategy], persist_reductions=True))
