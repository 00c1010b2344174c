"""accelerate() for the turn itself: the event loop's deep copies and the tracer's message events.

Whole Agent sessions run twice, on strands-agents as installed and under accelerate(), and must give
the model byte-equal requests and an in-memory span exporter equal spans (names, attributes, events
and their attributes, dropped-event counts; ids and times aside), over messages with tool calls,
images, documents, reasoning blocks, citations and non-ASCII text, under each of the tracer's
conventions and its redaction settings. The native serialization is compared with the tracer's own
``serialize`` on generated values, and malformed messages raise what the tracer raises.
"""

from __future__ import annotations

import copy
import datetime
import logging
import re
import sys
import threading
import warnings
from collections.abc import Callable, Iterator
from typing import Any

import pytest
import strands.event_loop.event_loop as sdk_event_loop
import strands.event_loop.streaming as sdk_streaming
import strands.telemetry.tracer as sdk_tracer
import strands_offload
from _cm_harness import fixed_tracking_ids
from _turn_sessions import RecordingModel, block_zoo, make_agent, plain_history, recorded_spans, span_record
from hypothesis import given, settings
from hypothesis import strategies as st
from opentelemetry.sdk.trace import TracerProvider
from strands.hooks import BeforeModelCallEvent
from strands.telemetry.tracer import get_tracer
from strands_offload import _accelerate, _native, _seam
from strands_offload._accelerate import _copy, _spans

_WALL_CLOCK = re.compile(r", 'timeToFirstByteMs': \d+")
TURN_TARGETS = [t for t in _seam.ACCELERATE_TARGETS if t.feature == "accelerate-turn"]
ORIGINAL_ADD_EVENT_MESSAGES = sdk_tracer.Tracer._add_event_messages


@pytest.fixture(autouse=True)
def _restored() -> Iterator[None]:
    strands_offload.deaccelerate()
    yield
    strands_offload.deaccelerate()
    assert sdk_event_loop.copy is copy and sdk_streaming.copy is copy
    assert sdk_tracer.Tracer._add_event_messages is ORIGINAL_ADD_EVENT_MESSAGES


def _session(messages: list[dict[str, Any]], *, spans: bool, prompts: tuple[str, ...] = ("next? ü", "again")) -> Any:
    model = RecordingModel()
    agent = make_agent(copy.deepcopy(messages), model)
    with fixed_tracking_ids():
        return _turns(agent, model, spans=spans, prompts=prompts)


def _turns(agent: Any, model: RecordingModel, *, spans: bool, prompts: tuple[str, ...]) -> Any:
    if True:
        if spans:
            with recorded_spans() as exporter:
                for prompt in prompts:
                    agent(prompt)
            record = span_record(exporter)
        else:
            for prompt in prompts:
                agent(prompt)
            record = None
    # Without the one wall-clock figure the SDK keeps in messages (absent when under 1 ms).
    return model.requests, record, _WALL_CLOCK.sub("", repr(agent.messages))


def _twice(run: Callable[[], Any]) -> tuple[Any, Any]:
    plain = run()
    with strands_offload.accelerated() as active:
        assert active and all(_seam.swap_get(t) is not _accelerate._SWAPPED[t][0] for t in TURN_TARGETS)
        fast = run()
    return plain, fast


ZOO = [m for i in range(3) for m in block_zoo(i)]

CONVENTIONS: dict[str, dict[str, Any]] = {
    "legacy": {},
    "latest": {"use_latest_genai_conventions": True},
    "latest_attributes_only": {"use_latest_genai_conventions": True, "_span_attributes_only": True},
    "redacted": {"_redaction_enabled": True, "_unredacted_exact": frozenset(), "_unredacted_globs": ()},
    "output_unredacted": {
        "_redaction_enabled": True,
        "_unredacted_exact": frozenset({"gen_ai.output.messages"}),
        "_unredacted_globs": ("gen_ai.input.*",),
    },
}


@pytest.mark.parametrize("spans", [False, True], ids=["no_provider", "in_memory_exporter"])
@pytest.mark.parametrize("convention", sorted(CONVENTIONS))
def test_sessions_send_equal_requests_and_export_equal_spans(
    convention: str, spans: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name, value in CONVENTIONS[convention].items():
        monkeypatch.setattr(get_tracer(), name, value)
    plain, fast = _twice(lambda: _session(ZOO, spans=spans))
    assert fast == plain
    requests, record, _ = plain
    assert len(requests) == 4 and "<replaced>" not in requests[0]
    if spans:
        texts = repr(record)
        assert "gen_ai.tool.message" in texts or convention.startswith("latest")
        if convention == "legacy":
            assert "<replaced>" in texts and "東京 😀" in texts and "[REDACTED]" not in texts
        if convention == "redacted":
            assert "[REDACTED]" in texts and "東京" not in texts


def test_a_long_conversation_keeps_the_same_last_events_and_dropped_counts() -> None:
    """More messages than a span keeps events (128): the events it would drop are counted, not built."""
    history = plain_history(300) + ZOO
    plain, fast = _twice(lambda: _session(history, spans=True, prompts=("go",)))
    assert fast == plain
    dropped = [record[4] for record in plain[1]]
    assert max(dropped) > 150


def test_a_message_the_native_writer_declines_midway_keeps_every_event() -> None:
    """A datetime in a tool result's JSON: from that message on the tracer's own code writes the events."""
    history = plain_history(200)
    history[150]["content"].append({"json": {"when": datetime.datetime(2024, 5, 1, 12, 30), "ü": b"raw"}})
    history[170]["content"][0]["text"] = "lone \ud800 surrogate"
    plain, fast = _twice(lambda: _session(history, spans=True, prompts=("go",)))
    assert fast == plain
    assert "2024-05-01T12:30:00" in repr(plain[1])


def test_changes_made_in_place_between_model_calls_reach_the_model() -> None:
    """No copy outlives its call: a hook that edits a message in place before each call is seen every time."""

    def session() -> list[str]:
        model = RecordingModel()
        agent = make_agent(copy.deepcopy(ZOO), model)

        def edit(event: BeforeModelCallEvent) -> None:
            first = event.agent.messages[0]["content"][0]
            first["text"] = first["text"] + " [edited]"

        agent.hooks.add_callback(BeforeModelCallEvent, edit)
        agent("one")
        agent("two")
        return model.requests

    plain, fast = _twice(session)
    assert fast == plain
    assert [request.count("[edited]") for request in plain] == [1, 2, 3, 4]


# ---------------------------------------------------------------------------- the native code answers


def test_the_native_paths_answer_in_these_sessions(monkeypatch: pytest.MonkeyPatch) -> None:
    answered: dict[str, int] = {"_deep_copy": 0, "_span_message_events": 0, "_span_json": 0, "_span_json_ok": 0}

    def counting(name: str) -> None:
        function = getattr(_native, name)

        def call(*args: Any, **kwargs: Any) -> Any:
            result = function(*args, **kwargs)
            answered[name] += bool(result if not isinstance(result, tuple) else result[1])
            return result

        monkeypatch.setattr(_native, name, call)

    for name in answered:
        counting(name)
    with strands_offload.accelerated():
        _session(ZOO, spans=True)
        _session(ZOO, spans=False)
        with monkeypatch.context() as latest:
            latest.setattr(get_tracer(), "use_latest_genai_conventions", True)
            _session(ZOO, spans=True)
            _session(ZOO, spans=False)
    assert all(count > 0 for count in answered.values()), answered


# ---------------------------------------------------------------------------- malformed messages

MALFORMED: list[Any] = [
    {"content": [{"text": "no role"}]},
    {"role": "user"},
    {"role": "user", "content": [{"json": {(1, 2): "tuple key"}}]},
    {"role": "user", "content": "not a list"},
    {"role": "user", "content": [["not a dict"]]},
    {"role": "assistant", "content": [{"toolResult": {"toolUseId": "x", "content": [{"json": {"k": {1j: 1}}}]}}]},
    "not a message",
    {"role": 7, "content": [{"text": "int role"}]},
    {"role": "user", "content": [{"toolUse": {"input": {}}}]},
]


def _outcome(run: Callable[[], None]) -> Any:
    try:
        run()
    except Exception as error:
        return type(error), str(error)
    return None


@pytest.mark.parametrize("latest", [False, True], ids=["legacy", "latest"])
@pytest.mark.parametrize("recording", [False, True], ids=["non_recording", "recording"])
@pytest.mark.parametrize("bad", range(len(MALFORMED)))
def test_a_malformed_message_raises_what_the_tracer_raises(bad: int, recording: bool, latest: bool) -> None:
    messages = [*plain_history(5), MALFORMED[bad], *plain_history(3)]
    tracer = sdk_tracer.Tracer()
    tracer.use_latest_genai_conventions = latest
    provider = TracerProvider()

    def events_and_outcome() -> Any:
        span = provider.get_tracer("t").start_span("s") if recording else None
        outcome = _outcome(lambda: tracer._add_event_messages(span, messages))
        return outcome, [(e.name, dict(e.attributes or {})) for e in getattr(span, "events", ())]

    plain, fast = _twice(events_and_outcome)
    assert fast == plain
    if bad in (0, 1, 2, 5, 6):
        assert plain[0] is not None  # the tracer raised: so did the replacement


# ---------------------------------------------------------------------------- the tracer's serialize


class Opaque:
    def __repr__(self) -> str:
        return "Opaque()"


_scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**70), max_value=2**70),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=12),
    st.text(alphabet=st.characters(min_codepoint=0xD7F0, max_codepoint=0xE010), max_size=3),
    st.binary(max_size=5),
    st.sampled_from([datetime.date(2024, 1, 2), datetime.datetime(2024, 1, 2, 3, 4, 5), Opaque(), 1j]),
)
_keys = st.one_of(st.text(max_size=6), st.integers(-5, 5), st.floats(allow_nan=False), st.none(), st.booleans())
_values = st.recursive(
    _scalars,
    lambda inner: st.one_of(
        st.lists(inner, max_size=4),
        st.lists(inner, max_size=3).map(tuple),
        st.dictionaries(_keys, inner, max_size=4),
    ),
    max_leaves=20,
)


@settings(max_examples=400)
@given(value=_values)
def test_span_json_is_the_tracers_serialize_or_declines(value: Any) -> None:
    text = _native._span_json(value, max_depth=_spans.max_depth())
    assert _native._span_json_ok(value, max_depth=_spans.max_depth()) == (text is not None)
    if text is not None:
        assert text == sdk_tracer.serialize(value)


def test_span_json_writes_the_common_values_itself() -> None:
    value = [
        {"text": 'Grüße 😀 "q" \\ \n\t\x01\x7f\u2028'},
        {"image": {"source": {"bytes": b"\x00"}}},
        (1, 2.5),
        {1: None},
    ]
    assert _native._span_json(value, max_depth=64) == sdk_tracer.serialize(value)
    for declined in ([datetime.date(2024, 1, 1)], ["\udc80"], [(b"x",)], [2**64], [Opaque()], {(1,): 2}):
        assert _native._span_json(declined, max_depth=64) is None


def test_nesting_at_the_depth_bound_goes_to_the_tracer() -> None:
    depth = _spans.max_depth()
    nested: Any = "leaf"
    for _ in range(depth):
        nested = [nested]
    assert _native._span_json(nested, max_depth=depth) == sdk_tracer.serialize(nested)
    assert _native._span_json([nested], max_depth=depth) is None
    assert _native._span_json({"k": nested}, max_depth=depth) is None
    low = sys.getrecursionlimit()
    try:
        sys.setrecursionlimit(200)
        assert _spans.max_depth() == 25
    finally:
        sys.setrecursionlimit(low)


# ---------------------------------------------------------------------------- the deep copy


class Custom:
    """A value copy.deepcopy copies through its own __deepcopy__ (records the memo it saw)."""

    def __init__(self, payload: Any) -> None:
        self.payload = payload
        self.seen: list[int] = []

    def __deepcopy__(self, memo: dict[int, Any]) -> Custom:
        made = Custom(copy.deepcopy(self.payload, memo))
        made.seen = sorted(k for k in memo if k != id(memo))
        return made


class Dict(dict):  # type: ignore[type-arg]
    pass


class List(list):  # type: ignore[type-arg]
    pass


def _shape(original: Any, made: Any) -> Any:
    """The structure of ``made`` and its identity pattern: which nodes are shared, which are the originals'."""
    ids: dict[int, int] = {}
    out: list[Any] = []

    def visit(o: Any, m: Any) -> None:
        first = id(m) not in ids
        ids.setdefault(id(m), len(ids))
        out.append((type(m).__name__, ids[id(m)], m is o))
        if not first:
            return
        if type(m) in (dict, Dict) and isinstance(o, dict):
            out.append(list(m.keys()) == list(o.keys()))
            for (_, ov), (_, mv) in zip(o.items(), m.items(), strict=True):
                visit(ov, mv)
        elif type(m) in (list, tuple, List) and isinstance(o, (list, tuple)):
            out.append(len(m))
            for ov, mv in zip(o, m, strict=True):
                visit(ov, mv)
        elif isinstance(m, Custom):
            out.append(len(m.seen))
            visit(o.payload, m.payload)
        else:
            out.append(repr(m))

    visit(original, made)
    return out


_atoms = st.one_of(
    st.none(), st.booleans(), st.integers(), st.floats(allow_nan=False), st.text(max_size=4), st.binary(max_size=3)
)


@st.composite
def _aliased(draw: st.DrawFn) -> Any:
    """Nested data whose containers are reused in several places, sometimes holding themselves."""
    pool: list[Any] = []
    for _ in range(draw(st.integers(1, 8))):
        kind = draw(st.sampled_from(["list", "dict", "tuple", "atom", "custom", "dict_sub", "list_sub", "reuse"]))
        picks = draw(st.lists(st.integers(0, 100), max_size=3))
        items = [pool[p % len(pool)] for p in picks] if pool else []
        made: Any
        if kind == "list":
            made = list(items)
        elif kind == "dict":
            made = {f"k{i}": item for i, item in enumerate(items)}
        elif kind == "tuple":
            made = tuple(items)
        elif kind == "custom":
            made = Custom(list(items))
        elif kind == "dict_sub":
            made = Dict(enumerate(items))
        elif kind == "list_sub":
            made = List(items)
        elif kind == "reuse" and pool:
            made = [pool[picks[0] % len(pool)] if picks else pool[-1]] * 2
        else:
            made = draw(_atoms)
        if isinstance(made, list) and draw(st.booleans()):
            made.append(made)  # holds itself
        pool.append(made)
    return pool


@settings(max_examples=300)
@given(value=_aliased())
def test_native_deep_copy_is_copy_deepcopy(value: Any) -> None:
    expected = copy.deepcopy(value)
    made = _native._deep_copy(value, copy.deepcopy)
    assert _shape(value, made) == _shape(value, expected)


def test_deep_copy_identity_rules() -> None:
    shared = {"k": [1, "a", b"b", 2.5, None, True]}
    unchanged = (1, "x", (2, b"y"))
    changed = (1, [2])
    loop: list[Any] = [shared]
    loop.append(loop)
    value = [shared, shared, unchanged, changed, changed, loop]
    made = _native._deep_copy(value, copy.deepcopy)
    assert _shape(value, made) == _shape(value, copy.deepcopy(value))
    assert made[0] is made[1] and made[0] is not shared and made[0]["k"][1] is shared["k"][1]
    assert made[2] is unchanged and made[3] is made[4] and made[3] is not changed and made[3][1] is not changed[1]
    assert made[5][1] is made[5] and made[5][0] is made[0]


def test_values_of_other_types_get_copy_deepcopy_with_the_memo_so_far() -> None:
    inner = [1, 2]
    custom = Custom(inner)
    value = {"first": inner, "custom": custom, "sub": Dict(a=inner), "listsub": List([inner])}
    made = _native._deep_copy(value, copy.deepcopy)
    assert made["custom"].payload is made["first"]  # the memo handed to Python knew the native copy
    assert made["custom"].seen == sorted([id(value), id(inner)])
    assert type(made["sub"]) is Dict and made["sub"]["a"] is made["first"]
    assert type(made["listsub"]) is List and made["listsub"][0] is made["first"]


def test_deep_nesting_copies_or_raises_recursion_error_as_deepcopy_does() -> None:
    nested: Any = []
    for level in range(100):
        nested = [level, {"d": (nested,)}]
    assert repr(_native._deep_copy(nested, copy.deepcopy)) == repr(copy.deepcopy(nested))
    very: Any = []
    for _ in range(100_000):
        very = [very]
    with pytest.raises(RecursionError):
        copy.deepcopy(very)
    with pytest.raises(RecursionError):
        _native._deep_copy(very, copy.deepcopy)


def test_a_dict_changed_by_python_code_during_the_copy_raises_as_deepcopy_does() -> None:
    class Grower:
        def __init__(self, target: dict[str, Any]) -> None:
            self.target = target

        def __deepcopy__(self, memo: dict[int, Any]) -> Grower:
            self.target["added"] = 1
            return self

    for copier in (copy.deepcopy, lambda v: _native._deep_copy(v, copy.deepcopy)):
        value: dict[str, Any] = {}
        value["grower"] = Grower(value)
        value["after"] = 2
        with pytest.raises(RuntimeError, match="dictionary changed size during iteration"):
            copier(value)


def test_copy_stand_in(monkeypatch: pytest.MonkeyPatch) -> None:
    module = _copy.stand_in()
    assert module.copy is copy.copy and module.Error is copy.Error and "deepcopy" in dir(module)
    memo: dict[int, Any] = {}
    value = [[1]]
    assert module.deepcopy(value, memo) == value and id(value) in memo  # a given memo: copy.deepcopy itself
    calls: list[Any] = []

    def theirs(x: Any, memo: Any = None, _nil: Any = None) -> Any:
        calls.append(x)
        return "theirs"

    monkeypatch.setattr(copy, "deepcopy", theirs)
    assert module.deepcopy(value) == "theirs" and calls == [value]


# ---------------------------------------------------------------------------- the seam: probe, breaker


def test_the_breaker_restores_the_tracer_method_on_a_native_failure(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    plain = _session(ZOO, spans=True)

    def broken(*args: Any, **kwargs: Any) -> Any:
        raise SystemError("native failure")

    with strands_offload.accelerated():
        monkeypatch.setattr(_native, "_span_message_events", broken)
        fast = _session(ZOO, spans=True)
        assert sdk_tracer.Tracer._add_event_messages is ORIGINAL_ADD_EVENT_MESSAGES
        assert sdk_streaming.copy is not copy  # the other replacements stay
    assert fast == plain
    warned = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert len(warned) == 1 and "Tracer._add_event_messages" in warned[0] and "native failure" in warned[0]


def test_the_breaker_restores_the_copy_globals_on_a_native_failure(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    plain = _session(ZOO, spans=False)

    def broken(*args: Any, **kwargs: Any) -> Any:
        raise SystemError("native failure")

    with strands_offload.accelerated():
        monkeypatch.setattr(_native, "_deep_copy", broken)
        fast = _session(ZOO, spans=False)
        assert sdk_streaming.copy is copy and sdk_event_loop.copy is copy
        assert sdk_tracer.Tracer._add_event_messages is not ORIGINAL_ADD_EVENT_MESSAGES
    assert fast == plain
    warned = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert len(warned) == 1 and "strands.event_loop.streaming.copy" in warned[0]


def test_a_failed_turn_probe_leaves_the_turn_alone_and_accelerates_the_rest(monkeypatch: pytest.MonkeyPatch) -> None:
    _seam.probe.cache_clear()
    try:
        monkeypatch.setattr(sdk_streaming, "_normalize_messages", lambda messages: messages)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            assert strands_offload.accelerate() is True
            assert strands_offload.accelerate() is True
        ours = [w for w in caught if "accelerate-turn is unavailable" in str(w.message)]
        assert len(ours) == 1
        assert sdk_streaming.copy is copy and sdk_event_loop.copy is copy
        assert sdk_tracer.Tracer._add_event_messages is ORIGINAL_ADD_EVENT_MESSAGES
        others = [t for t in _seam.ACCELERATE_TARGETS if t.feature == "accelerate"]
        assert all(t in _accelerate._SWAPPED for t in others)
        strands_offload.deaccelerate()
    finally:
        monkeypatch.undo()
        _seam.probe.cache_clear()
    assert strands_offload.accelerate() and all(t in _accelerate._SWAPPED for t in TURN_TARGETS)


def test_instance_overrides_and_replaced_rules_run_the_sdk_method(monkeypatch: pytest.MonkeyPatch) -> None:
    """A tracer whose methods or serialize were replaced gets the SDK's method, with their code."""
    seen: list[str] = []

    def tagging(obj: Any) -> str:
        seen.append("serialize")
        return "tagged"

    def run() -> Any:
        tracer = sdk_tracer.Tracer()
        tracer._redact = lambda name, value: f"<{value}>"  # type: ignore[method-assign]
        span = TracerProvider().get_tracer("t").start_span("s")
        tracer._add_event_messages(span, plain_history(3))
        with monkeypatch.context() as patch:
            patch.setattr(sdk_tracer, "serialize", tagging)
            sdk_tracer.Tracer()._add_event_messages(span, plain_history(2))
        return [(e.name, dict(e.attributes or {})) for e in span.events]

    plain, fast = _twice(run)
    assert fast == plain and seen == ["serialize"] * 4
    assert plain[0][1]["content"].startswith("<[") and plain[-1][1]["content"] == "tagged"


# ---------------------------------------------------------------------------- threads


def _requests_only() -> list[str]:
    # No fixed tracking ids here (a process-wide switch): the model's requests carry none anyway.
    model = RecordingModel()
    return _turns(make_agent(copy.deepcopy(ZOO), model), model, spans=False, prompts=("next?", "again"))[0]  # type: ignore[no-any-return]


def test_sessions_in_threads_while_accelerate_is_switched_on_and_off() -> None:
    expected = _requests_only()
    results: list[Any] = []
    errors: list[BaseException] = []
    stop = threading.Event()

    def worker() -> None:
        try:
            for _ in range(3):
                results.append(_requests_only())
        except BaseException as error:  # reported below
            errors.append(error)

    def toggler() -> None:
        while not stop.is_set():
            strands_offload.accelerate()
            strands_offload.deaccelerate()

    threads = [threading.Thread(target=worker) for _ in range(3)]
    switch = threading.Thread(target=toggler)
    switch.start()
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    stop.set()
    switch.join()
    assert not errors
    assert len(results) == 9 and all(result == expected for result in results)
