"""Shape previews: JSON skeletons, CSV/TSV tables and logs, with lines and JSONPaths that lead back."""

from __future__ import annotations

import asyncio
import json
import re
from typing import Any

import pytest
from _cm_harness import ContextModel, Reply, ToolCall, replies
from hypothesis import given
from hypothesis import strategies as st
from strands import Agent, tool
from strands_offload import json_query
from strands_offload._shape import shape_preview, shape_within
from strands_offload.context_manager import ContextManager, Offload
from strands_offload.context_manager.methods.truncate import TruncateConfig, build_preview
from strands_offload.context_offloader import ContextOffloader

_NODE = re.compile(r"^L(\d+) (\$.*?): (.*)$")


def _orders(count: int = 2000) -> dict[str, Any]:
    items = [{"order": f"ORD-{i}", "address": {"city": f"C{i}"}, "tags": ["a", "b"]} for i in range(count)]
    return {"items": items, "count": count, "next page": None}


def test_json_skeleton_lines_and_paths_lead_to_their_values() -> None:
    text = json.dumps(_orders(), indent=2)
    shape = shape_preview(text, 10_000)
    assert shape is not None and shape.startswith("[Shape: JSON, ")
    lines = text.splitlines()
    nodes = [m.groups() for m in map(_NODE.match, shape.splitlines()) if m]
    assert ("2", "$.items", "array[2000]") in nodes
    assert ("3", "$.items[0]", "object{3}") in nodes
    assert any(
        path == "$.items[1999]" and what.startswith("object{3} keys: order, address, tags") for _, path, what in nodes
    )
    assert any(path == "$['next page']" and what == "null" for _, path, what in nodes)
    assert "... $.items[1:1999]: 1998 more items, lines " in shape
    data = text.encode()
    for line, path, what in nodes:
        # The line holds the node's key or value, and the JSONPath selects it.
        held = lines[int(line) - 1]
        index = re.search(r"\[(\d+)\]$", path)
        if path == "$" or index:
            assert held.strip()[0] in '{["-0123456789ntf'  # the value starts on that line
        else:
            key = re.search(r"(?:\.(\w+)|\['(.*)'\])$", path)
            assert key is not None and f'"{key.group(1) or key.group(2)}":' in held
        assert json_query(data, path).startswith("[1 match for ")
        if not what.startswith(("object", "array", "...")):
            assert json.loads(what) == json.loads(json_query(data, path).split("\n", 2)[2])[0]


def test_csv_and_tsv_shapes_count_rows_and_show_the_edges() -> None:
    text = "id,name,city\n" + "".join(f"{i},n{i},c{i}\n" for i in range(500))
    shape = shape_preview(text, 2_000)
    assert shape is not None
    assert shape.splitlines()[:3] == [
        "[Shape: CSV, 500 rows x 3 columns; L<line>: <row>]",
        "L1 header: id,name,city",
        "L2: 0,n0,c0",
    ]
    assert "... 494 more rows, lines 5-498" in shape and shape.endswith("L501: 499,n499,c499")
    assert shape_preview(text.replace(",", "\t"), 2_000).startswith("[Shape: TSV, 500 rows x 3 columns")  # type: ignore[union-attr]


def test_log_shape_shows_head_tail_and_at_most_20_issue_lines() -> None:
    lines = [f"2024-05-01 10:{i // 60 % 60:02d}:{i % 60:02d} INFO request {i} ok" for i in range(5000)]
    for i in range(100, 5000, 150):  # 33 errors
        lines[i] = lines[i].replace("INFO", "ERROR").replace(" ok", " timed out")
    shape = shape_preview("\n".join(lines), 100_000)
    assert shape is not None
    shown = [int(m.group(1)) for m in re.finditer(r"^L(\d+): .*ERROR", shape, re.MULTILINE)]
    errors = [i + 1 for i in range(100, 5000, 150)]
    assert shown == errors[:10] + errors[-10:]
    assert "L1: 2024-05-01 10:00:00 INFO request 0 ok" in shape and shape.endswith(f"L5000: {lines[-1]}")


def test_log_shape_prefers_errors_to_warnings() -> None:
    lines = [f"2024-05-01 10:00:{i % 60:02d} INFO request {i} ok" for i in range(3000)]
    for i in range(50, 3000, 50):  # 59 warnings
        lines[i] = lines[i].replace("INFO", "WARN").replace(" ok", " slow")
    for i in (1234, 2345):
        lines[i] = lines[i].replace("INFO", "ERROR").replace(" ok", " failed")
    shape = shape_preview("\n".join(lines), 100_000)
    assert shape is not None
    shown = [int(m.group(1)) for m in re.finditer(r"^L(\d+): .*(WARN|ERROR)", shape, re.MULTILINE)]
    warnings = [i + 1 for i in range(50, 3000, 50) if i not in (1234, 2345)]
    assert 1235 in shown and 2346 in shown and len(shown) == 20
    assert sorted(set(shown) - {1235, 2346}) == warnings[:9] + warnings[-9:]


def test_other_text_has_no_shape() -> None:
    assert shape_preview("Dear reader,\nthis is prose.\nNothing more.", 1000) is None
    assert shape_preview('{"a": 1} trailing', 1000) is None
    assert shape_preview("[1, 2", 1000) is None


@given(
    st.recursive(
        st.none() | st.integers() | st.text(max_size=5), lambda c: st.lists(c) | st.dictionaries(st.text(max_size=4), c)
    ),
    st.integers(0, 400),
)
def test_shapes_fit_the_budget_and_every_path_selects(document: Any, budget: int) -> None:
    text = json.dumps(document, indent=2)
    shape = shape_preview(text, budget)
    if not text.lstrip().startswith(("{", "[")):
        assert shape is None
        return
    assert shape is not None and len(shape) <= budget
    for match in map(_NODE.match, shape.splitlines()):
        if match:
            assert json_query(text.encode(), match.group(2)).startswith("[1 match for ")


def test_truncate_config_preview_shape() -> None:
    config: TruncateConfig = {"preview": "shape", "preview_tokens": 300}
    text = json.dumps(_orders(), indent=2)
    preview = build_preview(text, 1, config)
    assert preview.startswith("[Truncated: 1 block, ~") and "\n\n[Shape: JSON" in preview
    assert len(preview.split("\n\n", 1)[1]) <= 1200
    # Other text: the positional (head_tail) preview, as with no preview set.
    prose = "word " * 5000
    assert build_preview(prose, 1, config) == build_preview(prose, 1, {"preview_tokens": 300})


@tool
def export_orders() -> str:
    """Export the orders."""
    return json.dumps(_orders(), indent=2)


def test_truncate_strategy_with_shape_previews_in_an_agent() -> None:
    model = ContextModel(replies(Reply("", [ToolCall("export_orders", {}, "tu_1")])))
    strategy = Offload.truncate("tool_results", {"preview": "shape", "preview_tokens": 400}).when(threshold=2000)
    agent = Agent(
        model=model, tools=[export_orders], context_manager=ContextManager(strategies=[strategy]), callback_handler=None
    )
    agent("where does order ORD-1500 ship?")
    text = agent.messages[2]["content"][0]["toolResult"]["content"][0]["text"]
    assert "[Shape: JSON" in text and "L2 $.items: array[2000]" in text and text.endswith("[Stashed] [ref: tu_1_0]")


def test_offloader_preview_shape_notice() -> None:
    plugin = ContextOffloader(max_result_tokens=1000, preview_tokens=300, preview="shape", json_queries=True)
    model = ContextModel(replies(Reply("", [ToolCall("export_orders", {}, "tu_1")])))
    agent = Agent(model=model, tools=[export_orders], plugins=[plugin], callback_handler=None)
    agent("where does order ORD-1500 ship?")
    notice = agent.messages[2]["content"][0]["toolResult"]["content"][0]["text"]
    assert "[Shape: JSON" in notice and "L2 $.items: array[2000]" in notice
    head = ContextOffloader(max_result_tokens=1000, preview_tokens=300)
    agent = Agent(
        model=ContextModel(replies(Reply("", [ToolCall("export_orders", {}, "tu_1")]))),
        tools=[export_orders],
        plugins=[head],
        callback_handler=None,
    )
    agent("where does order ORD-1500 ship?")
    assert "[Shape:" not in agent.messages[2]["content"][0]["toolResult"]["content"][0]["text"]
    with pytest.raises(ValueError, match="preview must be one of head, shape"):
        ContextOffloader(preview="middle")


def test_exact_token_budgets_are_kept() -> None:
    from strands_offload._native import count_tokens, token_counter

    encoding = token_counter("cl100k_base")
    shape = shape_within(json.dumps(_orders(), indent=2), 60, 10_000, encoding)
    assert shape is not None and count_tokens(shape, encoding) <= 60
    assert asyncio.iscoroutinefunction(tool) is False  # (imports used)


def test_shape_previews_are_made_again_at_restore(tmp_path: Any) -> None:
    from strands.session.file_session_manager import FileSessionManager
    from strands_offload.context_manager._persist import RECIPE_KEY
    from strands_offload.storage import LocalFileStorage

    def agent(script: Any) -> Agent:
        strategy = Offload.truncate("tool_results", {"preview": "shape", "preview_tokens": 400}).when(threshold=2000)
        return Agent(
            model=ContextModel(script),
            tools=[export_orders],
            context_manager=ContextManager(
                strategies=[strategy],
                stash={"storage": LocalFileStorage(str(tmp_path / "stash"))},
                persist_reductions=True,
            ),
            session_manager=FileSessionManager(session_id="s1", storage_dir=str(tmp_path / "sessions")),
            agent_id="main",
            callback_handler=None,
        )

    first = agent(replies(Reply("", [ToolCall("export_orders", {}, "tu_1")])))
    first("where does order ORD-1500 ship?")
    assert "[Shape: JSON" in first.messages[2]["content"][0]["toolResult"]["content"][0]["text"]
    restored = agent(replies())
    assert restored.messages == first.messages
    assert "[Shape: JSON" not in json.dumps(restored.state.get(RECIPE_KEY))  # derived, not stored
