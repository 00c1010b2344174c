"""JSON queries through a real Agent: the retrieval tool's ``query`` on offloaded JSON."""

from __future__ import annotations

import json
from typing import Any

from _agent_harness import run
from strands_offload.context_offloader import ContextOffloader


def _document() -> dict[str, Any]:
    return {
        "items": [{"id": i, "name": f"item-{i}", "tags": ["x"] * (i % 3), "price": i * 1.25} for i in range(400)],
        "meta": {"total": 400, "source": "caf\u00e9"},
    }


def _text_of(result: dict[str, Any]) -> str:
    return str(result["content"][0]["text"])


def _body(text: str) -> Any:
    header, body = text.split("\n\n", 1)
    assert header.startswith("[")
    return json.loads(body)


def test_query_pulls_one_value_out_of_offloaded_json() -> None:
    doc = _document()
    _agent, results = run(
        ContextOffloader(json_queries=True),
        [{"json": doc}],
        [{"reference": 0, "query": "$.items[3].name"}],
    )
    assert results[0]["content"][0]["text"].startswith("[Offloaded: ")
    answer = results[1]
    assert answer["status"] == "success"
    text = _text_of(answer)
    assert text == "[1 match for $.items[3].name]\n\n" + json.dumps([doc["items"][3]["name"]], indent=2)


def test_filter_and_truncation_follow_the_budget() -> None:
    doc = _document()
    plugin = ContextOffloader(json_queries=True, max_result_tokens=300, preview_tokens=100)
    _agent, results = run(
        plugin,
        [{"json": doc}],
        [{"reference": 0, "query": "$.items[?(@.id >= 390)].id"}, {"reference": 0, "query": "$.items[*]"}],
    )
    assert _body(_text_of(results[1])) == [i for i in range(390, 400)]
    truncated = _text_of(results[2])
    header, body = truncated.split("\n\n", 1)
    assert header == "[400 matches for $.items[*]]"
    assert truncated.endswith("\n\n[output truncated, narrow your query]")
    kept = body.removesuffix("\n\n[output truncated, narrow your query]")
    assert len(kept) <= 300 * 4
    assert json.dumps(doc["items"], indent=2).startswith(kept)


def test_bad_query_is_an_error_with_a_clear_message() -> None:
    _agent, results = run(
        ContextOffloader(json_queries=True),
        [{"json": _document()}],
        [{"reference": 0, "query": "$.items[3"}],
    )
    answer = results[1]
    assert answer["status"] == "error"
    assert "invalid query at position 9: expected ',' or ']', found end of query" in _text_of(answer)


def test_query_on_text_reference_is_an_error() -> None:
    _agent, results = run(
        ContextOffloader(json_queries=True),
        [{"text": "log line\n" * 5_000}],
        [{"reference": 0, "query": "$.a"}],
    )
    answer = results[1]
    assert answer["status"] == "error"
    assert "query works on JSON content only; this reference holds text/plain" in _text_of(answer)


def test_no_query_parameter_when_the_option_is_off() -> None:
    for plugin, has_query in ((ContextOffloader(), False), (ContextOffloader(json_queries=True), True)):
        (spec,) = [t.tool_spec for t in plugin.tools]
        assert spec["name"] == "retrieve_offloaded_content"
        assert ("query" in spec["inputSchema"]["json"]["properties"]) is has_query
