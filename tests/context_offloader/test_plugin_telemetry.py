"""The plugin's savings ledger: OpenTelemetry metrics, spans and ``savings()``.

A real ``Agent`` with a scripted model offloads two results, greps one and pages the other. The
expected figures are computed here from the conversation and the originals, with the SDK's own
token counting, never from the plugin's counters.
"""

from __future__ import annotations

import asyncio
import importlib
import json
import threading
from typing import Any

import pytest
from _agent_harness import RETRIEVE, references_in
from _telemetry_support import Telemetry, recorded
from strands import Agent, tool
from strands.models.model import Model
from strands_offload.context_offloader import ContextOffloader
from strands_offload.demo.scripted_model import Reply, ScriptedModel, ToolCall
from strands_offload.storage import InMemoryStorage
from strands_offload.telemetry import Savings

LOG = "\n".join(
    f"2026-12-02T10:{i % 60:02d}:00Z worker-{i % 7} request {i} status {'ERROR' if i % 97 == 0 else 'ok'}"
    for i in range(3000)
)
RECORDS = [{"id": i, "name": f"user-{i}", "email": f"user{i}@example.com", "active": i % 3 == 0} for i in range(800)]
SECRET_WORDS = ("worker-3", "user-17", "example.com")


@pytest.fixture
def telemetry(monkeypatch: pytest.MonkeyPatch) -> Telemetry:
    """Providers for the component under test, and the SDK's own spans routed to the same exporter."""
    return recorded(monkeypatch)


def _sdk_tokens(block: dict[str, Any]) -> int:
    """Tokens of one content block as the SDK's base ``count_tokens`` estimates them."""
    return asyncio.run(Model.count_tokens(_Counting(), [{"role": "user", "content": [block]}]))


class _Counting(ScriptedModel):
    def __init__(self) -> None:
        super().__init__(lambda messages: Reply("done"))


def _session(plugin: ContextOffloader, *, grep: str = "ERROR") -> Agent:
    """Two big results in one turn, then a grep of the log and a page of the records."""

    @tool
    def read_log() -> str:
        """Return the log."""
        return LOG

    @tool
    def list_users() -> dict[str, Any]:
        """Return the user records."""
        return {"status": "success", "content": [{"json": RECORDS}]}

    state: dict[str, Any] = {"step": 0}

    def script(messages: list[dict[str, Any]]) -> Reply:
        step = state["step"]
        state["step"] += 1
        if step == 0:
            return Reply("", [ToolCall("read_log", {}, "call_log"), ToolCall("list_users", {}, "call_users")])
        if step == 1:
            results = {b["toolResult"]["toolUseId"]: b["toolResult"] for b in messages[-1]["content"]}
            state["log"] = references_in(results["call_log"]["content"][0]["text"])[0]
            state["users"] = references_in(results["call_users"]["content"][0]["text"])[0]
            return Reply("", [ToolCall(RETRIEVE, {"reference": state["log"], "pattern": grep}, "call_grep")])
        if step == 2:
            page = {"reference": state["users"], "line_range": {"start": 1, "end": 5}}
            return Reply("", [ToolCall(RETRIEVE, page, "call_page")])
        return Reply("done")

    agent = Agent(model=ScriptedModel(script), tools=[read_log, list_users], plugins=[plugin], callback_handler=None)
    agent("go")
    return agent


def _without_tracking_ids(messages: list[Any]) -> list[Any]:
    """Messages without their random tracking ids and the SDK's timing metadata (not our output)."""
    return [{k: v for k, v in message.items() if k not in ("tracking_id", "metadata")} for message in messages]


def _results(agent: Agent) -> dict[str, dict[str, Any]]:
    return {
        b["toolResult"]["toolUseId"]: b["toolResult"] for m in agent.messages for b in m["content"] if "toolResult" in b
    }


def test_a_session_that_offloads_greps_and_pages_is_measured_from_the_conversation(telemetry: Telemetry) -> None:
    plugin = ContextOffloader(
        InMemoryStorage(), meter_provider=telemetry.meter_provider, tracer_provider=telemetry.tracer_provider
    )
    agent = _session(plugin)
    results = _results(agent)

    # Expected, from the originals and what the model saw instead.
    originals = {"call_log": {"text": LOG}, "call_users": {"json": RECORDS}}
    kept_out = 0
    for call_id, original in originals.items():
        shown = results[call_id]
        assert shown["content"][0]["text"].startswith("[Offloaded: ")
        original_tokens = _sdk_tokens(
            {"toolResult": {"toolUseId": call_id, "status": "success", "content": [original]}}
        )
        kept_out += original_tokens - _sdk_tokens({"toolResult": shown})
    stored_bytes = len(LOG.encode()) + len(json.dumps(RECORDS, indent=2).encode())
    returned = {
        call_id: _sdk_tokens({"text": results[call_id]["content"][0]["text"]}) for call_id in ("call_grep", "call_page")
    }

    assert telemetry.total("strands_offload.offloads") == 2
    assert telemetry.total("strands_offload.offloads", **{"gen_ai.tool.name": "read_log"}) == 1
    assert telemetry.total("strands_offload.offloads", **{"strands_offload.storage": "InMemoryStorage"}) == 2
    assert telemetry.total("strands_offload.offload.tokens_kept_out") == kept_out
    assert telemetry.total("strands_offload.offload.bytes_stored") == stored_bytes
    assert telemetry.total("strands_offload.retrievals", **{"strands_offload.retrieval.mode": "grep"}) == 1
    assert telemetry.total("strands_offload.retrievals", **{"strands_offload.retrieval.mode": "line_range"}) == 1
    assert telemetry.total("strands_offload.retrievals", **{"strands_offload.retrieval.outcome": "ok"}) == 2
    assert telemetry.total("strands_offload.retrieval.tokens_returned") == sum(returned.values())
    durations = telemetry.points()["strands_offload.native.duration"]
    assert sorted(labels["strands_offload.operation"] for labels, _ in durations) == ["grep", "line_range", "measure"]
    assert sum(point.count for _, point in durations) == 4

    assert (
        plugin.savings(agent)
        == plugin.savings()
        == Savings(
            offloads=2,
            tokens_kept_out=kept_out,
            bytes_stored=stored_bytes,
            retrievals=2,
            tokens_retrieved=sum(returned.values()),
            native_seconds=plugin.savings().native_seconds,
        )
    )
    assert plugin.savings().native_seconds > 0

    # One span per offload and retrieval, each a child of its event-loop cycle's span.
    spans = telemetry.ours()
    by_call = {span.attributes["gen_ai.tool.call.id"]: span for span in spans}
    assert sorted(by_call) == ["call_grep", "call_log", "call_page", "call_users"]
    cycles = {
        s.context.span_id: s for s in telemetry.exporter.get_finished_spans() if s.name == "execute_event_loop_cycle"
    }
    for call_id, span in by_call.items():
        assert span.parent is not None and span.parent.span_id in cycles, call_id
    assert by_call["call_log"].attributes["strands_offload.counter"] == "heuristic"
    assert by_call["call_log"].attributes["strands_offload.bytes_stored"] == len(LOG.encode())
    assert by_call["call_grep"].attributes["strands_offload.tokens.returned"] == returned["call_grep"]
    assert by_call["call_users"].attributes["gen_ai.tool.name"] == "list_users"


def test_nothing_is_exported_that_names_content_keys_or_paths(telemetry: Telemetry, tmp_path: Any) -> None:
    from strands_offload.storage import LocalFileStorage

    plugin = ContextOffloader(
        LocalFileStorage(str(tmp_path / "offloads")),
        meter_provider=telemetry.meter_provider,
        tracer_provider=telemetry.tracer_provider,
    )
    agent = _session(plugin)
    references = [r for result in _results(agent).values() for r in references_in(result["content"][0].get("text", ""))]
    assert references
    forbidden = [*SECRET_WORDS, *references, str(tmp_path), "offloader/"]
    exported: list[str] = []
    for labels, _ in (pair for pairs in telemetry.points().values() for pair in pairs):
        exported.extend(str(value) for value in labels.values())
    for span in telemetry.ours():
        exported.extend(str(value) for value in span.attributes.values())
        exported.append(span.name)
    assert exported
    for value in exported:
        for word in forbidden:
            assert word not in value, (word, value)


def test_failed_retrievals_count_apart_with_the_exception_type_only(telemetry: Telemetry) -> None:
    plugin = ContextOffloader(
        InMemoryStorage(), meter_provider=telemetry.meter_provider, tracer_provider=telemetry.tracer_provider
    )

    @tool
    def noop() -> str:
        """Nothing."""
        return "x"

    calls = iter(
        [
            Reply("", [ToolCall(RETRIEVE, {"reference": "mem_404_nothing_0"}, "call_missing")]),
            Reply("done"),
        ]
    )
    agent = Agent(model=ScriptedModel(lambda m: next(calls)), tools=[noop], plugins=[plugin], callback_handler=None)
    agent("go")
    assert _results(agent)["call_missing"]["status"] == "error"
    assert telemetry.total("strands_offload.retrievals", **{"strands_offload.retrieval.outcome": "not_found"}) == 1
    assert "strands_offload.retrieval.tokens_returned" not in telemetry.points()
    (span,) = telemetry.ours()
    assert span.attributes["error.type"] == "ValueError"
    assert span.events == () or all("exception.message" not in e.attributes for e in span.events)
    assert plugin.savings() == Savings(retrievals_failed=1)


def test_a_call_that_offloads_nothing_emits_nothing(telemetry: Telemetry) -> None:
    plugin = ContextOffloader(
        InMemoryStorage(), meter_provider=telemetry.meter_provider, tracer_provider=telemetry.tracer_provider
    )

    @tool
    def small() -> str:
        """A small result."""
        return "fits in context"

    calls = iter([Reply("", [ToolCall("small", {}, "call_small")]), Reply("done")])
    agent = Agent(model=ScriptedModel(lambda m: next(calls)), tools=[small], plugins=[plugin], callback_handler=None)
    agent("go")
    assert telemetry.points() == {}
    assert telemetry.ours() == []
    assert plugin.savings() == Savings()


def test_telemetry_off_records_nothing_and_changes_no_output(telemetry: Telemetry) -> None:
    on = ContextOffloader(
        InMemoryStorage(), meter_provider=telemetry.meter_provider, tracer_provider=telemetry.tracer_provider
    )
    off = ContextOffloader(
        InMemoryStorage(),
        telemetry=False,
        meter_provider=telemetry.meter_provider,
        tracer_provider=telemetry.tracer_provider,
    )
    seen_on = _without_tracking_ids(_session(on).messages)
    count_on = len(telemetry.ours())
    seen_off = _without_tracking_ids(_session(off).messages)
    assert seen_on == seen_off
    assert len(telemetry.ours()) == count_on
    assert telemetry.total("strands_offload.offloads") == 2  # the first session's only
    assert off.savings() == Savings()


def test_agents_in_threads_and_gathered_calls_keep_their_own_totals(telemetry: Telemetry) -> None:
    # One plugin (unified storage serves many agents) shared by two agents running in two threads.
    shared = ContextOffloader(
        InMemoryStorage(), meter_provider=telemetry.meter_provider, tracer_provider=telemetry.tracer_provider
    )
    agents: dict[str, Agent] = {}

    def one(grep: str) -> None:
        agents[grep] = _session(shared, grep=grep)

    threads = [threading.Thread(target=one, args=(pattern,)) for pattern in ("ERROR", "worker-1")]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert sorted(agents) == ["ERROR", "worker-1"]
    for agent in agents.values():
        mine = shared.savings(agent)
        results = _results(agent)
        expected = sum(_sdk_tokens({"text": results[c]["content"][0]["text"]}) for c in ("call_grep", "call_page"))
        assert (mine.offloads, mine.retrievals, mine.tokens_retrieved) == (2, 2, expected)
    first, second = (shared.savings(agent) for agent in agents.values())
    assert first.tokens_retrieved != second.tokens_retrieved  # different greps: the totals did not mix
    assert shared.savings().tokens_retrieved == first.tokens_retrieved + second.tokens_retrieved
    assert telemetry.total("strands_offload.offloads") == 4

    plugin = ContextOffloader(meter_provider=telemetry.meter_provider, tracer_provider=telemetry.tracer_provider)

    # One plugin, one agent, four tool calls gathered concurrently by the SDK's executor.
    @tool
    async def dump(n: int) -> str:
        """Return a big text."""
        await asyncio.sleep(0)
        return f"line {n}\n" * 20_000

    calls = iter([Reply("", [ToolCall("dump", {"n": n}, f"call_{n}") for n in range(4)]), Reply("done")])
    agent = Agent(model=ScriptedModel(lambda m: next(calls)), tools=[dump], plugins=[plugin], callback_handler=None)
    agent("go")
    results = _results(agent)
    expected_bytes = sum(len((f"line {n}\n" * 20_000).encode()) for n in range(4))
    assert all(results[f"call_{n}"]["content"][0]["text"].startswith("[Offloaded: ") for n in range(4))
    assert plugin.savings(agent).offloads == 4
    assert plugin.savings(agent).bytes_stored == expected_bytes
    assert plugin.savings() == plugin.savings(agent)


def test_the_readme_documents_every_metric_with_its_unit() -> None:
    from pathlib import Path

    from strands_offload.telemetry import METRICS

    readme = (Path(__file__).resolve().parents[2] / "README.md").read_text(encoding="utf-8")
    for name, (kind, unit, what) in METRICS.items():
        assert f"| `{name}` | {kind} | `{unit}` | {what} |" in readme, name


def test_a_failing_ledger_changes_nothing_the_model_sees(monkeypatch: pytest.MonkeyPatch) -> None:
    from strands_offload import _ledger

    expected = _without_tracking_ids(_session(ContextOffloader(InMemoryStorage(), telemetry=False)).messages)

    def broken(*args: Any, **kwargs: Any) -> None:
        raise RuntimeError("exporter down")

    monkeypatch.setattr(_ledger.Ledger, "offload", broken)
    monkeypatch.setattr(_ledger.Ledger, "retrieval", broken)
    assert _without_tracking_ids(_session(ContextOffloader(InMemoryStorage())).messages) == expected


def test_global_providers_set_after_the_plugin_are_used_from_the_next_check(
    telemetry: Telemetry, monkeypatch: pytest.MonkeyPatch
) -> None:
    from opentelemetry import metrics, trace
    from strands_offload import _ledger, _seam

    # No global provider yet (this suite never sets one): the ledger keeps totals and makes nothing.
    assert _seam.global_metrics_unset()
    assert isinstance(trace.get_tracer_provider(), trace.ProxyTracerProvider)
    plugin = ContextOffloader(InMemoryStorage())
    _session(plugin)
    assert plugin.savings().offloads == 2 and plugin._ledger._instruments is None
    # A process sets its global providers (here for this test only: the API lets a process set them
    # once); with the recheck spacing at zero the next call sees them.
    monkeypatch.setattr(_ledger, "RECHECK_SECONDS", 0.0)
    monkeypatch.setattr(
        importlib.import_module("opentelemetry.metrics._internal"), "_METER_PROVIDER", telemetry.meter_provider
    )
    monkeypatch.setattr(trace, "get_tracer_provider", lambda: telemetry.tracer_provider)
    assert metrics.get_meter_provider() is telemetry.meter_provider
    monkeypatch.setattr(plugin._ledger, "_next_check", 0.0)  # the spacing of the last look has run out
    _session(plugin)
    assert telemetry.total("strands_offload.offloads") == 2  # the second session's only
    assert len([s for s in telemetry.ours() if s.name == "strands_offload.offload"]) == 2
    assert plugin.savings().offloads == 4
