"""``media_tokens=``: screenshots counted as the provider bills them reach every decision.

The browser-agent session of issue 40: a tool returns four screenshots (1280x800 to 2560x1600) per
call to a Claude model on Bedrock that reports usage as Anthropic bills it (text by the SDK's
heuristic, each image by Anthropic's published rule, restated here independently of the native
meter). The provider refuses any request over its window, the summarizer's included.
"""

from __future__ import annotations

import copy
import math
import struct
from collections.abc import AsyncIterable
from typing import Any

import pytest
from _cm_harness import (
    REFERENCE,
    Reply,
    ToolCall,
    _summary_request,
    encode_for_compare,
    fixed_tracking_ids,
    summary_of,
)
from _media_samples import image_block, png
from strands import Agent, tool
from strands.models.model import Model
from strands.types.content import Messages
from strands.types.exceptions import ContextWindowOverflowException
from strands.types.streaming import StreamEvent
from strands_offload.context_manager import ContextManager
from strands_offload.demo.scripted_model import reply_events

CLAUDE_ON_BEDROCK = "us.anthropic.claude-sonnet-4-20250514-v1:0"
SCREEN_SIZES = ((1280, 800), (1600, 1000), (1920, 1200), (2560, 1600))
WINDOW = 24_000
CALLS = 8


def anthropic_image_tokens(data: bytes) -> int:
    """Anthropic's rule from its vision page: fit 1,568 px and ~1.15 MP (1,600 tokens), then w*h/750."""
    width, height = struct.unpack(">II", data[16:24])
    scale = min(1.0, 1568 / max(width, height), math.sqrt(1_200_000 / (width * height)))
    if scale < 1:
        width, height = max(1, int(width * scale)), max(1, int(height * scale))
    return min(1600, math.ceil(width * height / 750))


def _images(messages: Messages) -> list[bytes]:
    found: list[bytes] = []
    for message in messages:
        for block in message["content"]:
            items = block["toolResult"]["content"] if "toolResult" in block else [block]
            found += [item["image"]["source"]["bytes"] for item in items if "image" in item]
    return found


class ClaudeBilling(Model):
    """A Claude stand-in that bills images as Anthropic does and refuses requests over its window.

    Agent-loop calls call the browser ``CALLS`` times, then finish; summary requests get a digest.
    ``count_tokens`` stays the SDK's (images 0), as BedrockModel's without native counting.
    """

    def __init__(self, window: int) -> None:
        self._config: dict[str, Any] = {"model_id": CLAUDE_ON_BEDROCK, "context_window_limit": window}
        self.window = window
        self.requests: list[dict[str, Any]] = []  # every request: kind, billed tokens, messages
        self.turn = 0

    def update_config(self, **model_config: Any) -> None:
        self._config.update(model_config)

    def get_config(self) -> dict[str, Any]:
        return self._config

    def structured_output(self, *args: Any, **kwargs: Any) -> Any:
        raise NotImplementedError

    async def stream(self, messages: Messages, *args: Any, **kwargs: Any) -> AsyncIterable[StreamEvent]:
        tool_specs = args[0] if args else kwargs.get("tool_specs")
        system_prompt = args[1] if len(args) > 1 else kwargs.get("system_prompt")
        text = await self.count_tokens(messages, tool_specs, system_prompt)
        billed = text + sum(anthropic_image_tokens(data) for data in _images(messages))
        summary = _summary_request(messages, tool_specs) is not None
        self.requests.append(
            {"summary": summary, "billed": billed, "messages": copy.deepcopy(messages), "tool_specs": tool_specs}
        )
        if billed > self.window:
            raise ContextWindowOverflowException(f"prompt is too long: {billed} tokens > {self.window} maximum")
        if summary:
            reply = Reply(summary_of(messages[0]["content"][1:-1], "blocks"))
        else:
            self.turn += 1
            call = self.turn
            reply = Reply("done") if call > CALLS else Reply("", [ToolCall("browser", {"step": call}, f"tu_{call}")])
        async for event in reply_events(reply, billed):
            yield event

    @property
    def agent_calls(self) -> list[dict[str, Any]]:
        return [r for r in self.requests if not r["summary"]]


@tool
def browser(step: int) -> dict[str, Any]:
    """Open the next page and return four screenshots of it."""
    shots = [image_block(png(w, h)) for w, h in SCREEN_SIZES]
    return {"status": "success", "content": [{"text": f"page {step} loaded: " + "lorem ipsum " * 40}, *shots]}


def _session(manager: Any, window: int = WINDOW) -> tuple[Agent, ClaudeBilling]:
    model = ClaudeBilling(window)
    agent = Agent(model=model, tools=[browser], context_manager=manager, callback_handler=None)
    with fixed_tracking_ids():
        agent("browse the site page by page")
    return agent, model


def test_the_screenshots_are_billed_as_the_issue_measured() -> None:
    per_call = sum(anthropic_image_tokens(png(w, h)) for w, h in SCREEN_SIZES)
    assert 5_500 <= per_call <= 6_500


def test_the_reference_sends_requests_over_the_window() -> None:
    _, model = _session("auto")
    assert any(r["billed"] > WINDOW for r in model.requests)


def test_media_tokens_auto_sends_no_request_over_the_window() -> None:
    agent, model = _session(ContextManager.from_strategy("auto", media_tokens="auto"))
    over = [(r["summary"], r["billed"]) for r in model.requests if r["billed"] > WINDOW]
    assert over == []
    assert any(r["summary"] for r in model.requests)  # a summary made the room, within the window too
    # The newest screenshots reach the model: every call after a browser result carries its four images.
    for request in model.agent_calls:
        messages = request["messages"]
        results = [b["toolResult"] for m in messages for b in m["content"] if "toolResult" in b]
        if results:
            newest = results[-1]
            assert sum("image" in item for item in newest["content"]) == 4
    assert agent.messages[-1]["content"][0]["text"] == "done"
    assert model.turn == CALLS + 1


@pytest.mark.parametrize("window", [WINDOW, 40_000])
def test_with_the_option_off_requests_equal_the_references(window: int) -> None:
    _, reference = _session(REFERENCE.auto(), window)
    _, ours = _session(ContextManager.from_strategy("auto"), window)
    assert [encode_for_compare(r["messages"]) for r in ours.requests] == [
        encode_for_compare(r["messages"]) for r in reference.requests
    ]


# ------------------------------------------------------------------ choosing the rule


class _Named(Model):
    """A model of a given id whose class is not a provider's."""

    def __init__(self, model_id: str, **config: Any) -> None:
        self._config = {"model_id": model_id, **config}

    def update_config(self, **model_config: Any) -> None: ...

    def get_config(self) -> dict[str, Any]:
        return self._config

    def structured_output(self, *args: Any, **kwargs: Any) -> Any:
        raise NotImplementedError

    def stream(self, *args: Any, **kwargs: Any) -> Any:
        raise NotImplementedError


@pytest.mark.parametrize(
    ("model_id", "rule"),
    [
        ("anthropic.claude-3-5-sonnet-20241022-v2:0", "anthropic"),
        ("us.anthropic.claude-sonnet-4-20250514-v1:0", "anthropic"),
        ("eu.anthropic.claude-3-7-sonnet-20250219-v1:0", "anthropic"),
        ("apac.anthropic.claude-3-haiku-20240307-v1:0", "anthropic"),
        ("global.anthropic.claude-sonnet-4-5-20250929-v1:0", "anthropic"),
        ("us-gov.anthropic.claude-3-5-sonnet-20240620-v1:0", "anthropic"),
        (
            "arn:aws:bedrock:us-east-1:123456789012:inference-profile/us.anthropic.claude-3-7-sonnet-20250219-v1:0",
            "anthropic",
        ),
        ("arn:aws:bedrock:us-east-1::foundation-model/anthropic.claude-v2", "anthropic"),
        ("arn:aws:bedrock:us-east-1:123456789012:application-inference-profile/a1b2c3", None),
        ("amazon.nova-pro-v1:0", None),
        ("us.meta.llama3-2-90b-instruct-v1:0", None),
        ("gpt-4o", None),  # an OpenAI id on a class that is not OpenAI's: not counted
    ],
)
def test_auto_picks_the_rule_from_the_model_id(model_id: str, rule: str | None) -> None:
    from strands_offload.context_manager import _media

    assert _media.resolve("auto", _Named(model_id)) == rule


def _provider_class(module: str, name: str) -> type:
    """The provider's class, or (its extra not installed) a stand-in of the same module and name."""
    import importlib

    try:
        return getattr(importlib.import_module(module), name)  # type: ignore[no-any-return]
    except ImportError:
        return type(name, (_Named,), {"__module__": module, "__qualname__": name})


def test_auto_picks_the_rule_from_the_model_class() -> None:
    from strands_offload.context_manager import _media

    AnthropicModel = _provider_class("strands.models.anthropic", "AnthropicModel")  # noqa: N806
    GeminiModel = _provider_class("strands.models.gemini", "GeminiModel")  # noqa: N806
    OpenAIModel = _provider_class("strands.models.openai", "OpenAIModel")  # noqa: N806

    def bare(cls: type, model_id: str) -> Any:
        model = cls.__new__(cls)  # no client: only the class and the config are read
        model.config = {"model_id": model_id}
        model.get_config = lambda: model.config
        return model

    assert _media.resolve("auto", bare(AnthropicModel, "claude-sonnet-4-20250514")) == "anthropic"
    assert _media.resolve("auto", bare(GeminiModel, "gemini-2.5-flash")) == "gemini"
    families = {
        "gpt-4o": "openai-tile-85",
        "gpt-4o-mini": "openai-tile-2833",
        "gpt-4.1": "openai-tile-85",
        "gpt-4.1-mini": "openai-patch-1.62",
        "gpt-4.1-nano": "openai-patch-2.46",
        "o4-mini": "openai-patch-1.72",
        "o3": "openai-tile-75",
        "gpt-5": "openai-tile-70",
        "gpt-5-mini": "openai-patch-1.62",
        "some-local-model": None,
    }
    for model_id, rule in families.items():
        assert _media.resolve("auto", bare(OpenAIModel, model_id)) == rule, model_id
    assert _media.resolve("openai", _Named("some-local-model")) == "openai-tile-85"
    assert _media.resolve("gemini", _Named("x")) == "gemini"
    assert _media.resolve("anthropic", _Named("x")) == "anthropic"
    # The provider's own counting counts media already.
    assert _media.resolve("anthropic", _Named(CLAUDE_ON_BEDROCK, use_native_token_count=True)) is None
    assert _media.resolve(None, _Named(CLAUDE_ON_BEDROCK)) is None


@pytest.mark.parametrize("value", ["Auto", "claude", "", 1, True])
def test_an_unknown_setting_is_a_value_error_listing_the_choices(value: Any) -> None:
    with pytest.raises(ValueError, match="'auto', 'anthropic', 'openai', 'gemini'"):
        ContextManager(media_tokens=value)
    with pytest.raises(ValueError, match="'auto', 'anthropic', 'openai', 'gemini'"):
        ContextManager.from_strategy("auto", media_tokens=value)


def test_media_tokens_is_keyword_only() -> None:
    with pytest.raises(TypeError):
        ContextManager(None, None, None, False, True, None, None, False, "auto")  # type: ignore[misc]


# ------------------------------------------------------------------ the count reaches the decision


def _history(calls: int) -> list[dict[str, Any]]:
    """A finished browsing history of ``calls`` browser calls, no usage reported yet (a cold start)."""
    messages: list[dict[str, Any]] = [{"role": "user", "content": [{"text": "browse the site page by page"}]}]
    for call in range(1, calls + 1):
        result = browser._tool_func(call)  # what the tool returns
        result["toolUseId"] = f"tu_{call}"
        messages.append(
            {
                "role": "assistant",
                "content": [{"toolUse": {"toolUseId": f"tu_{call}", "name": "browser", "input": {"step": call}}}],
            }
        )
        messages.append({"role": "user", "content": [{"toolResult": result}]})
    return messages


def test_the_projection_adds_the_media_after_the_usage_baseline() -> None:
    import asyncio

    from strands_offload import _seam
    from strands_offload.context_manager import _media

    model = ClaudeBilling(WINDOW)
    agent = Agent(
        model=model,
        tools=[browser],
        context_manager=ContextManager(media_tokens="auto"),
        callback_handler=None,
        messages=_history(2),
    )
    per_call = sum(anthropic_image_tokens(png(w, h)) for w, h in SCREEN_SIZES)
    seam = asyncio.run(_seam.projected_input_tokens(agent))
    assert asyncio.run(_media.projected_input_tokens(agent)) == seam + 2 * per_call  # cold start: all
    agent.messages[2]["content"] = [*agent.messages[2]["content"]]
    agent.messages.insert(
        3,
        {
            "role": "assistant",
            "content": [{"text": "seen"}],
            "metadata": {"usage": {"inputTokens": 9_000, "outputTokens": 10, "totalTokens": 9_010}},
        },
    )
    agent.messages.insert(4, {"role": "user", "content": [{"text": "go on"}]})
    seam = asyncio.run(_seam.projected_input_tokens(agent))
    assert asyncio.run(_media.projected_input_tokens(agent)) == seam + per_call  # only the call after it
    # Off: the projection is the event loop's.
    off = Agent(
        model=ClaudeBilling(WINDOW), context_manager=ContextManager(), callback_handler=None, messages=_history(2)
    )
    assert asyncio.run(_media.projected_input_tokens(off)) == asyncio.run(_seam.projected_input_tokens(off))


def test_a_cold_start_summary_holds_the_images_that_fit_and_placeholders_for_the_rest() -> None:
    model = ClaudeBilling(WINDOW)
    manager = ContextManager.from_strategy("auto", media_tokens="auto")
    agent = Agent(model=model, tools=[browser], context_manager=manager, callback_handler=None, messages=_history(7))
    model.turn = CALLS  # the next reply ends the session
    with fixed_tracking_ids():
        agent("what did you see?")
    assert [r["billed"] for r in model.requests if r["billed"] > WINDOW] == []
    summary = next(r for r in model.requests if r["summary"])
    blocks = summary["messages"][0]["content"]
    shown = [b for b in blocks if "image" in b]
    placeholders = [b["text"] for b in blocks if "text" in b and b["text"].startswith("[image png")]
    assert shown and placeholders
    assert (len(shown) + len(placeholders)) % 4 == 0 and len(shown) + len(placeholders) >= 20  # whole calls
    # Each placeholder names the block, its size, its tokens and where the original is kept.
    assert placeholders[-1] == "[image png, 2560x1600, ~1,600 tokens, not shown, stashed as tu_6_4]"
    assert all("stashed as tu_" in text for text in placeholders)
    # The images left out are the span's latest: kept in order while they fit.
    assert blocks.index(shown[-1]) < blocks.index({"text": placeholders[0]})


def test_the_newest_tool_result_with_media_is_never_summarized_away() -> None:
    model = ClaudeBilling(WINDOW)
    pipeline = [ContextManager.from_strategy("auto").strategies[1].when(utilization=0.1)]  # summarize, no preserve
    manager = ContextManager(strategies=pipeline, media_tokens="auto")
    agent = Agent(model=model, tools=[browser], context_manager=manager, callback_handler=None, messages=_history(3))
    model.turn = CALLS
    with fixed_tracking_ids():
        agent("what did you see?")
    first = model.agent_calls[0]["messages"]
    results = [b["toolResult"] for m in first for b in m["content"] if "toolResult" in b]
    assert [r["toolUseId"] for r in results] == ["tu_3"]  # the newest stays, with its call
    assert any("toolUse" in b and b["toolUse"]["toolUseId"] == "tu_3" for m in first for b in m["content"])


def test_the_emergency_truncation_counts_media() -> None:
    import asyncio

    from _cm_harness import before_model_call

    # Only the emergency truncation: with the option, screenshots alone over the window make it act.
    for option, acts in ((None, False), ("auto", True)):
        manager = ContextManager(strategies=[], media_tokens=option)
        agent = Agent(model=ClaudeBilling(WINDOW), context_manager=manager, callback_handler=None, messages=_history(5))
        before = len(agent.messages)
        asyncio.run(before_model_call(agent, projected=False))
        assert (len(agent.messages) < before) is acts, option


def test_the_ledger_says_when_a_summary_counted_media(monkeypatch: pytest.MonkeyPatch) -> None:
    from _telemetry_support import recorded

    telemetry = recorded(monkeypatch)
    providers = {"meter_provider": telemetry.meter_provider, "tracer_provider": telemetry.tracer_provider}
    _session(ContextManager.from_strategy("auto", media_tokens="auto", **providers))
    counters = {
        labels.get("strands_offload.counter")
        for labels, _ in telemetry.points()["strands_offload.context.tokens_removed"]
    }
    assert counters == {"heuristic+media:anthropic"}
    removed = telemetry.total("strands_offload.context.tokens_removed")
    assert removed > 3 * 4 * 1_300  # the summaries' counts held the screenshots they removed


@pytest.mark.parametrize("option", [None, "auto"])
def test_ahead_expects_the_screenshots_the_tools_will_return(
    option: str | None, caplog: pytest.LogCaptureFixture
) -> None:
    import logging

    from strands_offload.context_manager import Offload

    # The summary starts while the browser runs only when the projection counts the screenshots
    # in flight (the earlier results' media); and every one started ahead is the one used.
    strategy = Offload.summarize("*", ahead=True).when(utilization=0.85, preserve_recent=4)
    manager = ContextManager(strategies=[strategy], media_tokens=option)
    with caplog.at_level(logging.DEBUG, logger="strands_offload.context_manager.strategies.offload.summarize"):
        _, model = _session(manager)
    started = sum("summary started ahead" in record.getMessage() for record in caplog.records)
    assert (started > 0) is (option is not None)
    assert manager.savings().summaries_ahead_unused == 0
    if option is not None:
        assert [r["billed"] for r in model.requests if r["billed"] > WINDOW] == []


def test_a_tool_result_summarized_alone_sends_the_media_that_fit() -> None:
    from strands_offload.context_manager import Offload

    @tool
    def gallery() -> dict[str, Any]:
        """Return twelve screenshots."""
        return {"status": "success", "content": [{"text": "twelve shots " * 20}] + [image_block(png(2560, 1600))] * 12}

    model = ClaudeBilling(16_000)
    model.turn = CALLS - 1  # one more tool call (to the gallery, by the name below), then done

    strategy = Offload.summarize("tool_results").when(threshold=10)
    agent = Agent(
        model=model,
        tools=[gallery],
        context_manager=ContextManager(strategies=[strategy], media_tokens="auto"),
        callback_handler=None,
    )
    model_script = ClaudeBilling.stream

    async def stream(self: ClaudeBilling, messages: Messages, *args: Any, **kwargs: Any) -> AsyncIterable[StreamEvent]:
        async for event in model_script(self, messages, *args, **kwargs):
            if "contentBlockStart" in event and "toolUse" in event["contentBlockStart"]["start"]:
                event["contentBlockStart"]["start"]["toolUse"]["name"] = "gallery"
            yield event

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(ClaudeBilling, "stream", stream)
        with fixed_tracking_ids():
            agent("show me the gallery")
    assert [r["billed"] for r in model.requests if r["billed"] > 16_000] == []
    summary = next(r for r in model.requests if r["summary"])
    blocks = summary["messages"][0]["content"]
    placeholders = [b["text"] for b in blocks if "text" in b and b["text"].startswith("[image png")]
    assert 0 < sum("image" in b for b in blocks) < 12 and len(placeholders) + sum("image" in b for b in blocks) == 12
    assert placeholders[-1].endswith("stashed as tu_8_12]")
    result = next(b["toolResult"] for m in agent.messages for b in m["content"] if "toolResult" in b)
    assert result["content"][0]["text"].startswith("[Summarized: tool result")


def test_drop_and_summarize_leave_a_placeholder_for_a_media_block() -> None:
    import asyncio

    from strands_offload.context_manager import Offload

    agent = Agent(
        model=ClaudeBilling(WINDOW),
        context_manager=ContextManager(strategies=[], media_tokens="auto"),
        callback_handler=None,
    )
    shot = image_block(png(1280, 800))
    message = {"role": "user", "content": [shot]}
    expected = {"text": "[image png, 1280x800, ~1,366 tokens, not shown, stashed as m_0]"}
    for strategy in (Offload.drop("*"), Offload.summarize("*")):
        assert asyncio.run(strategy._replace_block(shot, 0, message, agent, ["m_0"])) == expected
    off = Agent(model=ClaudeBilling(WINDOW), context_manager=ContextManager(strategies=[]), callback_handler=None)
    assert asyncio.run(Offload.drop("*")._replace_block(shot, 0, message, off, ["m_0"])) == {
        "text": "[Dropped] [ref: m_0]"
    }
