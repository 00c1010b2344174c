"""The prompt-cache simulator's bill, checked on sessions small enough to add up by hand.

The unit tests count tokens with ``count=len`` and build each block with :func:`blk`, whose key is
padded to exactly the tokens wanted, so every expected number below is a sum of the sizes in view.
The end-to-end tests run real ``strands.Agent``s over the stubbed Bedrock and Anthropic clients and
check that the usage the agent reports is what the simulator billed.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any

import anthropic
import pytest
from strands import Agent, tool
from strands.models.model import CacheConfig
from strands_offload.bench.prompt_cache import (
    BilledCall,
    PromptCache,
    SimClock,
    Unit,
    anthropic_units,
    bedrock_units,
)
from strands_offload.bench.stub_clients import Reply, anthropic_model, bedrock_model

FIVE_MINUTES = 300.0
ONE_HOUR = 3600.0


def blk(name: str, tokens: int, point_ttl: float | None = None) -> Unit:
    """A block of ``tokens`` tokens under ``count=len``; a cache point follows it when ``point_ttl`` is set."""
    assert len(name) <= tokens
    return Unit(name.ljust(tokens, "."), point_ttl)


def sim(**options: Any) -> tuple[SimClock, PromptCache]:
    clock = SimClock()
    return clock, PromptCache(clock, count=len, **options)


def split(call: BilledCall) -> tuple[int, int, int]:
    """(uncached input, cache read, cache write)."""
    return call.input_tokens, call.cache_read, call.cache_write


# ------------------------------------------------------------------------------------ lifetime


def test_an_entry_not_read_within_its_lifetime_expires() -> None:
    clock, cache = sim(min_tokens=500)
    request = [blk("sys", 1200, FIVE_MINUTES), blk("q", 100)]
    # t=0: nothing cached; the 1200 tokens up to the point are written, the 100 after it are uncached.
    assert split(cache.bill(request)) == (100, 0, 1200)
    clock.advance(299)
    assert cache.live_entries() == 1
    # t=300: the entry written at t=0 lived 300 s and nobody read it: gone, so the prefix is written again.
    clock.advance(1)
    assert cache.live_entries() == 0
    assert split(cache.bill(request)) == (100, 0, 1200)


def test_a_read_refreshes_the_lifetime() -> None:
    clock, cache = sim(min_tokens=500)
    request = [blk("sys", 1200, FIVE_MINUTES), blk("q", 100)]
    assert split(cache.bill(request)) == (100, 0, 1200)  # t=0: written, expires at 300
    clock.advance(200)
    assert split(cache.bill(request)) == (100, 1200, 0)  # t=200: read, now expires at 200 + 300 = 500
    clock.advance(250)
    # t=450: 450 s after the write but 250 s after the read: still there.
    assert split(cache.bill(request)) == (100, 1200, 0)
    clock.advance(300)
    # t=750: 300 s after the read at 450: gone.
    assert split(cache.bill(request)) == (100, 0, 1200)
    assert [call.time for call in cache.calls] == [0.0, 200.0, 450.0, 750.0]


# ------------------------------------------------------------------------------------ minimum size


def test_a_prefix_below_the_minimum_is_neither_written_nor_read() -> None:
    _, cache = sim(min_tokens=1024)
    small = [blk("a", 1000, FIVE_MINUTES), blk("q", 20)]
    # The prefix at the point is 1000 < 1024 tokens: no entry; all 1000 + 20 are uncached, each time.
    assert split(cache.bill(small)) == (1020, 0, 0)
    assert cache.live_entries() == 0
    assert split(cache.bill(small)) == (1020, 0, 0)


def test_a_prefix_of_exactly_the_minimum_is_cached() -> None:
    _, cache = sim(min_tokens=1024)
    request = [blk("a", 1000), blk("b", 24, FIVE_MINUTES), blk("q", 20)]
    # 1000 + 24 = 1024 tokens at the point: written, then read; the 20 after the point stay uncached.
    assert split(cache.bill(request)) == (20, 0, 1024)
    assert split(cache.bill(request)) == (20, 1024, 0)


# ------------------------------------------------------------------------------------ look-back


def _primed(lookback: int) -> PromptCache:
    """A cache holding one entry: the 1000-token block at index 0."""
    _, cache = sim(min_tokens=100, lookback=lookback)
    assert split(cache.bill([blk("sys", 1000, FIVE_MINUTES)])) == (0, 0, 1000)
    return cache


def _messages(count: int) -> list[Unit]:
    """``count`` 10-token blocks after the 1000-token one, a cache point after the last."""
    return [blk(f"m{index}", 10, FIVE_MINUTES if index == count else None) for index in range(1, count + 1)]


def test_a_point_within_the_lookback_finds_the_entry() -> None:
    cache = _primed(lookback=3)
    # The point is at index 3, the entry at index 0: 3 - 0 = 3 boundaries back, within the limit.
    # Read the 1000 cached tokens, write the 3 x 10 = 30 after them up to the point.
    assert split(cache.bill([blk("sys", 1000), *_messages(3)])) == (0, 1000, 30)


def test_a_point_beyond_the_lookback_finds_nothing() -> None:
    cache = _primed(lookback=3)
    # The point is at index 4: 4 boundaries back from it, one more than the limit. The entry is live
    # but not found, so the whole prefix, 1000 + 4 x 10 = 1040, is written again.
    assert split(cache.bill([blk("sys", 1000), *_messages(4)])) == (0, 0, 1040)


def test_a_second_point_brings_an_old_entry_back_within_reach() -> None:
    cache = _primed(lookback=3)
    # Same request as above plus a point on the 1000-token block itself: that point finds the entry.
    assert split(cache.bill([blk("sys", 1000, FIVE_MINUTES), *_messages(4)])) == (0, 1000, 40)


# ------------------------------------------------------------------------------------ several points


def test_several_cache_points_in_one_request() -> None:
    clock, cache = sim(min_tokens=400)
    tools, system, question = blk("tools", 200, FIVE_MINUTES), blk("sys", 300, FIVE_MINUTES), blk("q", 50)
    first = [tools, system, blk("u1", 400, FIVE_MINUTES), question]
    second = [tools, system, blk("u2", 400, FIVE_MINUTES), question]

    # t=0: prefixes at the points are 200, 500 and 900 tokens. 200 < 400 is not stored; 500 and 900 are.
    # The write runs to the last point (900), the 50 after it are uncached.
    assert split(cache.bill(first)) == (50, 0, 900)
    assert cache.live_entries() == 2

    # t=100: a different third block. The longest live prefix it matches is the 500 at the system point:
    # read 500, write the 400 of u2 (a third entry), 50 uncached. The 500 entry now expires at 400.
    clock.advance(100)
    assert split(cache.bill(second)) == (50, 500, 400)
    assert cache.live_entries() == 3

    # t=350: the 900 entry written at t=0 is gone (expired at 300), the 500 one lives until 400.
    # The first request again reads 500 and writes the 400 of u1 anew.
    clock.advance(250)
    assert cache.live_entries() == 2
    assert split(cache.bill(first)) == (50, 500, 400)
    # And once more at once: now the longest entry, all 900, is live.
    assert split(cache.bill(first)) == (50, 900, 0)


# ------------------------------------------------------------------------------------ one-hour entries


def test_one_hour_entries() -> None:
    clock, cache = sim(min_tokens=500)
    request = [blk("sys", 1000, ONE_HOUR), blk("q", 100)]
    first = cache.bill(request)
    # Written for an hour: 100 uncached + 2.0 x 1000 written = 2100 token equivalents.
    assert split(first) == (100, 0, 1000)
    assert first.hour_write == 1000
    assert first.billed == pytest.approx(2100.0)
    # t=3000: a five-minute entry would be long gone; this one is read: 100 + 0.1 x 1000 = 200.
    clock.advance(3000)
    second = cache.bill(request)
    assert split(second) == (100, 1000, 0)
    assert second.billed == pytest.approx(200.0)
    # t=6600: an hour after that read: gone, written again.
    clock.advance(3600)
    assert split(cache.bill(request)) == (100, 0, 1000)


def test_one_request_writing_under_both_lifetimes_bills_each_segment_at_its_own() -> None:
    clock, cache = sim(min_tokens=500)
    # An hour-long point after the system prompt, a five-minute one after the question.
    request = [blk("sys", 1000, ONE_HOUR), blk("q", 600, FIVE_MINUTES), blk("tail", 50)]
    first = cache.bill(request)
    # 50 uncached; 1000 written for an hour (x2.0) and the next 600 for five minutes (x1.25).
    assert split(first) == (50, 0, 1600) and first.hour_write == 1000
    assert first.billed == pytest.approx(50 + 2000 + 750)
    # t=400: the five-minute entry is gone, the hour-long one is read; the 600 are written again.
    clock.advance(400)
    second = cache.bill(request)
    assert split(second) == (50, 1000, 600) and second.hour_write == 0
    assert second.billed == pytest.approx(50 + 100 + 750)


def test_request_ttls_are_read_from_both_request_shapes() -> None:
    converse = {
        "system": [{"text": "a"}, {"cachePoint": {"type": "default", "ttl": "1h"}}],
        "messages": [{"role": "user", "content": [{"text": "b"}, {"cachePoint": {"type": "default"}}]}],
    }
    assert [unit.point_ttl for unit in bedrock_units(converse)] == [ONE_HOUR, FIVE_MINUTES]
    messages_api = {
        "system": [{"type": "text", "text": "a", "cache_control": {"type": "ephemeral", "ttl": "1h"}}],
        "messages": [
            {"role": "user", "content": [{"type": "text", "text": "b", "cache_control": {"type": "ephemeral"}}]}
        ],
    }
    units = anthropic_units(messages_api)
    assert [unit.point_ttl for unit in units] == [ONE_HOUR, FIVE_MINUTES]
    # Moving a cache point does not change a block's key, so the prefix still matches.
    unmarked = anthropic_units({"messages": [{"role": "user", "content": [{"type": "text", "text": "b"}]}]})
    assert unmarked[0].key == units[1].key and unmarked[0].point_ttl is None


# ------------------------------------------------------------------------------------ the bill


def test_billed_call_arithmetic() -> None:
    call = BilledCall(input_tokens=100, cache_read=1000, cache_write=200)
    # 100 x 1 + 200 x 1.25 + 1000 x 0.1 = 100 + 250 + 100.
    assert call.billed == pytest.approx(450.0)
    assert call.prompt_tokens == 1300
    # Written for an hour: 100 + 200 x 2.0 + 100.
    assert BilledCall(100, 1000, 200, hour_write=200).billed == pytest.approx(600.0)
    # Half of it for an hour: 100 + 100 x 1.25 + 100 x 2.0 + 100.
    assert BilledCall(100, 1000, 200, hour_write=100).billed == pytest.approx(525.0)
    # Nothing cached: the input as is.
    assert BilledCall(700, 0, 0).billed == pytest.approx(700.0)


def test_cache_bill_totals_by_label() -> None:
    _, cache = sim(min_tokens=500)
    request = [blk("sys", 1000, FIVE_MINUTES), blk("q", 100)]
    cache.bill(request, label="agent")  # 100 + 1.25 x 1000 = 1350
    cache.bill(request, label="summary", output_tokens=7)  # 100 + 0.1 x 1000 = 200
    assert cache.billed("agent") == pytest.approx(1350.0)
    assert cache.billed("summary") == pytest.approx(200.0)
    assert cache.billed() == pytest.approx(1550.0)
    assert cache.calls[1].output_tokens == 7 and cache.calls[1].label == "summary"


# ------------------------------------------------------------------------------------ through strands


SYSTEM_PROMPT = "You answer in one short line. " * 20
ANSWER = "an answer " * 30


def _check_usage_is_the_bill(agent: Agent, cache: PromptCache) -> None:
    usage = agent.event_loop_metrics.accumulated_usage
    calls = cache.calls
    assert usage.get("cacheReadInputTokens", 0) == sum(call.cache_read for call in calls)
    assert usage.get("cacheWriteInputTokens", 0) == sum(call.cache_write for call in calls)
    assert usage["inputTokens"] == sum(call.input_tokens for call in calls)
    assert usage["outputTokens"] == sum(call.output_tokens for call in calls)


def test_bedrock_agent_usage_is_the_simulated_bill() -> None:
    clock = SimClock()
    cache = PromptCache(clock, min_tokens=50)
    model = bedrock_model(
        cache,
        lambda _: Reply([{"text": ANSWER}]),
        cache_config=CacheConfig(strategy="auto"),
        context_window_limit=32000,
    )
    agent = Agent(model=model, system_prompt=SYSTEM_PROMPT, callback_handler=None)
    agent("first question " + "word " * 100)
    clock.advance(30)
    agent("second question " + "word " * 100)

    first, second = cache.calls
    # The SDK's last cache point closes the request, so the first call writes all of its input ...
    units = bedrock_units(model.client.requests[0])
    assert units[-1].point_ttl is not None
    assert split(first) == (0, 0, sum(cache.count(unit.key) for unit in units))
    # ... and the second reads exactly that, writing only what the turn added.
    assert second.cache_read == first.cache_write
    assert second.input_tokens == 0 and second.cache_write > 0
    _check_usage_is_the_bill(agent, cache)


@tool
def define(word: str) -> str:
    """Define a word.

    Args:
        word: The word to define.
    """
    return f"{word}: " + "a meaning " * 40


def _anthropic_responder(request: dict[str, Any]) -> Reply:
    last = request["messages"][-1]["content"]
    asks_for_a_tool = any(block.get("type") == "text" and "define" in block["text"] for block in last)
    if asks_for_a_tool:
        use = {"toolUseId": "toolu_stub_1", "name": "define", "input": {"word": "cache"}}
        return Reply([{"text": "Looking it up."}, {"toolUse": use}])
    return Reply([{"text": ANSWER}])


def test_anthropic_agent_usage_is_the_simulated_bill(caplog: pytest.LogCaptureFixture) -> None:
    clock = SimClock()
    cache = PromptCache(clock, min_tokens=50)
    model = anthropic_model(
        cache, _anthropic_responder, cache_config=CacheConfig(strategy="auto"), context_window_limit=32000
    )
    agent = Agent(model=model, system_prompt=SYSTEM_PROMPT, tools=[define], callback_handler=None)
    agent("first question " + "word " * 100)
    clock.advance(30)
    result = agent("please define cache " + "word " * 100)
    assert result.stop_reason == "end_turn"

    first, tool_call, after_tool = cache.calls
    requests = model.client.requests
    # The tool ran and its result went back in the third request.
    assert requests[2]["messages"][-1]["content"][0]["type"] == "tool_result"
    assert requests[2]["messages"][-1]["content"][0]["tool_use_id"] == "toolu_stub_1"
    # Cache points: the end of the system prompt and the last block of the last user message; none on tools.
    for request in requests:
        assert "cache_control" in request["system"][-1]
        assert "cache_control" in request["messages"][-1]["content"][-1]
        marked = [block for message in request["messages"] for block in message["content"] if "cache_control" in block]
        assert len(marked) == 1
        assert all("cache_control" not in spec for spec in request["tools"])
    # The first call writes its whole input; the second turn reads exactly that; the call after the
    # tool reads all the previous call cached.
    assert split(first) == (0, 0, sum(cache.count(unit.key) for unit in anthropic_units(requests[0])))
    assert tool_call.cache_read == first.cache_write
    assert after_tool.cache_read == tool_call.cache_read + tool_call.cache_write
    assert all(call.input_tokens == 0 for call in cache.calls)
    _check_usage_is_the_bill(agent, cache)

    # The stub refuses count_tokens; the SDK falls back to its own estimate.
    model.update_config(use_native_token_count=True)
    with caplog.at_level(logging.DEBUG, logger="strands.models.anthropic"):
        native = asyncio.run(model.count_tokens(agent.messages, system_prompt=SYSTEM_PROMPT))
    assert "falling back to estimation" in caplog.text
    model.update_config(use_native_token_count=False)
    assert native == asyncio.run(model.count_tokens(agent.messages, system_prompt=SYSTEM_PROMPT)) > 0


def test_anthropic_stub_refuses_a_fifth_cache_point() -> None:
    cache = PromptCache(SimClock())
    model = anthropic_model(cache, lambda _: Reply([{"text": "no"}]))
    marked = {"type": "text", "text": "x", "cache_control": {"type": "ephemeral"}}
    request = {"model": "m", "max_tokens": 1, "messages": [{"role": "user", "content": [marked] * 5}]}
    with pytest.raises(anthropic.BadRequestError, match="Found 5"):
        model.client.messages.stream(**request)
    assert cache.calls == []
