"""With no provider, the recorder queues model requests and replaced blocks and settles them later.

The totals read through ``savings()`` must be what recording each edit at once would give: every
edit judged against the request its agent sent before it, however many requests and edits were
queued, across agents and threads, and when a provider appears with records still queued.
"""

from __future__ import annotations

import gc
import importlib
import threading
import weakref
from typing import Any

import pytest
from _telemetry_support import Telemetry
from strands import Agent
from strands_offload._heuristic import block_tokens
from strands_offload._ledger import Ledger
from strands_offload._native import token_counter
from strands_offload.context_manager._edits import SETTLE_AT, EditRecorder
from strands_offload.demo.scripted_model import Reply, ScriptedModel


def _agent() -> Agent:
    model = ScriptedModel(lambda _messages: Reply("ok"))
    model.update_config(cache_config={"strategy": "auto"})
    return Agent(model=model, callback_handler=None)


def _message(text: str) -> dict[str, Any]:
    return {"role": "user", "content": [{"text": text}]}


def _replace(recorder: EditRecorder, agent: Agent, message: dict[str, Any], new_text: str, tokens: int) -> None:
    old = message["content"][0]
    new = {"text": new_text}
    message["content"][0] = new
    recorder.blocks_replaced(agent, "offload:truncate", [(message, old, new, tokens)], 0)


def test_queued_edits_are_judged_against_the_request_before_each() -> None:
    agent = _agent()
    recorder = EditRecorder(Ledger(), None)
    assert not (recorder.ledger.metering or recorder.ledger.tracing)  # this suite sets no global provider
    first = [_message("a" * 80), _message("b" * 80)]
    recorder.request_sent(agent, first)
    _replace(recorder, agent, first[0], "A", 20)  # sent by the first request: invalidating
    arrived = _message("c" * 80)
    _replace(recorder, agent, arrived, "C" * 9, 20)  # not sent yet
    second = [*first, arrived]
    recorder.request_sent(agent, second)
    _replace(recorder, agent, arrived, "CC", 3)  # sent by the second request now
    equal = first[1]["content"][0]
    recorder.blocks_replaced(agent, "offload:truncate", [(first[1], equal, dict(equal), 20)], 0)  # equal: no edit
    savings = recorder.ledger.savings(agent)
    assert (savings.edits, savings.cache_invalidating_edits) == (3, 2)
    assert (savings.tokens_removed, savings.tokens_added) == (43, 1 + 3 + 1)


class _Message(dict[str, Any]):
    """A message a weak reference can follow (a plain dict cannot)."""


def test_what_the_queue_holds_is_bounded() -> None:
    agent = _agent()
    recorder = EditRecorder(Ledger(), None)
    first = _Message(_message("x" * 40))
    gone = weakref.ref(first)
    recorder.request_sent(agent, [first])
    del first
    for _ in range(SETTLE_AT + 1):  # never read: the queue settles itself past its bound
        recorder.request_sent(agent, [_message("y" * 40)])
    gc.collect()
    assert gone() is None  # a message no request still holds is not kept alive by the recorder


def test_agents_in_threads_keep_separate_totals() -> None:
    recorder = EditRecorder(Ledger(), None)
    agents = [_agent(), _agent()]
    rounds = 3 * SETTLE_AT
    counter = token_counter("heuristic")
    new_text = "n" * 37

    def run(agent: Agent, tokens: int) -> None:
        for _ in range(rounds):
            messages = [_message("m" * 64)]
            recorder.request_sent(agent, messages)
            _replace(recorder, agent, messages[0], new_text, tokens)

    threads = [threading.Thread(target=run, args=(agent, 10 + i)) for i, agent in enumerate(agents)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    added = block_tokens({"text": new_text}, counter)
    for i, agent in enumerate(agents):
        savings = recorder.ledger.savings(agent)
        assert (savings.edits, savings.cache_invalidating_edits) == (rounds, rounds)
        assert (savings.tokens_removed, savings.tokens_added) == (rounds * (10 + i), rounds * added)
    assert recorder.ledger.savings().edits == 2 * rounds


def test_records_queued_before_a_provider_appears_are_settled_first(monkeypatch: pytest.MonkeyPatch) -> None:
    from opentelemetry import trace
    from strands_offload import _ledger

    telemetry = Telemetry()
    agent = _agent()
    recorder = EditRecorder(Ledger(), None)
    sent = [_message("a" * 80), _message("b" * 80)]
    recorder.request_sent(agent, sent)
    _replace(recorder, agent, sent[0], "A", 20)  # queued: no provider yet
    # A process sets its global providers (for this test only); the next request's check sees them.
    monkeypatch.setattr(_ledger, "RECHECK_SECONDS", 0.0)
    monkeypatch.setattr(
        importlib.import_module("opentelemetry.metrics._internal"), "_METER_PROVIDER", telemetry.meter_provider
    )
    monkeypatch.setattr(trace, "get_tracer_provider", lambda: telemetry.tracer_provider)
    monkeypatch.setattr(recorder.ledger, "_next_check", 0.0)
    recorder.request_sent(agent, [sent[1]])  # provider found: what was queued goes in first
    assert recorder.ledger.metering and recorder.ledger.tracing
    _replace(recorder, agent, sent[1], "B", 30)  # sent by the latest request: recorded at once
    _replace(recorder, agent, sent[0], "AA", 5)  # not in the latest request any more
    savings = recorder.ledger.savings(agent)
    assert (savings.edits, savings.cache_invalidating_edits, savings.tokens_removed) == (3, 2, 55)
    assert telemetry.total("strands_offload.context.edits") == 2  # only those made once it was there
    assert telemetry.total("strands_offload.context.cache_invalidating_edits") == 1
