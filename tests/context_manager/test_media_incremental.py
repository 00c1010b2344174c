"""``media_tokens=`` counts per message across calls (issue 38): only what changed is counted again.

The manager keeps each message's media tokens in its state for the agent and, at the next model
call, reuses them for the leading messages the change log reports unchanged (the identity pass of
the call, the journal of the pipeline's edits). The totals must equal a full count of the
conversation with ``_native.media_tokens`` after any sequence of appends, edits in place of old
image and document blocks (from outside the pipeline or through it), removals and rule changes.
"""

from __future__ import annotations

import asyncio
import copy
from typing import Any

import pytest
from _cm_harness import ContextModel, fixed_tracking_ids
from _media_samples import image_block, pdf, png_header
from hypothesis import given, settings
from hypothesis import strategies as st
from strands import Agent
from strands_offload import _native
from strands_offload.context_manager import ContextManager
from strands_offload.context_manager._measure import Measure
from strands_offload.context_manager._run import AgentState

RULES = ("anthropic", "gemini", "openai-tile-85")
SIZES = ((8, 8), (640, 480), (1280, 800), (2560, 1600), (300, 3000))


def _media(kind: int, size: int) -> dict[str, Any]:
    if kind == 0:
        return image_block(png_header(*SIZES[size % len(SIZES)]))
    return {"document": {"format": "pdf", "name": f"doc{size}", "source": {"bytes": pdf(1 + size % 4)}}}


def _message(kind: int, size: int, text: str) -> dict[str, Any]:
    if kind == 2:  # a tool result holding media
        result = {"toolUseId": f"t{size}{text}", "status": "success", "content": [{"text": text}, _media(0, size)]}
        return {"role": "user", "content": [{"toolResult": result}]}
    if kind == 3:  # text only
        return {"role": "assistant", "content": [{"text": text}]}
    return {"role": "user", "content": [{"text": text}, _media(kind, size)]}


def _media_sources(messages: list[Any]) -> list[dict[str, Any]]:
    """The media values (``{"format", "source"}`` dicts) of ``messages``, nested ones included."""
    found: list[dict[str, Any]] = []
    for message in messages:
        for block in message["content"]:
            items = block["toolResult"]["content"] if "toolResult" in block else [block]
            found += [item[k] for item in items for k in ("image", "document") if k in item]
    return found


class _Calls:
    """The manager's side: one run per call over one agent state (observe, measure, journal edits, settle)."""

    def __init__(self) -> None:
        self.state = AgentState()
        self.model = ContextModel(context_window_limit=1_000_000)

    def run(self, messages: list[Any], rule: str) -> Measure:
        self.state.changes.observe(messages)
        measure = Measure(self.model, media=rule)
        measure.follow(messages, self.state)
        return measure


def _check(measure: Measure, messages: list[Any], rule: str) -> None:
    expected = int(_native.media_tokens(messages, rule))
    assert measure.media_of(messages) == expected
    text = asyncio.run(Measure(measure.model).messages(list(messages)))  # not followed: counted in full
    assert asyncio.run(measure.messages(messages)) == text + expected


STEP = st.one_of(
    st.tuples(st.just("append"), st.integers(0, 3), st.integers(0, 9)),
    st.tuples(st.just("bytes in place"), st.integers(0, 50), st.integers(0, 9)),
    st.tuples(st.just("format in place"), st.integers(0, 50), st.sampled_from(["png", "jpeg", "gif", "webp"])),
    st.tuples(st.just("block replaced"), st.integers(0, 50), st.integers(0, 9)),
    st.tuples(st.just("block added"), st.integers(0, 50), st.integers(0, 9)),
    st.tuples(st.just("removed"), st.integers(0, 50), st.just(0)),
    st.tuples(st.just("pipeline edit"), st.integers(0, 50), st.just(0)),
    st.tuples(st.just("call"), st.sampled_from(RULES), st.just(0)),
)


@settings(max_examples=60)
@given(start=st.integers(0, 6), steps=st.lists(STEP, max_size=30), first_rule=st.sampled_from(RULES))
def test_the_incremental_media_count_equals_a_full_recount(start: int, steps: list[Any], first_rule: str) -> None:
    messages = [_message(k % 4, k, f"m{k}") for k in range(start)]
    calls = _Calls()
    rule = first_rule
    measure = calls.run(messages, rule)
    _check(measure, messages, rule)
    outside = False  # an edit from outside the pipeline since the last call
    for n, (op, a, b) in enumerate(steps):
        if op == "pipeline edit" and outside:
            op, a = "call", rule  # the pipeline runs in a call: the call sees what changed before it
        outside = op not in ("call", "pipeline edit")
        sources = _media_sources(messages)
        if op == "append":
            messages.append(_message(a, b, f"new{n}"))
        elif op == "bytes in place" and sources:
            value = sources[a % len(sources)]
            fresh = _media(0 if "bytes" in value["source"] and value.get("format") != "pdf" else 1, b)
            value["source"]["bytes"] = next(iter(fresh.values()))["source"]["bytes"]
        elif op == "format in place" and sources:
            sources[a % len(sources)]["format"] = b
        elif op in ("block replaced", "block added") and messages:
            content = messages[a % len(messages)]["content"]
            if op == "block added":
                content.append(_media(b % 2, b))
            else:
                content[b % len(content)] = _media(b % 2, b)
        elif op == "removed" and messages:
            del messages[a % len(messages)]
        elif op == "pipeline edit" and messages:
            # A strategy of ours: a block replaced by a new one, recorded in the journal, counted in the same run.
            position = a % len(messages)
            messages[position]["content"][0] = {"text": "[placeholder]"}
            calls.state.changes.edited(position)
            _check(measure, messages, rule)
        elif op == "call":
            calls.state.changes.settle(messages)
            rule = a
            measure = calls.run(messages, rule)
            _check(measure, messages, rule)
    calls.state.changes.settle(messages)
    measure = calls.run(messages, rule)
    _check(measure, messages, rule)


def test_a_call_counts_the_media_of_the_new_messages_only(monkeypatch: pytest.MonkeyPatch) -> None:
    messages = [_message(k % 4, k, f"m{k}") for k in range(40)]
    calls = _Calls()
    assert calls.run(messages, "anthropic").media_of(messages) == _native.media_tokens(messages, "anthropic")
    counted: list[int] = []
    full = _native.media_tokens

    def counting(batch: list[Any], rule: str) -> int:
        counted.append(len(batch))
        return int(full(batch, rule))

    monkeypatch.setattr(_native, "media_tokens", counting)
    messages += [_message(0, 3, "new"), _message(3, 0, "answer")]
    calls.state.changes.settle(messages)
    assert calls.run(messages, "anthropic").media_of(messages) == full(messages, "anthropic")
    assert sum(counted) == 2  # the two new messages, not the 42 of the conversation
    counted.clear()
    position = 9
    old = _media_sources([messages[position]])[0]
    old["source"]["bytes"] = png_header(2000, 2000)  # an old image, in place
    measure = calls.run(messages, "anthropic")
    assert measure.media_of(messages) == full(messages, "anthropic")
    assert sum(counted) == len(messages) - position  # from the changed message on
    counted.clear()
    assert measure.media_of(messages) == full(messages, "anthropic")
    assert counted == []  # nothing changed since: nothing counted


# ---------------------------------------------------------------------------- through a real agent


def _history() -> list[dict[str, Any]]:
    messages: list[dict[str, Any]] = []
    for n in range(4):
        messages.append({"role": "user", "content": [{"text": f"look at screen {n}: " + "words " * 120}]})
        messages[-1]["content"].append(image_block(png_header(8, 8)))  # 1 token
        messages.append({"role": "assistant", "content": [{"text": f"screen {n} seen"}]})
    return messages


@pytest.mark.parametrize("edited", [False, True])
def test_an_old_image_grown_in_place_between_two_calls_is_counted(edited: bool) -> None:
    """The conversation alone fills the window only with the grown image: the emergency truncation acts then."""
    with fixed_tracking_ids():
        model = ContextModel(context_window_limit=2_000)
        agent = Agent(
            model=model,
            messages=_history(),
            context_manager=ContextManager(strategies=[], media_tokens="anthropic"),
            callback_handler=None,
        )
        agent("first question")
        before = copy.deepcopy(model.calls[-1])
        if edited:  # user code or a tool swaps the old screenshot's data in place (1,598 tokens now)
            agent.messages[0]["content"][1]["image"]["source"]["bytes"] = png_header(1568, 1568)
        agent("second question")
    assert len(before) == len(_history()) + 1
    elided = len(model.calls[-1]) < len(before) + 2
    assert elided is edited
