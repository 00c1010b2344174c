"""The context manager's savings ledger: edits, summarizer calls and retrievals, measured from outside.

A real ``Agent`` (scripted model, a 3,000-token window) pages through an API: pages are truncated on
arrival, pings dropped on arrival, the oldest messages summarized by a second scripted model, and a
stashed page grepped back with ``retrieve_context``. The script snapshots what each model request
sent; the expected figures are computed from those snapshots and the originals with the SDK's own
``count_tokens``, never from the manager's counters.
"""

from __future__ import annotations

import asyncio
import json
import re
from typing import Any

import pytest
from _telemetry_support import Telemetry, recorded
from strands import Agent, tool
from strands.models.model import Model
from strands_offload.context_manager import ContextManager, Offload
from strands_offload.context_manager.methods.summarize import DEFAULT_SYSTEM_PROMPT
from strands_offload.demo.scripted_model import Reply, ScriptedModel, ToolCall
from strands_offload.telemetry import Savings

PAGES = 6
_REF = re.compile(r"\[ref: ([^\]]+)\]")
SUMMARY = "Pages so far list orders; a few failed."


def page_text(n: int) -> str:
    rows = [{"id": f"ord_{n}_{i}", "status": "failed" if i % 9 == 4 else "shipped", "total": i * 7} for i in range(40)]
    return json.dumps({"page": n, "orders": rows}, indent=1)


PING = "pong " * 60  # 75 tokens: under the truncation threshold, over the drop threshold


def _sdk_count(messages: list[Any], system_prompt: str | None = None) -> int:
    return asyncio.run(Model.count_tokens(_counting_model(), messages, None, system_prompt))


def _counting_model() -> ScriptedModel:
    return ScriptedModel(lambda messages: Reply("done"))


def _block_tokens(block: dict[str, Any]) -> int:
    return _sdk_count([{"role": "user", "content": [block]}])


@pytest.fixture
def telemetry(monkeypatch: pytest.MonkeyPatch) -> Telemetry:
    """Providers for the component under test, and the SDK's own spans routed to the same exporter."""
    return recorded(monkeypatch)


def _session(
    telemetry: Telemetry | None, *, caching: bool
) -> tuple[Agent, ContextManager, list[list[Any]], ScriptedModel]:
    """The session; with ``telemetry`` None, no provider (the ledger keeps the totals of ``savings()`` only)."""
    summarizer = ScriptedModel(lambda messages: Reply(SUMMARY))
    providers = (
        {}
        if telemetry is None
        else {
            "meter_provider": telemetry.meter_provider,
            "tracer_provider": telemetry.tracer_provider,
        }
    )
    manager = ContextManager(
        strategies=[
            Offload.truncate("tool_results", {"preview_tokens": 40}).when(threshold=200),
            Offload.drop(["tool::ping"]).when(threshold=20),
            Offload.summarize("*", {"model": summarizer}).when(utilization=0.5, preserve_recent=2),
        ],
        **providers,
    )
    sent: list[list[Any]] = []  # per model request: the message dicts it sent, and a deep copy of them

    @tool
    def fetch_page(n: int) -> str:
        """Return one page of orders."""
        return page_text(n)

    @tool
    def ping() -> str:
        """Check the API."""
        return PING

    def script(messages: list[Any]) -> Reply:
        sent.append([(message, json.loads(json.dumps(message))) for message in messages])
        step = len(sent) - 1
        if step < PAGES:
            calls = [ToolCall("fetch_page", {"n": step}, f"call_page_{step}")]
            if step == 1:
                calls.append(ToolCall("ping", {}, "call_ping"))
            return Reply("", calls)
        if step == PAGES:
            refs = [r for m in messages for b in m["content"] for r in _REF.findall(json.dumps(b))]
            return Reply("", [ToolCall("retrieve_context", {"reference": refs[-1], "pattern": "failed"}, "call_grep")])
        return Reply("done")

    model = ScriptedModel(script)
    model.update_config(context_window_limit=3_000, **({"cache_config": {"strategy": "auto"}} if caching else {}))
    agent = Agent(model=model, tools=[fetch_page, ping], context_manager=manager, callback_handler=None)
    agent("page through the orders")
    return agent, manager, sent, summarizer


def _expected(sent: list[list[Any]], summarizer: ScriptedModel) -> dict[str, Any]:
    """Every figure the ledger should report, from the requests' snapshots and the originals."""
    originals = {f"call_page_{n}": page_text(n) for n in range(PAGES)} | {"call_ping": PING}
    figures: dict[str, Any] = {"truncate": 0, "drop": 0, "summarize": 0, "removed": 0, "added": 0, "invalidating": 0}
    seen: set[str] = set()
    for request in sent:
        for _, copy in request:
            for block in copy["content"]:
                result = block.get("toolResult")
                if result is None or result["toolUseId"] not in originals or result["toolUseId"] in seen:
                    continue
                seen.add(result["toolUseId"])  # first sent: as the arrival pass left it
                original = {"toolResult": {**result, "content": [{"text": originals[result["toolUseId"]]}]}}
                if block == original:
                    continue
                text = result["content"][0]["text"]
                figures["truncate" if text.startswith("[Truncated") else "drop"] += 1
                figures["removed"] += _block_tokens(original)
                figures["added"] += _block_tokens(block)
    for previous, current in zip(sent, sent[1:], strict=False):
        # Kept: the same message, or an equal copy of it (the pipeline may rebuild a message it keeps).
        still = {id(message) for message, _ in current}
        copies = [copy for _, copy in current]
        gone = [copy for message, copy in previous if id(message) not in still and copy not in copies]
        markers = [
            b
            for _, copy in current
            for b in copy["content"]
            if b.get("text", "").startswith("[Summarized") and not any(b in old["content"] for _, old in previous)
        ]
        if not markers:
            continue
        figures["summarize"] += 1
        figures["removed"] += _sdk_count(gone)
        figures["added"] += sum(_block_tokens(b) for b in markers)
        figures["invalidating"] += 1  # it removed messages the previous request sent
    figures["summarizer_calls"] = len(summarizer.calls)
    figures["summarizer_input"] = sum(_sdk_count(call, DEFAULT_SYSTEM_PROMPT) for call in summarizer.calls)
    figures["summarizer_output"] = len(summarizer.calls) * max(1, len(SUMMARY) // 4)
    return figures


@pytest.mark.parametrize("caching", [True, False], ids=["prompt-cache", "no-cache"])
def test_a_session_that_truncates_drops_and_summarizes_is_measured_from_outside(
    telemetry: Telemetry, caching: bool
) -> None:
    agent, manager, sent, summarizer = _session(telemetry, caching=caching)
    want = _expected(sent, summarizer)
    assert want["truncate"] == PAGES and want["drop"] == 1 and want["summarize"] >= 1, want

    edits = {
        action: telemetry.total("strands_offload.context.edits", **{"strands_offload.action": action})
        for action in ("truncate", "drop", "summarize")
    }
    assert edits == {"truncate": want["truncate"], "drop": want["drop"], "summarize": want["summarize"]}
    assert telemetry.total("strands_offload.context.tokens_removed") == want["removed"]
    assert telemetry.total("strands_offload.context.tokens_added") == want["added"]
    invalidating = want["invalidating"] if caching else 0
    assert telemetry.total("strands_offload.context.cache_invalidating_edits") == invalidating
    assert telemetry.total("strands_offload.summarizer.calls") == want["summarizer_calls"] >= 1
    assert (
        telemetry.total("strands_offload.summarizer.tokens", **{"gen_ai.token.type": "input"})
        == want["summarizer_input"]
    )
    assert (
        telemetry.total("strands_offload.summarizer.tokens", **{"gen_ai.token.type": "output"})
        == want["summarizer_output"]
    )

    grep = next(
        b["toolResult"]
        for m in agent.messages
        for b in m["content"]
        if b.get("toolResult", {}).get("toolUseId") == "call_grep"
    )
    assert grep["status"] == "success"
    returned = _block_tokens({"toolResult": grep})
    assert telemetry.total("strands_offload.retrievals", **{"strands_offload.retrieval.mode": "grep"}) == 1
    assert telemetry.total("strands_offload.retrieval.tokens_returned") == returned

    total_edits = want["truncate"] + want["drop"] + want["summarize"]
    assert (
        manager.savings(agent)
        == manager.savings()
        == Savings(
            edits=total_edits,
            tokens_removed=want["removed"],
            tokens_added=want["added"],
            cache_invalidating_edits=invalidating,
            summarizer_calls=want["summarizer_calls"],
            summarizer_input_tokens=want["summarizer_input"],
            summarizer_output_tokens=want["summarizer_output"],
            retrievals=1,
            tokens_retrieved=returned,
            native_seconds=manager.savings().native_seconds,
        )
    )
    # Native time: the counting of the passes that edited, and the grep; the totals are the histogram's.
    durations = {
        labels["strands_offload.operation"]: point
        for labels, point in telemetry.points().get("strands_offload.native.duration", [])
    }
    assert set(durations) == {"measure", "grep"}
    assert 1 <= durations["measure"].count <= total_edits and durations["measure"].sum > 0
    assert durations["grep"].count == 1 and durations["grep"].sum > 0
    assert manager.savings().native_seconds == pytest.approx(sum(p.sum for p in durations.values()))
    spans = telemetry.ours()
    assert sorted(s.name for s in spans).count("strands_offload.context_edit") == total_edits
    summarized = [s for s in spans if s.attributes.get("strands_offload.action") == "summarize"]
    cycles = {
        s.context.span_id for s in telemetry.exporter.get_finished_spans() if s.name == "execute_event_loop_cycle"
    }
    assert summarized and all(s.parent is not None and s.parent.span_id in cycles for s in summarized)
    for span in spans:
        for value in span.attributes.values():
            assert "ord_" not in str(value) and "pong" not in str(value) and SUMMARY not in str(value)


@pytest.mark.parametrize("caching", [True, False], ids=["prompt-cache", "no-cache"])
def test_with_no_provider_the_totals_are_the_same(caching: bool) -> None:
    """No provider: requests and edits are queued and settled when read; the figures do not change."""
    agent, manager, sent, summarizer = _session(None, caching=caching)
    want = _expected(sent, summarizer)
    assert want["truncate"] == PAGES and want["drop"] == 1 and want["summarize"] >= 1, want
    assert not manager._ledger.metering and not manager._ledger.tracing
    grep = next(
        b["toolResult"]
        for m in agent.messages
        for b in m["content"]
        if b.get("toolResult", {}).get("toolUseId") == "call_grep"
    )
    savings = manager.savings(agent)
    assert savings.native_seconds > 0
    assert savings == Savings(
        edits=want["truncate"] + want["drop"] + want["summarize"],
        tokens_removed=want["removed"],
        tokens_added=want["added"],
        cache_invalidating_edits=want["invalidating"] if caching else 0,
        summarizer_calls=want["summarizer_calls"],
        summarizer_input_tokens=want["summarizer_input"],
        summarizer_output_tokens=want["summarizer_output"],
        retrievals=1,
        tokens_retrieved=_block_tokens({"toolResult": grep}),
        native_seconds=savings.native_seconds,
    )


def test_telemetry_off_changes_no_conversation(telemetry: Telemetry, monkeypatch: pytest.MonkeyPatch) -> None:
    on_agent, _, _, _ = _session(telemetry, caching=False)
    original = ContextManager.__init__

    def off(self: ContextManager, **kwargs: Any) -> None:
        original(self, **{**kwargs, "telemetry": False})

    monkeypatch.setattr(ContextManager, "__init__", off)
    before = len(telemetry.ours())
    off_agent, manager, _, _ = _session(telemetry, caching=False)
    strip = [{k: v for k, v in m.items() if k not in ("tracking_id", "metadata")} for m in on_agent.messages]
    assert strip == [{k: v for k, v in m.items() if k not in ("tracking_id", "metadata")} for m in off_agent.messages]
    assert len(telemetry.ours()) == before
    assert manager.savings() == Savings()


def test_an_emergency_truncation_counts_the_messages_it_elided(telemetry: Telemetry) -> None:
    # A conversation that alone fills the window: only the emergency truncation can act.
    history: list[Any] = [{"role": "user", "content": [{"text": "start"}]}]
    for n in range(10):
        history.append({"role": "assistant", "content": [{"text": f"note {n} " + "x" * 400}]})
        history.append({"role": "user", "content": [{"text": f"ok {n}"}]})
    history.append({"role": "assistant", "content": [{"text": "waiting"}]})
    sent: list[list[Any]] = []

    def script(messages: list[Any]) -> Reply:
        sent.append([json.loads(json.dumps(m)) for m in messages])
        return Reply("done")

    model = ScriptedModel(script)
    model.update_config(context_window_limit=900)
    manager = ContextManager(
        strategies=[], meter_provider=telemetry.meter_provider, tracer_provider=telemetry.tracer_provider
    )
    before = json.loads(json.dumps(history))
    agent = Agent(model=model, messages=history, context_manager=manager, callback_handler=None)
    agent("go on")
    first = sent[0]
    markers = [b for m in first for b in m["content"] if b.get("text", "").startswith("[... ")]
    # A message that took a marker is still there: compare without the markers.
    unmarked = [{**m, "content": [b for b in m["content"] if b not in markers]} for m in first]
    gone = [m for m in before if m not in unmarked]
    assert gone and markers
    edits = [s for s in telemetry.ours() if s.attributes.get("strands_offload.action") == "emergency_truncate"]
    assert edits and len(edits) == telemetry.total("strands_offload.context.edits") == manager.savings(agent).edits
    # Every pass left one marker; a later pass may elide an earlier marker with the messages around it.
    added_then_removed = sum(_block_tokens(b) for m in gone for b in m["content"] if b["text"].startswith("[... "))
    assert sum(s.attributes["strands_offload.messages"] for s in edits) == len(gone)
    assert (
        sum(s.attributes["strands_offload.tokens.added"] for s in edits)
        == sum(_block_tokens(b) for b in markers) + added_then_removed
    )
    assert sum(s.attributes["strands_offload.tokens.removed"] for s in edits) == _sdk_count(gone)


def test_a_failing_ledger_changes_no_conversation(telemetry: Telemetry, monkeypatch: pytest.MonkeyPatch) -> None:
    from strands_offload import _ledger

    def strip(agent: Agent) -> list[Any]:
        return [{k: v for k, v in m.items() if k not in ("tracking_id", "metadata")} for m in agent.messages]

    expected = strip(_session(telemetry, caching=True)[0])

    def broken(*args: Any, **kwargs: Any) -> None:
        raise RuntimeError("exporter down")

    for name in ("edit", "summarizer_call", "retrieval"):
        monkeypatch.setattr(_ledger.Ledger, name, broken)
    monkeypatch.setattr(_ledger.Ledger, "refresh", broken)  # after construction: on each model call
    assert strip(_session(telemetry, caching=True)[0]) == expected
