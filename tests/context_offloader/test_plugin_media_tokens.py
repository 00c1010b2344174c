"""``ContextOffloader(media_tokens=...)``: media reported in the notice and the ledger, never decided on."""

from __future__ import annotations

import re
from typing import Any

import pytest
from _media_samples import image_block, png
from _telemetry_support import Telemetry, recorded
from strands import Agent, tool
from strands_offload import _native
from strands_offload.context_offloader import ContextOffloader
from strands_offload.demo.scripted_model import Reply, ScriptedModel, ToolCall
from strands_offload.storage import InMemoryStorage

CLAUDE_ON_BEDROCK = "us.anthropic.claude-sonnet-4-20250514-v1:0"
SHOTS = [(1280, 800), (2560, 1600)]
LONG_TEXT = "row " * 20_000  # 20,000 tokens of text: over the default threshold
SHORT_TEXT = "page loaded"


@pytest.fixture
def telemetry(monkeypatch: pytest.MonkeyPatch) -> Telemetry:
    return recorded(monkeypatch)


def _run(plugin: ContextOffloader, text: str) -> tuple[Agent, dict[str, Any]]:
    @tool
    def browser() -> dict[str, Any]:
        """Return the page text and two screenshots."""
        return {"status": "success", "content": [{"text": text}, *(image_block(png(w, h)) for w, h in SHOTS)]}

    replies = iter([Reply("", [ToolCall("browser", {}, "call_1")]), Reply("done")])
    model = ScriptedModel(lambda messages: next(replies), model_id=CLAUDE_ON_BEDROCK)
    agent = Agent(model=model, tools=[browser], plugins=[plugin], callback_handler=None)
    agent("look")
    result = next(b["toolResult"] for m in agent.messages for b in m["content"] if "toolResult" in b)
    return agent, result


def _notice_tokens(result: dict[str, Any]) -> int:
    match = re.match(r"\[Offloaded: \d+ blocks, ~([\d,]+) tokens\]", result["content"][0]["text"])
    assert match is not None
    return int(match.group(1).replace(",", ""))


MEDIA = sum(_native.image_tokens(png(w, h), "anthropic") for w, h in SHOTS)


def test_the_notice_counts_the_media_and_the_decision_does_not(telemetry: Telemetry) -> None:
    _, off = _run(ContextOffloader(InMemoryStorage()), LONG_TEXT)
    _, on = _run(ContextOffloader(InMemoryStorage(), media_tokens="auto"), LONG_TEXT)
    assert MEDIA == 1366 + 1600
    assert _notice_tokens(on) == _notice_tokens(off) + MEDIA
    # Short text beside large screenshots: kept as it is, with or without the option.
    for plugin in (ContextOffloader(InMemoryStorage()), ContextOffloader(InMemoryStorage(), media_tokens="auto")):
        _, kept = _run(plugin, SHORT_TEXT)
        assert kept["content"][0] == {"text": SHORT_TEXT}
        assert sum("image" in item for item in kept["content"]) == 2


def test_the_ledger_says_media_rules_were_applied(telemetry: Telemetry) -> None:
    providers = {"meter_provider": telemetry.meter_provider, "tracer_provider": telemetry.tracer_provider}
    plugin = ContextOffloader(InMemoryStorage(), media_tokens="auto", **providers)
    agent, result = _run(plugin, LONG_TEXT)
    span = next(s for s in telemetry.ours() if s.attributes.get("gen_ai.tool.call.id") == "call_1")
    assert span.attributes["strands_offload.counter"] == "heuristic+media:anthropic"
    # The original's figure holds its media (the notice's count); what is shown holds none (placeholders).
    off = ContextOffloader(InMemoryStorage())
    off_agent, off_result = _run(off, LONG_TEXT)
    notice_digits = len(f"{_notice_tokens(result):,}") - len(f"{_notice_tokens(off_result):,}")
    assert plugin.savings(agent).tokens_kept_out == off.savings(off_agent).tokens_kept_out + MEDIA - notice_digits // 4
    counted = {"strands_offload.counter": "heuristic+media:anthropic"}
    assert (
        telemetry.total("strands_offload.offload.tokens_kept_out", **counted) == plugin.savings(agent).tokens_kept_out
    )


def test_an_unknown_setting_is_a_value_error() -> None:
    with pytest.raises(ValueError, match="'auto', 'anthropic', 'openai', 'gemini'"):
        ContextOffloader(media_tokens="claude")
