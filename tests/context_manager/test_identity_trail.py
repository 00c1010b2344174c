"""The identity pass of each model call (``_native.IdentityTrail``; ``PyIdentityTrail`` is its Python twin)."""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

import pytest
from strands_offload import _native
from strands_offload.context_manager._identity import PyIdentityTrail

TRAILS = [pytest.param(_native.IdentityTrail, id="native"), pytest.param(PyIdentityTrail, id="python")]


def conversation(n: int = 6) -> list[dict[str, Any]]:
    messages: list[dict[str, Any]] = []
    for k in range(n):
        if k % 2 == 0:
            result = {"toolUseId": f"t{k}", "status": "success", "content": [{"text": f"SECRET-{k:03d}"}]}
            messages.append({"role": "user", "content": [{"toolResult": result}], "tracking_id": f"id{k}"})
        else:
            use = {"toolUseId": f"t{k}", "name": "look", "input": {"q": ["a", k, 1.5, None]}}
            messages.append({"role": "assistant", "content": [{"text": "ok"}, {"toolUse": use}]})
    return messages


def redact(messages: list[Any]) -> None:
    messages[2]["content"][0]["toolResult"]["content"][0]["text"] = "[REDACTED]"  # the same length


EDITS: list[tuple[str, Callable[[list[Any]], None], int]] = [
    ("nothing", lambda m: None, 6),
    ("appended", lambda m: m.append({"role": "assistant", "content": [{"text": "new"}]}), 6),
    ("redacted in place, same length", redact, 2),
    ("a block replaced", lambda m: m[3]["content"].__setitem__(0, {"text": "ok"}), 3),
    ("a key added", lambda m: m[1].__setitem__("metadata", {}), 1),
    ("a number replaced", lambda m: m[5]["content"][1]["toolUse"]["input"]["q"].__setitem__(1, 10**30), 5),
    ("a message removed", lambda m: m.pop(4), 4),
    ("the last removed", lambda m: m.pop(), 5),
    ("a message replaced by an equal copy", lambda m: m.__setitem__(0, copy.deepcopy(m[0])), 0),
    ("the list cleared", lambda m: m.clear(), 0),
]


@pytest.mark.parametrize("trail_class", TRAILS)
@pytest.mark.parametrize(("name", "edit", "unchanged"), EDITS, ids=[e[0] for e in EDITS])
def test_the_first_changed_message_is_found(trail_class: Any, name: str, edit: Any, unchanged: int) -> None:
    messages = conversation()
    trail = trail_class()
    assert trail.compare(messages) == 0  # nothing known yet
    assert trail.compare(messages) == 6 and len(trail) == 6
    edit(messages)
    assert trail.compare(messages) == unchanged
    assert trail.compare(messages) == len(messages)  # it now remembers them as they are


@pytest.mark.parametrize("trail_class", TRAILS)
def test_update_from_takes_the_prefix_as_known(trail_class: Any) -> None:
    messages = conversation()
    trail = trail_class()
    trail.compare(messages)
    messages[4]["content"] = [{"text": "replaced"}]
    trail.update_from(messages, 4)  # the caller says messages 0-3 did not change: only 4 on is walked
    assert trail.compare(messages) == 6
    trail.clear()
    assert trail.compare(messages) == 0


@pytest.mark.parametrize("trail_class", TRAILS)
def test_deep_or_cyclic_messages_always_read_as_changed(trail_class: Any) -> None:
    deep: Any = "leaf"
    for _ in range(600):
        deep = [deep]
    cyclic: list[Any] = []
    cyclic.append(cyclic)
    messages = [{"role": "user", "content": [{"text": "a"}]}, {"role": "user", "content": [{"json": deep}]}]
    messages.append({"role": "user", "content": [{"json": cyclic}]})
    trail = trail_class()
    trail.compare(messages)
    assert trail.compare(messages) == 1


@pytest.mark.parametrize("trail_class", TRAILS)
def test_an_identity_is_never_reused_while_remembered(trail_class: Any) -> None:
    # The trail holds what it walked: a string replaced and freed cannot come back at the same address.
    messages = [{"role": "user", "content": [{"text": "x" * 50}]}]
    trail = trail_class()
    trail.compare(messages)
    for k in range(200):
        messages[0]["content"][0]["text"] = f"{k:050d}"
        assert trail.compare(messages) == 0
