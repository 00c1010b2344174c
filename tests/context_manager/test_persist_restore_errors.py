"""``persist_reductions`` restores that cannot succeed raise ``ReductionRestoreError``, nothing else (issue 36, item 5).

A storage outage while the stash is read at restore is retried once, then refused with
``ReductionRestoreError`` naming the session and the cause (chained); ``Agent(...)`` never raises
``StorageError`` and never returns a half-restored agent. A tampered recipe is refused with
``ReductionRestoreError`` too, whatever JSON it was changed to: a table of hand-made cases and a
hypothesis search over edits of a real recipe.
"""

from __future__ import annotations

import copy
import logging
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from _cm_harness import ContextModel, Reply, ToolCall, encode_for_compare, replies
from _s3_support import EndpointSession, FaultProxy
from botocore.config import Config
from hypothesis import given, settings
from hypothesis import strategies as st
from strands import Agent, tool
from strands.session.file_session_manager import FileSessionManager
from strands.types.exceptions import StorageError
from strands_offload.context_manager import ContextManager, Offload, ReductionRestoreError
from strands_offload.context_manager._persist import RECIPE_KEY
from strands_offload.storage import LocalFileStorage, S3Storage


@tool
def read_part(part: int) -> str:
    """Read one part of the service log."""
    return "\n".join(f"12:00:{i % 60:02d} INFO part {part} request {i} ok" for i in range(300))


def _strategies() -> list[Any]:
    return [
        Offload.truncate("tool_results", {"preview_tokens": 200}).when(threshold=1000),
        Offload.summarize("*").when(utilization=0.25, preserve_recent=2),
    ]


def _reads(n: int) -> Any:
    return replies(*[Reply("", [ToolCall("read_part", {"part": p}, f"tu_part_{p}")]) for p in range(n)])


def _agent(storage: Any, sessions_dir: Path, session_id: str, script: Any = None) -> Agent:
    stash: Any = {"storage": storage} if storage is not None else None
    return Agent(
        model=ContextModel(script or replies(), context_window_limit=8_000),
        tools=[read_part],
        context_manager=ContextManager(strategies=_strategies(), stash=stash, persist_reductions=True),
        session_manager=FileSessionManager(session_id=session_id, storage_dir=str(sessions_dir)),
        agent_id="main",
        callback_handler=None,
    )


def _live(storage: Any, sessions_dir: Path, session_id: str) -> Agent:
    live = _agent(storage, sessions_dir, session_id, _reads(6))
    live("read every part of the log")
    assert "[ref: " in encode_for_compare(live.messages)
    return live


# ----------------------------------------------------------------------------------------- storage outages


class FlakyStorage(LocalFileStorage):
    """A local stash storage whose reads fail for ``outage`` seconds from the first failing one."""

    def __init__(self, root: str, outage: float) -> None:
        super().__init__(root)
        self.outage = outage
        self.failed_reads = 0
        self._since: float | None = None

    async def read(self, key: str) -> bytes | None:
        if self.outage > 0:
            now = time.monotonic()
            self._since = now if self._since is None else self._since
            if now - self._since < self.outage:
                self.failed_reads += 1
                raise StorageError(f"SlowDown: throttled reading {key}")
        return await super().read(key)


def test_an_outage_the_retry_outlasts_restores(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    live = _live(LocalFileStorage(str(tmp_path / "stash")), tmp_path / "sessions", "s1")
    flaky = FlakyStorage(str(tmp_path / "stash"), outage=0.25)  # shorter than the pause before the retry
    with caplog.at_level(logging.WARNING, logger="strands_offload"):
        restored = _agent(flaky, tmp_path / "sessions", "s1")
    assert flaky.failed_reads > 0
    assert any("retrying once" in record.getMessage() for record in caplog.records)
    assert encode_for_compare(restored.messages) == encode_for_compare(live.messages)


def test_a_lasting_outage_is_a_restore_error(s3_endpoint: str, s3_bucket: str, tmp_path: Path) -> None:
    """An S3 stash that keeps answering 503 SlowDown (through a fault proxy in front of moto)."""
    proxy = FaultProxy(s3_endpoint)
    try:
        prefix = uuid.uuid4().hex

        def through_proxy() -> S3Storage:
            return S3Storage(
                s3_bucket,
                prefix=prefix,
                boto_session=EndpointSession(proxy.endpoint),
                boto_client_config=Config(retries={"max_attempts": 2, "mode": "standard"}),
            )

        live = _live(through_proxy(), tmp_path / "sessions", "s2")
        proxy.fail(100_000, status=503)
        with pytest.raises(ReductionRestoreError, match=r"session_id=<s2>.*storage failed twice") as raised:
            _agent(through_proxy(), tmp_path / "sessions", "s2")
        assert isinstance(raised.value.__cause__, StorageError)
        assert "StorageError" in str(raised.value)

        # Once the storage answers again, the same session restores.
        direct = S3Storage(s3_bucket, prefix=prefix, boto_session=EndpointSession(s3_endpoint))
        restored = _agent(direct, tmp_path / "sessions", "s2")
        assert encode_for_compare(restored.messages) == encode_for_compare(live.messages)
    finally:
        proxy.close()


# ----------------------------------------------------------------------------------------- tampered recipes


@pytest.fixture(scope="module")
def recorded(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, Any]]:
    """A reduced session (truncations, a summary) with an in-memory stash, and its recipe."""
    sessions_dir = tmp_path_factory.mktemp("tampered")
    live = _live(None, sessions_dir, "tampered")
    recipe = live.state.get(RECIPE_KEY)
    assert any("message" in entry for entry in recipe["messages"])
    assert any("keep" in entry for entry in recipe["messages"])
    return sessions_dir, recipe


def _restore_with(sessions_dir: Path, recipe: Any) -> Agent:
    session = FileSessionManager(session_id="tampered", storage_dir=str(sessions_dir))
    stored = session.session_repository.read_agent("tampered", "main")
    assert stored is not None
    stored.state[RECIPE_KEY] = recipe
    session.session_repository.update_agent("tampered", stored)
    return _agent(None, sessions_dir, "tampered")


def _first(recipe: dict[str, Any], kind: str) -> dict[str, Any]:
    return next(entry for entry in recipe["messages"] if kind in entry)


def _set(path: Callable[[dict[str, Any]], tuple[Any, Any]], value: Any) -> Callable[[dict[str, Any]], Any]:
    def edit(recipe: dict[str, Any]) -> Any:
        holder, key = path(recipe)
        holder[key] = value
        return recipe

    return edit


def _new_item(recipe: dict[str, Any]) -> dict[str, Any]:
    return next(i for i in _first(recipe, "message")["message"]["content"] if "new" in i)


TAMPERED: dict[str, Callable[[dict[str, Any]], Any]] = {
    "a string": lambda r: "recipe",
    "a number": lambda r: 42,
    "a list": lambda r: [r],
    "no log": lambda r: {k: v for k, v in r.items() if k != "log"},
    "log of one item": _set(lambda r: (r, "log"), [3]),
    "log a string": _set(lambda r: (r, "log"), "ab"),
    "count a float": _set(lambda r: (r["log"], 0), 2.5),
    "count negative": _set(lambda r: (r["log"], 0), -1),
    "count huge": _set(lambda r: (r["log"], 0), 10**30),
    "digest a list": _set(lambda r: (r["log"], 1), []),
    "messages a dict": _set(lambda r: (r, "messages"), {"keep": [0, 0]}),
    "messages a string": _set(lambda r: (r, "messages"), "keep"),
    "entry a string": _set(lambda r: (r["messages"], 0), "keep"),
    "entry a list": _set(lambda r: (r["messages"], 0), ["keep"]),
    "entry empty": _set(lambda r: (r["messages"], 0), {}),
    "keep of floats": _set(lambda r: (_first(r, "keep"), "keep"), [0.5, 1.5]),
    "keep reversed": _set(lambda r: (_first(r, "keep"), "keep"), [3, 1]),
    "keep of one": _set(lambda r: (_first(r, "keep"), "keep"), [0]),
    "keep of strings": _set(lambda r: (_first(r, "keep"), "keep"), ["0", "1"]),
    "keep null": _set(lambda r: (_first(r, "keep"), "keep"), None),
    "message a list": _set(lambda r: (_first(r, "message"), "message"), []),
    "message a string": _set(lambda r: (_first(r, "message"), "message"), "user"),
    "message without role": lambda r: _first(r, "message")["message"].pop("role") and r,
    "message of role tool": _set(lambda r: (_first(r, "message")["message"], "role"), "tool"),
    "content a string": _set(lambda r: (_first(r, "message")["message"], "content"), "text"),
    "content null": _set(lambda r: (_first(r, "message")["message"], "content"), None),
    "item a string": _set(lambda r: (_first(r, "message")["message"]["content"], 0), "from"),
    "item empty": _set(lambda r: (_first(r, "message")["message"]["content"], 0), {}),
    "from of one": _set(lambda r: (_first(r, "message")["message"]["content"], 0), {"from": [0]}),
    "from outside": _set(lambda r: (_first(r, "message")["message"]["content"], 0), {"from": [0, 99]}),
    "from of strings": _set(lambda r: (_first(r, "message")["message"]["content"], 0), {"from": ["a", "b"]}),
    "from a dict": _set(lambda r: (_first(r, "message")["message"]["content"], 0), {"from": {"0": 0}}),
    "new a string": _set(lambda r: (_new_item(r), "new"), "text"),
    "new null": _set(lambda r: (_new_item(r), "new"), None),
    "a reference to nothing": _set(lambda r: (_new_item(r), "new"), {"text": "[Stashed] [ref: nowhere_0]"}),
    "format 0": _set(lambda r: (r, "format"), 0),
    "format a string": _set(lambda r: (r, "format"), "1"),
}


@pytest.mark.parametrize("name", list(TAMPERED))
def test_a_tampered_recipe_is_a_restore_error(name: str, recorded: tuple[Path, dict[str, Any]]) -> None:
    sessions_dir, recipe = recorded
    tampered = TAMPERED[name](copy.deepcopy(recipe))
    with pytest.raises(ReductionRestoreError, match="session_id=<tampered>"):
        _restore_with(sessions_dir, tampered)


def test_the_untampered_recipe_restores(recorded: tuple[Path, dict[str, Any]]) -> None:
    sessions_dir, recipe = recorded
    restored = _restore_with(sessions_dir, copy.deepcopy(recipe))
    assert restored.messages


_JSON = st.recursive(
    st.none() | st.booleans() | st.integers(-3, 40) | st.floats(allow_nan=False) | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner, max_size=3),
    max_leaves=6,
)


def _paths(value: Any, path: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    """Every path to a value inside ``value`` (the root excluded)."""
    found: list[tuple[Any, ...]] = []
    items = value.items() if isinstance(value, dict) else enumerate(value) if isinstance(value, list) else ()
    for key, child in items:
        found.append((*path, key))
        found.extend(_paths(child, (*path, key)))
    return found


@st.composite
def _edits(draw: st.DrawFn, recipe: dict[str, Any]) -> Any:
    """The recipe with one to three values replaced, removed or added somewhere in it."""
    tampered: Any = copy.deepcopy(recipe)
    for _ in range(draw(st.integers(1, 3))):
        paths = _paths(tampered)
        if not paths:
            break
        path = draw(st.sampled_from(paths))
        holder = tampered
        for key in path[:-1]:
            holder = holder[key]
        action = draw(st.sampled_from(["replace", "remove", "add", "nudge"]))
        if action == "remove":
            del holder[path[-1]]
        elif action == "add" and isinstance(holder, list):
            holder.insert(path[-1], draw(_JSON))
        elif action == "add":
            holder[draw(st.text(max_size=6))] = draw(_JSON)
        elif action == "nudge" and isinstance(holder[path[-1]], int) and not isinstance(holder[path[-1]], bool):
            holder[path[-1]] += draw(st.integers(-3, 3))
        else:
            holder[path[-1]] = draw(_JSON)
    return tampered


def test_any_edit_of_a_recipe_restores_or_is_a_restore_error(recorded: tuple[Path, dict[str, Any]]) -> None:
    sessions_dir, recipe = recorded

    @settings(max_examples=60)
    @given(tampered=_edits(recipe))
    def check(tampered: Any) -> None:
        try:
            restored = _restore_with(sessions_dir, tampered)
        except ReductionRestoreError as error:
            assert "session_id=<tampered>" in str(error)
            return
        # Restored: a conversation the agent can send (messages with a role and a list of blocks).
        for message in restored.messages:
            assert message["role"] in ("user", "assistant")
            assert all(isinstance(block, dict) for block in message["content"])

    check()
