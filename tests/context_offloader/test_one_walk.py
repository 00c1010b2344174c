"""A JSON tool result is walked once: the estimate's walk also writes the bytes stored."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest
import strands.storage as ref_storage
import strands_offload.storage as unified
from _agent_harness import run
from strands import Agent
from strands.hooks.events import AfterToolCallEvent
from strands.vended_plugins.context_offloader import ContextOffloader as RefOffloader
from strands_offload.context_offloader import ContextOffloader
from strands_offload.context_offloader.storage import InMemoryStorage as LegacyMemory
from strands_offload.demo.scripted_model import Reply, ScriptedModel


class CountingDict(dict[str, Any]):
    """A dict subclass: ``json`` (and our walk) read it through ``items()``, once per walk."""

    walks = 0

    def items(self) -> Any:
        CountingDict.walks += 1
        return super().items()


def _value() -> CountingDict:
    return CountingDict(rows=[{"id": i, "note": f"row {i} café ✓ 🚀", "ok": i % 2 == 0} for i in range(600)])


def _walks_in_hook(plugin: Any) -> tuple[int, dict[str, Any]]:
    """Walks of the value during the after-tool-call hook alone."""
    agent = Agent(model=ScriptedModel(lambda _m: Reply("ok")), plugins=[plugin], callback_handler=None)
    event = AfterToolCallEvent(
        agent=agent,
        selected_tool=None,
        tool_use={"toolUseId": "tooluse_walk", "name": "fetch", "input": {}},
        invocation_state={},
        result={"toolUseId": "tooluse_walk", "status": "success", "content": [{"json": _value()}]},
    )
    CountingDict.walks = 0
    asyncio.run(plugin._handle_tool_result(event))
    return CountingDict.walks, event.result


@pytest.mark.parametrize("storage", ["unified", "legacy"])
def test_offloading_json_walks_it_once_where_the_reference_walks_it_more(storage: str) -> None:
    backend = unified.InMemoryStorage() if storage == "unified" else LegacyMemory()
    walks, result = _walks_in_hook(ContextOffloader(backend, max_result_tokens=500, preview_tokens=50))
    assert result["content"][0]["text"].startswith("[Offloaded: 1 blocks, ~")
    assert walks == 1
    # The counter sees every walk: the reference estimates, then serialises again to store.
    reference = RefOffloader(ref_storage.InMemoryStorage(), max_result_tokens=500, preview_tokens=50)
    ref_walks, ref_result = _walks_in_hook(reference)
    assert ref_result["content"][0]["text"].startswith("[Offloaded: 1 blocks, ~")
    assert ref_walks >= 2


@pytest.mark.parametrize("storage", ["unified", "legacy"])
def test_stored_json_is_what_json_dumps_writes(storage: str) -> None:
    expected = json.dumps(dict(_value()), indent=2)
    backend = unified.InMemoryStorage() if storage == "unified" else LegacyMemory()
    plugin = ContextOffloader(backend, max_result_tokens=500, preview_tokens=50)
    _agent, results = run(plugin, [{"json": _value()}], [{"reference": 0}])
    notice = results[0]["content"][0]["text"]
    # The preview is the start of the stored text; a full retrieval gives the JSON back.
    assert expected[:200] in notice
    assert f"json, {len(expected.encode()):,} bytes" in notice
    assert results[1]["content"][0]["json"] == dict(_value())
