"""``.when(..., cache_aware=True)``: edits of the provider's cached prefix wait until they are due.

Every session here is a real ``strands.Agent`` on strands' own ``BedrockModel`` whose client is
stubbed (:func:`strands_offload.bench.stub_clients.bedrock_model`): the requests are the ones the
SDK builds, cache points included, and the simulated provider cache bills each of them on a
simulated clock. The responder asks for the scripted tool calls of each turn, then answers; every
model call takes 5 simulated seconds.

The observable behaviour checked is what the provider received (``model.client.requests``) and
what it billed (``cache.calls``): whether an old tool result went out whole or as a preview, and
whether a request read all that the previous one had cached.
"""

from __future__ import annotations

import asyncio
import json
import math
import random
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from strands import Agent, tool
from strands.hooks.events import BeforeModelCallEvent
from strands.models.model import CacheConfig
from strands.types.exceptions import ContextWindowOverflowException
from strands_offload.bench.prompt_cache import BilledCall, PromptCache, SimClock, bedrock_units
from strands_offload.bench.stub_clients import Reply, bedrock_model
from strands_offload.context_manager import ContextManager, Offload

CALL_SECONDS = 5.0
LIFETIME = 300.0
PREVIEW_TOKENS = 100
THRESHOLD = 500
SYSTEM_PROMPT = "You are a terse assistant. " * 10
#: A Bedrock model the SDK's ``CacheConfig(strategy="auto")`` does not cache for (not Claude).
UNCACHED_MODEL_ID = "amazon.nova-pro-v1:0"
AUTO = CacheConfig(strategy="auto")


def _body(part: int, tokens: int) -> str:
    """About ``tokens`` tokens (a quarter of the characters) of tool output, distinct per part."""
    line = f"part {part} row ok value\n"
    return (line * (tokens * 4 // len(line) + 1))[: tokens * 4]


@tool
def fetch(part: int, size: int) -> str:
    """Fetch one part of the dataset.

    Args:
        part: Which part.
        size: How long the part is, in tokens.
    """
    return _body(part, size)


@tool
def grep(part: int, size: int) -> str:
    """Search one part of the dataset.

    Args:
        part: Which part.
        size: How long the answer is, in tokens.
    """
    return _body(part, size)


@dataclass
class Turn:
    """One user turn: a prompt of about ``prompt`` extra tokens, the tool calls (one model answer each,
    ``(tool, result tokens)``), then a text answer; the user comes back ``then_wait`` seconds later."""

    calls: list[tuple[str, int]]
    prompt: int = 0
    then_wait: float = 10.0


def fetches(*sizes: int, prompt: int = 0, then_wait: float = 10.0) -> Turn:
    return Turn([("fetch", size) for size in sizes], prompt, then_wait)


class Script:
    """The responder: each turn's tool calls, then an answer; a summary for a summary request."""

    def __init__(self, clock: SimClock) -> None:
        self.clock = clock
        self.queue: list[Reply] = []
        self.originals: dict[str, str] = {}

    def plan(self, number: int, turn: Turn) -> None:
        self.queue = []
        for k, (name, size) in enumerate(turn.calls):
            use_id, part = f"t{number}_{k}", 10 * number + k
            self.originals[use_id] = _body(part, size)
            use = {"toolUseId": use_id, "name": name, "input": {"part": part, "size": size}}
            self.queue.append(Reply([{"toolUse": use}]))
        self.queue.append(Reply([{"text": f"answer {number}: " + "fine " * 20}]))

    def __call__(self, request: dict[str, Any]) -> Reply:
        self.clock.advance(CALL_SECONDS)
        if "toolConfig" not in request:  # the summarizer's request carries no tools
            return Reply([{"text": "summary of the earlier work " * 10}], label="summary")
        return self.queue.pop(0) if self.queue else Reply([{"text": "done"}])


@dataclass
class Session:
    agent: Agent
    model: Any
    cache: PromptCache
    script: Script
    #: Tokens of the messages of each agent request, counted by the model after the manager ran.
    sizes: list[int] = field(default_factory=list)
    #: The event loop's projection of each agent request (system prompt and tool specs included).
    projected: list[int] = field(default_factory=list)

    @property
    def requests(self) -> list[dict[str, Any]]:
        """The agent's own requests (not the summarizer's), in order."""
        return [
            request
            for request, call in zip(self.model.client.requests, self.cache.calls, strict=True)
            if call.label == "agent"
        ]

    @property
    def calls(self) -> list[BilledCall]:
        """The bill of each of :attr:`requests`."""
        return [call for call in self.cache.calls if call.label == "agent"]

    def all_requests(self) -> list[dict[str, Any]]:
        return list(self.model.client.requests)

    def state(self, request: dict[str, Any]) -> dict[str, str]:
        """Each tool result ``request`` carries: ``"full"`` (the tool's output as it came) or ``"preview"``."""
        out: dict[str, str] = {}
        for message in request["messages"]:
            for block in message["content"]:
                if "toolResult" in block:
                    result = block["toolResult"]
                    text = "".join(item.get("text", "") for item in result["content"])
                    out[result["toolUseId"]] = (
                        "full" if text == self.script.originals[result["toolUseId"]] else "preview"
                    )
        return out

    def first_carrying(self, use_id: str) -> int:
        """The index of the first agent request that carries the result of ``use_id``."""
        return next(i for i, request in enumerate(self.requests) if use_id in self.state(request))


def truncate(*, cache_aware: bool, target: Any = "tool_results", preserve_recent: int = 1) -> Any:
    return Offload.truncate(target, {"preview_tokens": PREVIEW_TOKENS}).when(
        threshold=THRESHOLD, preserve_recent=preserve_recent, cache_aware=cache_aware
    )


def run(
    strategies: list[Any],
    turns: Sequence[Turn],
    *,
    window: int,
    cache_config: CacheConfig | None = AUTO,
    model_id: str | None = None,
) -> Session:
    """Run ``turns`` through an agent with ``ContextManager(strategies)`` on the simulated cache."""
    clock = SimClock()
    cache = PromptCache(clock, min_tokens=256)
    script = Script(clock)
    config: dict[str, Any] = {"context_window_limit": window}
    if cache_config is not None:
        config["cache_config"] = cache_config
    if model_id is not None:
        config["model_id"] = model_id
    model = bedrock_model(cache, script, **config)
    manager = ContextManager(strategies=strategies, stash=False, clock=clock)
    agent = Agent(
        model=model, system_prompt=SYSTEM_PROMPT, tools=[fetch, grep], context_manager=manager, callback_handler=None
    )
    session = Session(agent, model, cache, script)

    async def _size(event: BeforeModelCallEvent) -> None:  # registered after the manager's: what is sent
        session.sizes.append(await event.agent.model.count_tokens(event.agent.messages))
        session.projected.append(event.projected_input_tokens or 0)

    agent.hooks.add_callback(BeforeModelCallEvent, _size)
    for number, turn in enumerate(turns):
        script.plan(number, turn)
        agent(f"turn {number}: look it up " + "word " * (turn.prompt * 4 // 5))
        clock.advance(turn.then_wait)
    return session


def dumps(requests: list[dict[str, Any]]) -> list[str]:
    return [json.dumps(request, sort_keys=True, ensure_ascii=False) for request in requests]


def cache_point_message(request: dict[str, Any]) -> int:
    """The index of the message the SDK put the request's (one) message cache point in."""
    marked = [i for i, m in enumerate(request["messages"]) if any("cachePoint" in b for b in m["content"])]
    assert len(marked) == 1, marked
    return marked[0]


def result_message(request: dict[str, Any], use_id: str) -> int:
    return next(
        i
        for i, m in enumerate(request["messages"])
        if any(b.get("toolResult", {}).get("toolUseId") == use_id for b in m["content"])
    )


def reads_all_cached(calls: list[BilledCall], index: int) -> bool:
    """Whether agent call ``index`` read all the previous one had read and written (no cache lost)."""
    before = calls[index - 1]
    return calls[index].cache_read >= before.cache_read + before.cache_write


# A large old result (1,200 tokens, 1,100 freed by its preview) followed, inside the cached prefix,
# by a 3,000-token prompt: rewriting the prefix from the result on costs more than the freed tokens
# save over the calls the 20,000-token window leaves. It becomes eligible (preserve_recent=1) when
# t1_0 arrives, while the previous request's cache point (the last user message) lies after it.
DEFERRED = [fetches(1200), fetches(300, prompt=3000), fetches(300), fetches(300), fetches(300)]
DEFERRED_WINDOW = 20_000


# ------------------------------------------------------------------------------------ 1. deferral


def test_an_old_result_inside_the_cached_prefix_waits_while_the_plain_pipeline_truncates_it() -> None:
    plain = run([truncate(cache_aware=False)], DEFERRED, window=DEFERRED_WINDOW)
    aware = run([truncate(cache_aware=True)], DEFERRED, window=DEFERRED_WINDOW)

    eligible = aware.first_carrying("t1_0")  # t0_0 is no longer among the preserve_recent=1 latest
    assert eligible == plain.first_carrying("t1_0") == 3
    # Until then both sent the same requests; the previous request cached a prefix holding t0_0.
    assert dumps(aware.requests[:eligible]) == dumps(plain.requests[:eligible])
    previous = aware.requests[eligible - 1]
    assert result_message(previous, "t0_0") < cache_point_message(previous)

    # Without cache_aware the result is truncated at once, and the cache read up to it is lost.
    assert plain.state(plain.requests[eligible])["t0_0"] == "preview"
    assert not reads_all_cached(plain.calls, eligible)
    # With it, the result goes out whole in this request and all the later ones of the session ...
    for request in aware.requests[eligible:]:
        assert aware.state(request)["t0_0"] == "full"
    # ... and no request loses a cache read: each reads all the previous one had cached.
    assert aware.calls[eligible].cache_read > 0
    for index in range(eligible, len(aware.calls)):
        assert reads_all_cached(aware.calls, index), index
    assert max(aware.sizes) < DEFERRED_WINDOW


# ------------------------------------------------------------------------------------ 2. batching


# Two large fetches (t0_0, t1_0) wait inside the prefix; then a large grep result (t3_0) ages too,
# and a second strategy that edits grep results rewrites the prefix for it: both fetches must be
# truncated in that same request.
BATCHED = [
    fetches(1200),
    fetches(1200, prompt=3000),
    fetches(300, prompt=3000),
    Turn([("grep", 1500)]),
    Turn([("grep", 300)]),
    fetches(300),
]


def _grep_truncate() -> Any:
    return truncate(cache_aware=False, target=["grep"])


def _grep_summary() -> Any:
    return Offload.summarize(["grep"]).when(utilization=0.2, preserve_recent=1)


@pytest.mark.parametrize(
    "pipeline",
    [
        lambda: [truncate(cache_aware=True, target=["fetch"]), _grep_truncate()],
        lambda: [_grep_truncate(), truncate(cache_aware=True, target=["fetch"])],
        lambda: [truncate(cache_aware=True, target=["fetch"]), _grep_summary()],
    ],
    ids=["grep-truncate-after", "grep-truncate-before", "grep-summary-after"],
)
def test_pending_edits_apply_with_another_edit_of_the_prefix(pipeline: Any) -> None:
    session = run(pipeline(), BATCHED, window=DEFERRED_WINDOW)
    # The control: the same session with the cache-aware strategy alone (nothing else edits).
    quiet = run([truncate(cache_aware=True, target=["fetch"])], BATCHED, window=DEFERRED_WINDOW)

    edit = session.first_carrying("t4_0")  # t3_0 ages past preserve_recent: the prefix is rewritten
    assert edit == quiet.first_carrying("t4_0")
    before = session.requests[edit - 1]
    # Both fetches were pending: eligible, inside the cached prefix, still whole.
    assert session.state(before)["t0_0"] == session.state(before)["t1_0"] == "full"
    assert result_message(before, "t1_0") < cache_point_message(before)
    assert quiet.state(quiet.requests[edit])["t0_0"] == quiet.state(quiet.requests[edit])["t1_0"] == "full"

    state = session.state(session.requests[edit])
    # The grep result was edited (a preview, or summarized away) ...
    assert state.get("t3_0", "gone") != "full"
    # ... and in the same request every pending fetch is a preview or gone: none is whole.
    assert state.get("t0_0", "gone") != "full" and state.get("t1_0", "gone") != "full", state
    assert state["t2_0"] == "full"  # the latest fetch (preserve_recent=1), and below the threshold
    # The prefix was paid for once: the next request reads it all again.
    assert reads_all_cached(session.calls, edit + 1)


# ------------------------------------------------------------------------------------ 3. cold cache


@pytest.mark.parametrize(
    ("ttl", "wait", "cold"),
    [
        (None, LIFETIME + 100, True),  # five minutes: 400 s later nothing is cached
        ("1h", LIFETIME + 100, False),  # an hour: 400 s later the prefix is still cached, the edit still waits
        ("1h", 3600 + 100, True),
    ],
    ids=["5m-400s", "1h-400s", "1h-3700s"],
)
def test_a_cold_cache_lets_the_pending_edit_apply(ttl: str | None, wait: float, cold: bool) -> None:
    config = CacheConfig(strategy="auto", ttl=ttl)
    turns = list(DEFERRED)
    turns[1] = fetches(300, prompt=3000, then_wait=wait)  # the user comes back ``wait`` seconds later
    warm = run([truncate(cache_aware=True)], DEFERRED, window=DEFERRED_WINDOW, cache_config=config)
    later = run([truncate(cache_aware=True)], turns, window=DEFERRED_WINDOW, cache_config=config)

    waited = later.first_carrying("t1_0")
    assert later.state(later.requests[waited])["t0_0"] == "full"  # the cache is warm: it waits, as in test 1
    comeback = waited + 1  # the first request of turn 2
    assert warm.state(warm.requests[comeback])["t0_0"] == "full"
    assert warm.calls[comeback].cache_read > 0
    if cold:
        assert later.state(later.requests[comeback])["t0_0"] == "preview"
        # Nothing was lost by it: the provider had nothing cached any more.
        assert later.calls[comeback].cache_read == 0
    else:
        assert later.state(later.requests[comeback])["t0_0"] == "full"
        assert reads_all_cached(later.calls, comeback)


# ------------------------------------------------------------------------------------ 4. forced by the window


def _forcing_window(session: Session, index: int) -> int:
    """The window at which request ``index`` of an unedited session is the first where the request (as
    the event loop projects it: system prompt and tool specs included) plus the mean growth of the
    messages per request (``(sizes[i] - sizes[0]) / i``) reaches the window."""
    sizes = session.sizes
    return math.ceil(session.projected[index] + (sizes[index] - sizes[0]) / index)


def test_the_window_forces_the_pending_edit() -> None:
    free = run([truncate(cache_aware=True)], DEFERRED, window=DEFERRED_WINDOW)
    sizes, last = free.sizes, len(free.sizes) - 1
    assert all(free.state(request)["t0_0"] == "full" for request in free.requests[1:])  # nothing edited
    window = _forcing_window(free, last)
    eligible = free.first_carrying("t1_0")
    # Before the last request, the request plus the growth expected of one more call stay below it.
    assert all(free.projected[i] + (sizes[i] - sizes[0]) / i < window for i in range(eligible, last))
    # The messages alone are far from it: the system prompt and the tool specs count.
    assert sizes[last] + (sizes[last] - sizes[0]) / last < window - 300

    tight = run([truncate(cache_aware=True)], DEFERRED, window=window)
    for request in tight.requests[eligible:last]:
        assert tight.state(request)["t0_0"] == "full"
    assert tight.state(tight.requests[last])["t0_0"] == "preview"
    assert max(tight.sizes) < window


# ------------------------------------------------------------------------------------ 5. pays


@pytest.mark.parametrize(
    ("turns", "window", "old", "newer"),
    [
        # A 5,000-token result with only its answer and a short prompt after it in the prefix.
        ([fetches(300, prompt=3000), fetches(5000), fetches(300), fetches(300)], 100_000, "t1_0", "t2_0"),
        # The session of test 1, with a window leaving room for hundreds of calls at 0.1 per read.
        (DEFERRED, 1_000_000, "t0_0", "t1_0"),
    ],
    ids=["huge-result-near-the-prefix-end", "huge-window"],
)
def test_an_edit_that_pays_for_its_cache_write_applies_at_once(
    turns: list[Turn], window: int, old: str, newer: str
) -> None:
    plain = run([truncate(cache_aware=False)], turns, window=window)
    aware = run([truncate(cache_aware=True)], turns, window=window)
    aged = aware.first_carrying(newer)  # ``old`` is no longer among the preserve_recent=1 latest
    previous = aware.requests[aged - 1]
    assert result_message(previous, old) < cache_point_message(previous)  # inside the cached prefix
    assert aware.state(previous)[old] == "full"
    # Applied at once, as without the option: the same requests, and the prefix written anew.
    assert aware.state(aware.requests[aged])[old] == "preview"
    assert dumps(aware.requests) == dumps(plain.requests)
    assert not reads_all_cached(aware.calls, aged)
    assert aware.sizes[aged] + (aware.sizes[aged] - aware.sizes[0]) / aged < window  # not forced


# ------------------------------------------------------------------------------------ 6. no caching


@pytest.mark.parametrize(
    ("cache_config", "model_id"),
    [
        (None, None),  # a Claude model, no cache_config
        (AUTO, UNCACHED_MODEL_ID),  # "auto" on a model the SDK does not cache for
    ],
    ids=["no-cache-config", "auto-on-an-uncached-model"],
)
def test_without_prompt_caching_the_option_changes_nothing(
    cache_config: CacheConfig | None, model_id: str | None
) -> None:
    plain = run(
        [truncate(cache_aware=False)], DEFERRED, window=DEFERRED_WINDOW, cache_config=cache_config, model_id=model_id
    )
    aware = run(
        [truncate(cache_aware=True)], DEFERRED, window=DEFERRED_WINDOW, cache_config=cache_config, model_id=model_id
    )
    # Precondition: nothing is cached at all (no cache point sent, nothing read or written).
    assert all("cachePoint" not in json.dumps(request) for request in aware.all_requests())
    assert all(call.cache_read == call.cache_write == 0 for call in aware.cache.calls)
    # The old result is truncated as soon as it is eligible, with the option as without it ...
    assert plain.state(plain.requests[plain.first_carrying("t1_0")])["t0_0"] == "preview"
    assert [aware.state(r).get("t0_0") for r in aware.requests] == [plain.state(r).get("t0_0") for r in plain.requests]
    # ... and every request is the same, byte for byte.
    assert dumps(aware.all_requests()) == dumps(plain.all_requests())


# ------------------------------------------------------------------------------------ 7. invariants


def _pairs_intact(request: dict[str, Any]) -> bool:
    """Every toolUse of an assistant message is answered by a toolResult of the same id in the next
    message, a user one (and no result answers nothing)."""
    messages = request["messages"]
    for index, message in enumerate(messages):
        uses = {b["toolUse"]["toolUseId"] for b in message["content"] if "toolUse" in b}
        if message["role"] == "assistant" and uses:
            following = messages[index + 1] if index + 1 < len(messages) else None
            if following is None or following["role"] != "user":
                return False
            answered = {b["toolResult"]["toolUseId"] for b in following["content"] if "toolResult" in b}
            if not uses <= answered:
                return False
        if message["role"] == "user":
            results = {b["toolResult"]["toolUseId"] for b in message["content"] if "toolResult" in b}
            asked = (
                {b["toolUse"]["toolUseId"] for b in messages[index - 1]["content"] if "toolUse" in b}
                if index > 0
                else set()
            )
            if not results <= asked:
                return False
    return True


_turns = st.builds(
    Turn,
    calls=st.lists(st.tuples(st.sampled_from(["fetch", "grep"]), st.integers(50, 1800)), min_size=0, max_size=2),
    prompt=st.sampled_from([0, 0, 400, 1500]),
    then_wait=st.sampled_from([10.0, 60.0, 250.0, 310.0, 900.0]),
)


@settings(max_examples=40, deadline=None)
@given(
    turns=st.lists(_turns, min_size=2, max_size=6),
    preserve_recent=st.integers(1, 3),
    threshold=st.sampled_from([300, 600, 1200]),
    utilization=st.sampled_from([0.5, 0.7, 0.9]),
    window=st.sampled_from([6_000, 9_000, 14_000]),
)
def test_requests_stay_within_the_window_with_pairs_intact(
    turns: list[Turn], preserve_recent: int, threshold: int, utilization: float, window: int
) -> None:
    strategies = [
        Offload.truncate("tool_results", {"preview_tokens": PREVIEW_TOKENS}).when(
            threshold=threshold, preserve_recent=preserve_recent, cache_aware=True
        ),
        Offload.summarize("*").when(utilization=utilization, preserve_recent=2),
    ]
    session = run(strategies, turns, window=window)
    assert len(session.sizes) == len(session.requests)
    for size, request in zip(session.sizes, session.requests, strict=True):
        assert size <= window
        # Counted again from what the stub client received.
        assert asyncio.run(session.model.count_tokens(request["messages"])) <= window
    for request in session.all_requests():
        assert _pairs_intact(request), json.dumps(request)[:2000]


# ------------------------------------------------------------------------------------ 8. the whole request


class Overflowing:
    """A responder that refuses, as the provider does, a request whose input exceeds ``window``.

    The input is the provider's count (tools, system prompt and messages, as the simulated cache
    bills them); a refused request is counted and nothing else happens (no bill, no answer).
    """

    def __init__(self, script: Script, cache: PromptCache, window: int) -> None:
        self.script, self.cache, self.window = script, cache, window
        self.overflows = 0

    def __call__(self, request: dict[str, Any]) -> Reply:
        tokens = sum(self.cache.count(unit.key) for unit in bedrock_units(request))
        if tokens > self.window:
            self.overflows += 1
            self.cache.calls.append(BilledCall(0, 0, 0, 0, 0, self.cache.clock(), "overflow"))  # keeps the zip
            raise ContextWindowOverflowException(f"input of {tokens} tokens is too long")
        return self.script(request)


def _sized_tools(spec_tokens: int) -> list[Any]:
    """``fetch`` and ``grep`` with descriptions of about ``spec_tokens`` tokens between them."""
    rules = " ".join(f"Rule {i}: parts are numbered from zero." for i in range(spec_tokens * 4 // 2 // 36))
    return [
        tool(name=name, description=f"{name.capitalize()} one part of the dataset. {rules}")(
            lambda part, size: _body(part, size)  # noqa: ARG005 - the arguments are the tool's
        )
        for name in ("fetch", "grep")
    ]


def run_sized(
    strategies: list[Any], turns: Sequence[Turn], *, window: int, prompt_tokens: int, spec_tokens: int
) -> tuple[Session, Overflowing]:
    """:func:`run` with a system prompt and tool specs of about the given sizes, on a provider that
    refuses requests above ``window`` (the manager recovers and retries, as with any provider)."""
    clock = SimClock()
    cache = PromptCache(clock, min_tokens=256)
    script = Script(clock)
    responder = Overflowing(script, cache, window)
    model = bedrock_model(cache, responder, context_window_limit=window, cache_config=AUTO)
    manager = ContextManager(strategies=strategies, stash=False, clock=clock)
    prompt = " ".join(f"Guideline {i}: be terse and exact." for i in range(prompt_tokens * 4 // 32)) or SYSTEM_PROMPT
    agent = Agent(
        model=model,
        system_prompt=prompt,
        tools=_sized_tools(spec_tokens),
        context_manager=manager,
        callback_handler=None,
    )
    session = Session(agent, model, cache, script)
    for number, turn in enumerate(turns):
        script.plan(number, turn)
        try:
            agent(f"turn {number}: look it up " + "word " * (turn.prompt * 4 // 5))
        except ContextWindowOverflowException:
            break  # no strategy could make room: the session ends here, its overflows counted
        clock.advance(turn.then_wait)
    return session, responder


@dataclass
class SizedSession:
    """A random session: turns, the sizes of what every request carries besides them, the pipeline."""

    turns: list[Turn]
    prompt_tokens: int
    spec_tokens: int
    window: int
    threshold: int
    preserve_recent: int
    summarize_at: float | None

    @classmethod
    def from_seed(cls, seed: int) -> SizedSession:
        draw = random.Random(seed)
        turns = [
            Turn(
                [(draw.choice(["fetch", "grep"]), draw.randint(300, 2500)) for _ in range(draw.randint(1, 2))],
                prompt=draw.choice([0, 0, 400, 1500]),
                then_wait=draw.choice([10.0, 60.0, 310.0]),
            )
            for _ in range(draw.randint(3, 8))
        ]
        return cls(
            turns,
            prompt_tokens=draw.choice([500, 2000, 4000, 8000]),
            spec_tokens=draw.choice([200, 1000, 3000]),
            window=draw.choice([14_000, 16_000, 20_000]),
            threshold=draw.choice([300, 600, 1200]),
            preserve_recent=draw.randint(1, 3),
            summarize_at=draw.choice([None, None, None, 0.9]),
        )

    def pipeline(self, cache_aware: bool) -> list[Any]:
        truncating = Offload.truncate("tool_results", {"preview_tokens": PREVIEW_TOKENS}).when(
            threshold=self.threshold, preserve_recent=self.preserve_recent, cache_aware=cache_aware
        )
        if self.summarize_at is None:
            return [truncating]
        return [truncating, Offload.summarize("*").when(utilization=self.summarize_at, preserve_recent=2)]

    def overflows(self, cache_aware: bool) -> int:
        """Requests the provider refused for their size (the manager recovered from them, or gave up)."""
        sizes = {"window": self.window, "prompt_tokens": self.prompt_tokens, "spec_tokens": self.spec_tokens}
        return run_sized(self.pipeline(cache_aware), self.turns, **sizes)[1].overflows


@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 2**32 - 1))
def test_no_session_overflows_with_the_option_where_it_does_not_without_it(seed: int) -> None:
    # The request carries the system prompt and the tool specs as well as the messages: the
    # window forces a pending edit on what the model call will send (the event loop's projection),
    # so waiting never costs a request the plain strategy's edits would have kept within it.
    session = SizedSession.from_seed(seed)
    plain, aware = session.overflows(False), session.overflows(True)
    assert aware == 0 or plain > 0, (session, aware, plain)
    assert aware <= plain, (session, aware, plain)


def test_the_system_prompt_and_tool_specs_count_toward_the_window_that_forces_the_edit() -> None:
    # A 4,000-token system prompt and 3,000 tokens of tool specs: counting the messages alone, the
    # pending edits of the two old results waited and the request sent went over the window.
    turns = [
        fetches(947),
        fetches(1804),
        Turn([("grep", 1757), ("grep", 1906)], prompt=400, then_wait=60.0),
        fetches(1754, prompt=400),
    ]
    sizes = {"window": 16_000, "prompt_tokens": 4000, "spec_tokens": 3000}
    plain_session, plain = run_sized([truncate(cache_aware=False, preserve_recent=2)], turns, **sizes)
    session, aware = run_sized([truncate(cache_aware=True, preserve_recent=2)], turns, **sizes)
    assert plain.overflows == 0 and aware.overflows == 0
    assert max(call.prompt_tokens for call in session.calls) <= 16_000
    # It still waited while the window allowed: some request carried an eligible result whole.
    waited = [
        use_id
        for request, sent in zip(session.requests, plain_session.requests, strict=False)
        for use_id, state in session.state(request).items()
        if state == "full" and plain_session.state(sent).get(use_id) == "preview"
    ]
    assert waited
