"""accelerate(): strands-agents' own behaviour, unchanged but for speed, switched on and off in place.

Differential tests run the SDK's plugin, context manager and a whole Agent session twice, without
and with accelerate(), and compare everything they produce byte for byte.
"""

from __future__ import annotations

import copy
import importlib
import json
import logging
import re
import warnings
from collections.abc import Callable, Iterator
from typing import Any

import pytest
import strands._context_manager.retrieval_tool as sdk_retrieval
import strands._context_manager.stash as sdk_stash
import strands.models.model as sdk_model
import strands.storage as sdk_storage
import strands.vended_plugins.context_offloader.plugin as sdk_plugin
import strands.vended_plugins.context_offloader.search as sdk_search
import strands_offload
from _agent_harness import comparable, run
from _cm_conversations import PipelineCase, assert_same_outcome, pipeline_cases, run_case, sweep_conversation
from _cm_conversations import tool_result as make_tool_result
from _cm_conversations import tool_use as make_tool_use
from _cm_harness import REFERENCE, fixed_tracking_ids
from hypothesis import HealthCheck, given, settings
from strands.experimental.context_manager import ContextManager as SdkContextManager
from strands.vended_plugins.context_offloader import ContextOffloader as SdkOffloader
from strands_offload import _accelerate, _seam
from strands_offload.demo.long_session import canonical, run_long_session
from strands_offload.demo.scenario import make_service_log, run_log_triage

PRESETS = ("proactive_summarization", "large_tool_offloading", "overflow_protection", "stale_tool_cleanup")


def _targets() -> dict[_seam.SwapTarget, Any]:
    return {target: _seam.swap_get(target) for target in _seam.ACCELERATE_TARGETS}


ORIGINALS = _targets()


@pytest.fixture(autouse=True)
def _restored() -> Iterator[None]:
    """Every test starts and ends with strands-agents as installed."""
    strands_offload.deaccelerate()
    assert _targets() == ORIGINALS
    yield
    strands_offload.deaccelerate()
    assert all(_seam.swap_get(t) is original for t, original in ORIGINALS.items())


_WALL_CLOCK = re.compile(r', "timeToFirstByteMs": \d+')


def dump(messages: Any) -> str:
    """Messages as JSON text without the one wall-clock figure the SDK records (absent when under 1 ms)."""
    return _WALL_CLOCK.sub("", json.dumps(messages, default=repr))


def twice(action: Callable[[], Any]) -> tuple[Any, Any]:
    """``action()`` on strands-agents as installed, then accelerated (message tracking ids numbered alike)."""
    with fixed_tracking_ids():
        plain = action()
    with strands_offload.accelerated() as active, fixed_tracking_ids():
        assert active and _accelerate.is_accelerated()
        fast = action()
    return plain, fast


# ---------------------------------------------------------------------------- switching on and off


def test_accelerate_swaps_every_target_and_deaccelerate_puts_back_the_same_objects() -> None:
    assert strands_offload.accelerate() is True
    swapped = _targets()
    for target, original in ORIGINALS.items():
        assert swapped[target] is not original, target.dotted
    assert sdk_plugin.json is sdk_stash.json is sdk_retrieval.json  # one stand-in
    assert sdk_plugin._search_content is sdk_search._search_content is sdk_retrieval._search_content
    assert sdk_search._search_content.__wrapped__ is ORIGINALS[_seam.ACCELERATE_TARGETS[0]]
    assert json.dumps is ORIGINALS[_seam.ACCELERATE_TARGETS[3]].dumps  # json itself untouched
    strands_offload.deaccelerate()
    for target, original in ORIGINALS.items():
        assert _seam.swap_get(target) is original, target.dotted
    assert sdk_plugin.json is json


def test_accelerate_is_idempotent(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, logger=_accelerate.__name__)
    assert strands_offload.accelerate() and strands_offload.accelerate()
    first = _targets()
    assert strands_offload.accelerate()
    assert _targets() == first
    infos = [r.getMessage() for r in caplog.records if r.levelno == logging.INFO]
    assert len(infos) == 1 and infos[0].endswith("| strands-agents hot paths accelerated")
    for target in _seam.ACCELERATE_TARGETS:
        assert target.dotted in infos[0]
    strands_offload.deaccelerate()
    strands_offload.deaccelerate()
    assert _targets() == ORIGINALS
    assert [r.getMessage().split(" | ")[1] for r in caplog.records if r.levelno == logging.INFO] == [
        "strands-agents hot paths accelerated",
        "strands-agents hot paths restored",
    ]


def test_accelerated_context_manager() -> None:
    with strands_offload.accelerated() as active:
        assert active and _targets() != ORIGINALS
        with strands_offload.accelerated():
            pass
        assert _targets() != ORIGINALS  # the inner block leaves the outer one accelerated
    assert _targets() == ORIGINALS
    strands_offload.accelerate()
    with strands_offload.accelerated():
        pass
    assert _targets() != ORIGINALS  # accelerated before the block: stays so


def test_accelerated_context_manager_restores_on_error() -> None:
    with pytest.raises(RuntimeError, match="boom"), strands_offload.accelerated():
        raise RuntimeError("boom")
    assert _targets() == ORIGINALS


def test_deaccelerate_leaves_a_later_replacement_alone(caplog: pytest.LogCaptureFixture) -> None:
    original = sdk_stash._encode
    strands_offload.accelerate()

    def theirs(*args: Any, **kwargs: Any) -> bytes:
        return b"theirs"

    sdk_stash._encode = theirs
    try:
        strands_offload.deaccelerate()
        assert sdk_stash._encode is theirs
        assert "replaced by someone else" in caplog.text
    finally:
        sdk_stash._encode = original
    assert _targets() == ORIGINALS


def test_names_are_exported_lazily() -> None:
    for name in ("accelerate", "deaccelerate", "accelerated"):
        assert name in strands_offload.__all__
        assert getattr(strands_offload, name) is getattr(_accelerate, name)


# ---------------------------------------------------------------------------- a failed check swaps nothing


def _clear_seam_caches() -> None:
    for cached in (_seam.probe, _seam.storage_markers, _seam.re_parser, _seam.re_constants, _seam.re_extra_cases):
        cached.cache_clear()


@pytest.mark.parametrize(
    "breaker, reason",
    [
        (lambda mp: mp.delattr(sdk_stash, "_encode"), "has no _encode"),
        (lambda mp: mp.setattr(sdk_plugin, "json", object()), "is not the json module"),
        (lambda mp: mp.setattr(sdk_search, "_search_content", lambda text: text), "takes ['text']"),
        (lambda mp: mp.delattr(sdk_model, "_count_content_block_tokens"), "has no _count_content_block_tokens"),
        (
            lambda mp: mp.setattr(sdk_model.Model, "count_tokens", lambda self, messages: 0),
            "no longer calls _estimate_tokens_with_heuristic",
        ),
    ],
    ids=["missing", "json", "signature", "fallback", "count_tokens"],
)
def test_a_failed_probe_warns_once_and_swaps_nothing(
    breaker: Callable[[pytest.MonkeyPatch], None], reason: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    _clear_seam_caches()
    try:
        breaker(monkeypatch)
        before = {t: getattr(importlib.import_module(t.module), t.name, None) for t in _seam.ACCELERATE_TARGETS}
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            assert strands_offload.accelerate() is False
            assert strands_offload.accelerate() is False
            with strands_offload.accelerated() as active:
                assert active is False
        ours = [w for w in caught if str(w.message).startswith("strands_offload: accelerate is unavailable")]
        assert len(ours) == 1 and reason in str(ours[0].message)
        after = {t: getattr(importlib.import_module(t.module), t.name, None) for t in _seam.ACCELERATE_TARGETS}
        assert after == before and not _accelerate.is_accelerated()
    finally:
        monkeypatch.undo()
        _clear_seam_caches()
    assert strands_offload.accelerate() is True


# ---------------------------------------------------------------------------- the offloader plugin

LOG = make_service_log(400_000, error_every=701)
ROWS = {"items": [{"id": i, "name": f"customer {i}", "city": "Zürich" if i % 5 else "東京"} for i in range(3_000)]}


def _offloader_run(content: list[dict[str, Any]], retrievals: list[dict[str, Any]]) -> Any:
    plugin = SdkOffloader(sdk_storage.InMemoryStorage(), max_result_tokens=2_000, preview_tokens=300)
    agent, results = run(plugin, copy.deepcopy(content), retrievals)
    return comparable(results), dump(agent.messages)


RETRIEVALS = [
    {"reference": 0, "pattern": "ERROR", "context_lines": 2},
    {"reference": 0, "pattern": r"ERROR (auth|billing) request_id=r\d+"},
    {"reference": 0, "pattern": r"(?<=ERROR )\w+"},
    {"reference": 0, "line_range": {"start": 100, "end": 180}},
    {"reference": 0, "line_range": {"start": 10**6, "end": 10**6 + 5}},
    {"reference": 0, "pattern": "(unclosed"},
    {"reference": 1, "pattern": "Zürich", "context_lines": 0},
    {"reference": 1},
]


def test_offloader_conversation_is_unchanged() -> None:
    content = [{"text": LOG}, {"json": ROWS}, {"text": ""}]
    plain, fast = twice(lambda: _offloader_run(content, RETRIEVALS))
    assert fast == plain
    assert "[Offloaded: 3 blocks" in plain[1] and "match" in plain[1]


def test_offloader_log_triage_scenario_is_unchanged() -> None:
    def scenario() -> str:
        result = run_log_triage(SdkOffloader(sdk_storage.InMemoryStorage()), LOG)
        return dump(result.messages)

    plain, fast = twice(scenario)
    assert fast == plain and "Search finished: [" in plain


# ---------------------------------------------------------------------------- the context manager


def _preset_case(strategies: list[Any] | None) -> PipelineCase:
    messages = sweep_conversation()
    for turn in range(5):
        messages.append({"role": "assistant", "content": [make_tool_use(f"tu_more_{turn}", "read_file")]})
        body = {"json": ROWS} if turn == 1 else {"text": "ok\n" * (50 if turn else 5_000)}
        messages.append({"role": "user", "content": [make_tool_result(f"tu_more_{turn}", "success", body)]})
    messages.append({"role": "user", "content": [{"text": "summing up?"}]})
    for index, message in enumerate(messages):
        message["tracking_id"] = f"p{index}"
    return PipelineCase(
        history=messages[:10],
        arrivals=messages[10:],
        strategies=strategies,
        context_window_limit=60_000,
        overflow_rounds=1,
        storage="sdk",
        retrievals=[
            {"reference": 0},
            {"reference": 1, "pattern": "ERROR"},
            {"reference": 2, "line_range": {"start": 2}},
        ],
    )


@pytest.mark.parametrize("strategies", [*([p] for p in PRESETS), list(PRESETS), None], ids=[*PRESETS, "all", "default"])
def test_context_manager_presets_are_unchanged(strategies: list[str] | None) -> None:
    plain, fast = twice(lambda: run_case(REFERENCE, _preset_case(strategies)))
    assert plain.error is None
    assert_same_outcome(plain, fast)


@settings(max_examples=12, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(case=pipeline_cases())
def test_context_manager_generated_pipelines_are_unchanged(case: PipelineCase) -> None:
    plain, fast = twice(lambda: run_case(REFERENCE, copy.deepcopy(case)))
    assert_same_outcome(plain, fast)


def test_context_manager_auto_long_session_is_unchanged() -> None:
    def session() -> tuple[str, list[int], str]:
        result = run_long_session(SdkContextManager.from_strategy("auto"))
        return canonical(result.messages), result.usage, result.answer

    plain, fast = twice(session)
    assert fast == plain and any("[Truncated: " in text for text in [plain[0]])


# ---------------------------------------------------------------------------- a whole agent session


def test_agent_session_end_to_end_is_unchanged() -> None:
    """Offloader plugin and context manager on one Agent, several turns, with tools and retrievals."""
    from strands_offload.bench.cases import scripted_triage_agent

    def session() -> tuple[str, list[str]]:
        agent, model = scripted_triage_agent(LOG, ROWS, window=40_000, page=(5, 30))
        agent("triage the api")
        agent("and the rows?")
        return dump(agent.messages), [dump(call) for call in model.calls]

    plain, fast = twice(session)
    assert fast == plain
    assert "[Offloaded: 1 blocks" in plain[0] and "match" in plain[0]


def test_the_native_paths_answer_in_these_runs(monkeypatch: pytest.MonkeyPatch) -> None:
    """The differential runs above go through the native code, not only the fallbacks."""
    from strands_offload._accelerate import _json, _replacements

    answered: dict[str, int] = {"dumps": 0, "dumps_len": 0, "search": 0}

    def counting(name: str, function: Callable[..., Any]) -> Callable[..., Any]:
        def call(*args: Any, **kwargs: Any) -> Any:
            result = function(*args, **kwargs)
            answered[name] += result is not None
            return result

        return call

    monkeypatch.setattr(_json, "native_dumps", counting("dumps", _json.native_dumps))
    monkeypatch.setattr(_replacements, "native_dumps", counting("dumps", _replacements.native_dumps))
    monkeypatch.setattr(_replacements, "dumps_len", counting("dumps_len", _replacements.dumps_len))
    monkeypatch.setattr(_replacements, "native_search", counting("search", _replacements.native_search))
    with strands_offload.accelerated():
        _offloader_run([{"text": LOG}, {"json": ROWS}], RETRIEVALS[:4])
        run_case(REFERENCE, _preset_case(["large_tool_offloading"]))
    assert all(count > 0 for count in answered.values()), answered
