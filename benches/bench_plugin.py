"""The plugin end to end: one tool call through the offload hook, and retrieval calls.

Both plugins run on their own unified in-memory storage inside a real Agent (the
scripted model is never called): each round builds a fresh AfterToolCallEvent and
awaits the plugin's handler, which estimates, dumps, stores and writes the notice.
Retrieval rounds call the retrieve tool's function with a tool context.

Run: ``pytest benches/bench_plugin.py --benchmark-group-by=group``
"""

from __future__ import annotations

import asyncio
import functools
from types import SimpleNamespace
from typing import Any

import pytest
import strands.storage as ref_storage
import strands_offload.storage as our_storage
from strands import Agent
from strands.hooks.events import AfterToolCallEvent
from strands.vended_plugins.context_offloader import ContextOffloader as RefOffloader
from strands_offload.context_offloader import ContextOffloader
from strands_offload.demo.scenario import make_service_log
from strands_offload.demo.scripted_model import Reply, ScriptedModel


def _record(i: int) -> dict[str, Any]:
    return {
        "id": i,
        "name": f"customer-{i}",
        "email": f"user{i}@example.com",
        "active": i % 3 != 0,
        "balance": round(i * 13.37, 2),
        "tags": ["alpha", "béta", "gamma"][: 1 + i % 3],
        "address": {"city": "Zürich" if i % 5 == 0 else "Paris", "zip": f"{10000 + i}", "lines": ["a", "b"]},
    }


@functools.cache
def json_document(megabytes: int) -> dict[str, Any]:
    records = []
    size = 0
    while size < megabytes * 1_000_000:
        records.append(_record(len(records)))
        size += 230
    return {"items": records, "count": len(records)}


@functools.cache
def log_text(megabytes: int) -> str:
    return make_service_log(megabytes * 1_000_000)


def _agent(plugin: Any) -> Agent:
    return Agent(model=ScriptedModel(lambda _m: Reply("ok")), plugins=[plugin], callback_handler=None)


def _plugin(member: str, **options: Any) -> Any:
    if member == "reference":
        return RefOffloader(ref_storage.InMemoryStorage())
    return ContextOffloader(our_storage.InMemoryStorage(), **options)


def _call(
    plugin: Any, agent: Agent, content: list[dict[str, Any]], tool_use_id: str = "tooluse_bench"
) -> dict[str, Any]:
    event = AfterToolCallEvent(
        agent=agent,
        selected_tool=None,
        tool_use={"toolUseId": tool_use_id, "name": "fetch", "input": {}},
        invocation_state={},
        result={"toolUseId": tool_use_id, "status": "success", "content": content},
    )
    asyncio.run(plugin._handle_tool_result(event))
    return event.result


@pytest.mark.parametrize("size", [1, 10])
@pytest.mark.parametrize("member", ["reference", "native"])
def test_json_tool_call(benchmark: Any, member: str, size: int) -> None:
    benchmark.group = f"tool_call_json_{size}mb"
    content = [{"json": json_document(size)}]
    plugin = _plugin(member)
    agent = _agent(plugin)
    result = benchmark(_call, plugin, agent, content)
    assert result["content"][0]["text"].startswith("[Offloaded: 1 blocks, ~")


@pytest.mark.parametrize("member", ["reference", "native", "native-cl100k"])
def test_text_tool_call(benchmark: Any, member: str, tiktoken_offline: Any) -> None:
    benchmark.group = "tool_call_text_10mb"
    content = [{"text": log_text(10)}]
    plugin = _plugin(
        "reference" if member == "reference" else "native",
        **({"tokenizer": "cl100k_base"} if member == "native-cl100k" else {}),
    )
    agent = _agent(plugin)
    result = benchmark(_call, plugin, agent, content)
    assert result["content"][0]["text"].startswith("[Offloaded: 1 blocks, ~")


RETRIEVALS = {
    "pattern": {"pattern": "ERROR", "context_lines": 2},
    "regex": {"pattern": r"ERROR (auth|billing) request_id=r\d+"},
    "line_range": {"line_range": {"start": 60_000, "end": 60_099}},
}


@pytest.mark.parametrize("kind", list(RETRIEVALS))
@pytest.mark.parametrize("member", ["reference", "native", "native-cold"])
def test_retrieval(benchmark: Any, member: str, kind: str) -> None:
    """``native`` reuses the line index of the stored content; ``native-cold`` rebuilds it every call."""
    benchmark.group = f"retrieve_10mb_{kind}"
    plugin = _plugin("native" if member.startswith("native") else member)
    agent = _agent(plugin)
    _call(plugin, agent, [{"text": log_text(10)}])
    context = SimpleNamespace(agent=agent)
    arguments = RETRIEVALS[kind]

    def retrieve() -> Any:
        if member == "native-cold":
            plugin._indexes.forget("tooluse_bench_0")
        return asyncio.run(plugin.retrieve_offloaded_content("tooluse_bench_0", tool_context=context, **arguments))

    out = benchmark(retrieve)
    assert isinstance(out, str) and out.startswith("[")


# ---------------------------------------------------------------------------
# Peak memory of one 10 MB JSON tool call, each member in a fresh process
# ---------------------------------------------------------------------------

_PEAK_SCRIPT = """
import json, sys
sys.path.insert(0, sys.argv[2])
from bench_plugin import _agent, _call, _plugin, json_document

def high_water_mark() -> int:
    with open("/proc/self/status") as status:
        line = next(line for line in status if line.startswith("VmHWM:"))
    return int(line.split()[1]) * 1024

plugin = _plugin(sys.argv[1])
agent = _agent(plugin)
_call(plugin, agent, [{"json": {"warm": "up " * 50_000}}])  # lazy imports and first-use caches
content = [{"json": json_document(10)}]
with open("/proc/self/clear_refs", "w") as refs:
    refs.write("5")  # the high-water mark restarts from the current resident size
before = high_water_mark()
_call(plugin, agent, content)
growth = high_water_mark() - before
stored = len(json.dumps(content[0]["json"], indent=2).encode())
print(json.dumps({"growth": growth, "stored": stored}))
"""


@pytest.mark.parametrize("member", ["reference", "native"])
def test_json_tool_call_peak_memory(benchmark: Any, member: str) -> None:
    """Growth of the resident high-water mark during the call, over the bytes it stores.

    The time recorded is the whole child process (not a speed figure); the
    figures are in ``extra_info``: ``peak_over_stored`` is the issue's measure.
    """
    import json
    import subprocess
    import sys
    from pathlib import Path

    benchmark.group = "tool_call_json_10mb_peak_memory"
    here = str(Path(__file__).parent)

    def child() -> dict[str, int]:
        out = subprocess.run(
            [sys.executable, "-c", _PEAK_SCRIPT, member, here], check=True, capture_output=True, text=True
        ).stdout
        figures: dict[str, int] = json.loads(out.strip().splitlines()[-1])
        return figures

    figures = benchmark.pedantic(child, rounds=1, warmup_rounds=0)
    benchmark.extra_info.update(figures, peak_over_stored=round(figures["growth"] / figures["stored"], 2))
    print(f"\n{member}: peak growth {figures['growth'] / 1e6:.1f} MB for {figures['stored'] / 1e6:.1f} MB stored")
