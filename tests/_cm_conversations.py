"""Conversations and pipeline cases for the context manager's differential tests.

A :class:`PipelineCase` is everything one run needs: a history the Agent starts with, messages
that arrive afterwards, strategy specs, stash settings and the model's settings. :func:`run_case`
drives it through a real Agent the way the event loop does (hooks only) and returns an
:class:`Outcome` whose fields are compared between implementations.
"""

from __future__ import annotations

import asyncio
import copy
import random
from dataclasses import dataclass, field
from typing import Any

import strands.storage as sdk_storage
import strands_offload.storage as our_storage
from _cm_harness import (
    ContextModel,
    Impl,
    add_message,
    assert_same_json,
    before_model_call,
    encode_for_compare,
    ensure_tracking_ids,
    fixed_tracking_ids,
    overflow,
    retrieve,
    storage_contents,
)
from hypothesis import strategies as st
from strands import Agent

# --------------------------------------------------------------------------------------------------
# Content

WORDS = ["ok", "ERROR", "warn", "café", "naïve", "データ", "😀", "a\tb", '"q"', "back\\slash", "x" * 30, "", "cr\r"]
TOOL_NAMES = ("read_file", "search", "shell", "retrieve_context")
SIZES = {"tiny": (1, 1), "small": (3, 12), "large": (150, 700)}


def make_text(seed: int, size: str) -> str:
    """Numbered lines of mixed words (ASCII, accents, CJK, emoji, tabs, quotes, CR)."""
    rng = random.Random(seed)
    low, high = SIZES[size]
    lines = rng.randint(low, high)
    return "\n".join(
        f"{i + 1:04d} " + " ".join(rng.choice(WORDS) for _ in range(rng.randint(0, 9))) for i in range(lines)
    )


def make_json(seed: int, size: str) -> dict[str, Any]:
    rng = random.Random(seed)
    low, high = SIZES[size]
    rows = [
        {"id": i, "name": rng.choice(WORDS), "score": i / 7, "ok": i % 3 == 0, "none": None, "tags": ["é", i]}
        for i in range(rng.randint(low, high) // 2 + 1)
    ]
    return {"rows": rows, "total": len(rows), "nested": {"deep": [[1, 2], {"k": "v"}]}}


def make_bytes(seed: int, size: int) -> bytes:
    rng = random.Random(seed)
    return b"\x89PNG\r\n\x1a\n" + bytes(rng.randrange(256) for _ in range(size))


def image(seed: int, size: int = 300) -> dict[str, Any]:
    return {"image": {"format": "png", "source": {"bytes": make_bytes(seed, size)}}}


def document(seed: int, size: int = 300) -> dict[str, Any]:
    return {"document": {"format": "pdf", "name": f"report-{seed % 10}", "source": {"bytes": make_bytes(seed, size)}}}


# --------------------------------------------------------------------------------------------------
# Hypothesis strategies for conversations

seeds = st.integers(0, 2**16)
sizes = st.sampled_from(list(SIZES))


@st.composite
def result_items(draw: st.DrawFn) -> list[dict[str, Any]]:
    kinds = draw(st.lists(st.sampled_from(["text", "text", "json", "image", "document"]), min_size=0, max_size=3))
    items: list[dict[str, Any]] = []
    for kind in kinds:
        seed = draw(seeds)
        if kind == "text":
            items.append({"text": make_text(seed, draw(sizes))})
        elif kind == "json":
            items.append({"json": make_json(seed, draw(sizes))})
        elif kind == "image":
            items.append(image(seed, draw(st.integers(0, 2000))))
        else:
            items.append(document(seed, draw(st.integers(0, 2000))))
    return items


@st.composite
def conversations(draw: st.DrawFn, max_rounds: int = 7) -> list[dict[str, Any]]:
    """Alternating user/assistant messages starting and ending with a user message.

    Assistant turns hold text and tool uses (one tool is ``retrieve_context``); the next user turn
    answers every tool use with a result (text, JSON, images, documents, success or error).
    Messages carry tracking ids (a few do not: their stash keys say ``unknown``), some are pinned,
    some assistant turns report usage the way the event loop records it.
    """
    messages: list[dict[str, Any]] = [{"role": "user", "content": [{"text": make_text(draw(seeds), draw(sizes))}]}]
    for turn in range(draw(st.integers(1, max_rounds))):
        content: list[dict[str, Any]] = []
        if draw(st.booleans()):
            content.append({"text": make_text(draw(seeds), draw(sizes))})
        if draw(st.integers(0, 9)) == 0:
            content.append({"reasoningContent": {"reasoningText": {"text": "thinking", "signature": "sig"}}})
        uses = [
            {"toolUse": {"toolUseId": f"tu{turn}_{k}", "name": draw(st.sampled_from(TOOL_NAMES)), "input": {"k": k}}}
            for k in range(draw(st.integers(0 if content else 1, 3)))
        ]
        content.extend(uses)
        assistant: dict[str, Any] = {"role": "assistant", "content": content}
        if draw(st.integers(0, 3)) == 0:
            used = draw(st.integers(100, 30_000))
            assistant["metadata"] = {
                "usage": {"inputTokens": used, "outputTokens": 20, "totalTokens": used + 20},
                "metrics": {"latencyMs": 1},
            }
        messages.append(assistant)
        user_content: list[dict[str, Any]] = []
        for use in uses:
            status = draw(st.sampled_from(["success", "success", "error"]))
            tool_use_id = use["toolUse"]["toolUseId"]
            user_content.append(
                {"toolResult": {"toolUseId": tool_use_id, "status": status, "content": draw(result_items())}}
            )
        if not uses or draw(st.integers(0, 4)) == 0:
            user_content.append({"text": make_text(draw(seeds), draw(sizes))})
        if draw(st.integers(0, 6)) == 0:
            user_content.append(draw(st.sampled_from([image(draw(seeds)), document(draw(seeds))])))
        if draw(st.integers(0, 12)) == 0:
            user_content.append({"cachePoint": {"type": "default"}})
        messages.append({"role": "user", "content": user_content})
    for index, message in enumerate(messages):
        if draw(st.integers(0, 9)) > 0:
            message["tracking_id"] = f"m{index}"
        if draw(st.integers(0, 7)) == 0:
            message.setdefault("metadata", {})["custom"] = {"pinned": True}
    return messages


# --------------------------------------------------------------------------------------------------
# Strategies as data, built per implementation

TARGETS: list[Any] = [
    "*",
    "tool_results",
    "tool_result_errors",
    "assistant_text",
    "user_text",
    ["tool::read_file"],
    ["!tool::read_file"],
    ["search", "tool::shell"],
    ["tool::read_file", "!tool::shell"],
    ["retrieve_context"],
]


@dataclass(frozen=True)
class StrategySpec:
    """``Offload.<method>(target, config)`` and, unless ``when`` is None, ``.when(**when)``."""

    method: str
    target: Any
    config: dict[str, Any] | None = None
    when: dict[str, Any] | None = None

    def build(self, impl: Impl) -> Any:
        factory = getattr(impl.Offload, self.method)
        args = (copy.deepcopy(self.target),) if self.config is None else (copy.deepcopy(self.target), dict(self.config))
        strategy = factory(*args)
        return strategy if self.when is None else strategy.when(**self.when)


@st.composite
def conditions(draw: st.DrawFn, kind: str | None = None) -> dict[str, Any] | None:
    kind = kind or draw(st.sampled_from(["none", "threshold", "preserve", "threshold_preserve", "utilization"]))
    thresholds = st.sampled_from([0, 40, 300, 1_300, 3_000])
    preserve = st.sampled_from([1, 2, 4, 0.3, 0.7])
    if kind == "none":
        return None
    if kind == "threshold":
        return {"threshold": draw(thresholds)}
    if kind == "preserve":
        return {"preserve_recent": draw(preserve)}
    if kind == "threshold_preserve":
        return {"threshold": draw(thresholds), "preserve_recent": draw(preserve)}
    when: dict[str, Any] = {"utilization": draw(st.sampled_from([0.0, 0.3, 0.6, 0.9, 1.0]))}
    if draw(st.booleans()):
        when["threshold"] = draw(thresholds)
    if draw(st.booleans()):
        when["preserve_recent"] = draw(preserve)
    return when


@st.composite
def strategy_specs(draw: st.DrawFn, kind: str | None = None) -> StrategySpec:
    method = draw(st.sampled_from(["truncate", "summarize", "drop"]))
    target = draw(st.sampled_from(TARGETS))
    when = draw(conditions(kind))
    config: dict[str, Any] | None = None
    if method == "truncate":
        config = draw(
            st.sampled_from(
                [None, {"preview_tokens": 30}, {"preview_tokens": 250, "preview": "head"}, {"preview": "tail"}]
            )
        )
        preview = (config or {}).get("preview_tokens", 1_000)
        if when and "threshold" in when and when["threshold"] <= preview:
            # Construction would fail (pinned by the error tests); keep the case runnable.
            when = {**when, "threshold": preview + 1}
    elif method == "summarize":
        config = draw(st.sampled_from([None, {"system_prompt": "Summarize tersely."}, {"system_prompt": ""}]))
    return StrategySpec(method, target, config, when)


# --------------------------------------------------------------------------------------------------
# Cases and outcomes


@dataclass
class PipelineCase:
    """One run: history, arrivals, strategies, stash and model settings, retrievals afterwards."""

    history: list[dict[str, Any]]
    arrivals: list[dict[str, Any]] = field(default_factory=list)
    strategies: list[StrategySpec | str] | None = field(default_factory=list)
    """Specs, or preset names passed as they are; None for the manager's default pipeline."""
    stash: Any = None
    storage: str | None = None
    """``"sdk"`` / ``"ours"``: an InMemoryStorage of that package as ``Agent(storage=...)``; None: the default."""
    context_window_limit: int = 20_000
    projected: bool = True
    overflow_rounds: int = 0
    summaries: str = "digest"
    retrievals: list[dict[str, Any]] = field(default_factory=list)
    """Tool inputs; an int ``reference`` indexes the sorted stash keys of the run."""


@dataclass
class Outcome:
    """What one run produced, in forms that compare byte for byte."""

    error: str | None = None
    messages: str = ""
    stash: str | None = None
    storage: dict[str, bytes] | None = None
    retrievals: list[str] = field(default_factory=list)
    summary_requests: str = ""
    retries: list[bool] = field(default_factory=list)
    tools: list[str] = field(default_factory=list)


def _build(spec: StrategySpec | str, impl: Impl) -> Any:
    return spec if isinstance(spec, str) else spec.build(impl)


def _new_storage(kind: str | None) -> Any:
    if kind == "sdk":
        return sdk_storage.InMemoryStorage()
    if kind == "ours":
        return our_storage.InMemoryStorage()
    return None


def run_case(impl: Impl, case: PipelineCase) -> Outcome:
    """Run ``case`` through ``impl`` on a fresh Agent and collect the outcome."""
    try:
        strategies = None if case.strategies is None else [_build(spec, impl) for spec in case.strategies]
        manager = impl.ContextManager(strategies=strategies, stash=copy.deepcopy(case.stash))
    except Exception as error:  # both implementations must refuse the same input the same way
        return Outcome(error=f"{type(error).__name__}: {error}")
    model = ContextModel(context_window_limit=case.context_window_limit, summaries=case.summaries)
    storage = _new_storage(case.storage)
    agent = Agent(
        model=model,
        messages=copy.deepcopy(case.history),
        context_manager=manager,
        storage=storage,
        callback_handler=None,
    )
    session = agent.session_id

    def scrub(text: str) -> str:
        return text.replace(session, "<session>")

    async def drive() -> list[bool]:
        ensure_tracking_ids(agent)
        if not case.arrivals or (agent.messages and agent.messages[-1]["role"] == "user"):
            await before_model_call(agent, projected=case.projected)
        for message in copy.deepcopy(case.arrivals):
            await add_message(agent, message)
            if message["role"] == "user":
                await before_model_call(agent, projected=case.projected)
        return [await overflow(agent) for _ in range(case.overflow_rounds)]

    outcome = Outcome(tools=sorted(agent.tool_names))
    with fixed_tracking_ids():
        outcome.retries = asyncio.run(drive())
    outcome.messages = encode_for_compare(agent.messages)
    # The built-in summarizer prompt is prose each implementation words itself; a configured one must pass as is.
    configured = {
        spec.config["system_prompt"]
        for spec in case.strategies or []
        if isinstance(spec, StrategySpec) and "system_prompt" in (spec.config or {})
    }
    outcome.summary_requests = encode_for_compare(
        [
            {
                **request,
                "system_prompt": request["system_prompt"] if request["system_prompt"] in configured else "<built-in>",
            }
            for request in model.summary_requests
        ]
    )
    stash = manager.stash
    if stash is not None:
        snapshot = asyncio.run(stash.take_snapshot())
        outcome.stash = encode_for_compare(snapshot)
        keys = sorted(snapshot)
    else:
        keys = []
    if storage is not None:
        outcome.storage = {scrub(key): data for key, data in asyncio.run(storage_contents(storage)).items()}
    if "retrieve_context" in agent.tool_names:
        for request in case.retrievals:
            arguments = dict(request)
            if isinstance(arguments.get("reference"), int):
                if not keys:
                    continue
                arguments["reference"] = keys[arguments["reference"] % len(keys)]
            outcome.retrievals.append(scrub(encode_for_compare([arguments, retrieve(agent, **arguments)])))
    return outcome


def assert_same_outcome(expected: Outcome, actual: Outcome) -> None:
    """Field by field, so a failure shows which output differs and where."""
    assert actual.error == expected.error
    assert actual.tools == expected.tools
    assert actual.retries == expected.retries
    assert_same_json(expected.summary_requests, actual.summary_requests, "summarizer requests")
    assert_same_json(expected.messages, actual.messages, "messages")
    assert_same_json(expected.stash, actual.stash, "stash snapshots")
    if actual.storage != expected.storage:
        assert list(actual.storage or {}) == list(expected.storage or {}), "stored keys differ"
        bad = next(k for k in expected.storage or {} if (actual.storage or {})[k] != (expected.storage or {})[k])
        raise AssertionError(
            f"stored bytes differ at {bad}: {expected.storage[bad]!r:.300} != {actual.storage[bad]!r:.300}"
        )  # type: ignore[index]
    assert_same_json(encode_for_compare(expected.retrievals), encode_for_compare(actual.retrievals), "retrievals")


RETRIEVALS: list[dict[str, Any]] = [
    {"reference": 0},
    {"reference": 1, "pattern": "ERROR", "context_lines": 1},
    {"reference": 2, "line_range": {"start": 2, "end": 4}},
    {"reference": 3, "pattern": "caf[eé]", "line_range": {"start": 1, "end": 40}, "context_lines": 0},
    {"reference": 4, "pattern": ""},
    {"reference": 5, "line_range": {"start": 1}},
    {"reference": "nothing_here_0"},
    {"reference": 6, "pattern": "(unclosed"},
]


@st.composite
def retrieval_requests(draw: st.DrawFn) -> list[dict[str, Any]]:
    return draw(st.lists(st.sampled_from(RETRIEVALS), max_size=4, unique_by=lambda r: encode_for_compare(r)))


@st.composite
def pipeline_cases(draw: st.DrawFn, kind: str | None = None, max_strategies: int = 3) -> PipelineCase:
    """A conversation split into history and arrivals, with strategies of the given condition kind."""
    messages = draw(conversations())
    split = draw(st.integers(1, len(messages)))
    return PipelineCase(
        history=messages[:split],
        arrivals=messages[split:],
        strategies=draw(st.lists(strategy_specs(kind), min_size=1, max_size=max_strategies)),
        stash=draw(st.sampled_from([None, None, None, False, {"retrieval_tool": False}])),
        storage=draw(st.sampled_from([None, "sdk", "ours"])),
        context_window_limit=draw(st.sampled_from([1_500, 5_000, 20_000, 100_000])),
        projected=draw(st.booleans()),
        overflow_rounds=draw(st.sampled_from([0, 0, 1, 4])),
        summaries=draw(st.sampled_from(["digest", "digest", "digest", "empty", "error"])),
        retrievals=draw(retrieval_requests()),
    )


# --------------------------------------------------------------------------------------------------
# A fixed conversation with one of everything, for the sweep over methods, targets and conditions


def tool_use(tool_use_id: str, name: str) -> dict[str, Any]:
    return {"toolUse": {"toolUseId": tool_use_id, "name": name, "input": {"path": f"/{tool_use_id}"}}}


def tool_result(tool_use_id: str, status: str, *items: dict[str, Any]) -> dict[str, Any]:
    return {"toolResult": {"toolUseId": tool_use_id, "status": status, "content": list(items)}}


def sweep_conversation() -> list[dict[str, Any]]:
    """Fifteen messages: large and small texts, every result kind, a retrieval result, a pinned pair."""
    big = lambda seed: {"text": make_text(seed, "large")}  # noqa: E731 - local shorthand
    small = lambda seed: {"text": make_text(seed, "small")}  # noqa: E731
    messages: list[dict[str, Any]] = [
        {"role": "user", "content": [big(1)]},
        {"role": "assistant", "content": [small(2), tool_use("tu1", "read_file"), tool_use("tu2", "search")]},
        {"role": "user", "content": [tool_result("tu1", "success", big(3)), tool_result("tu2", "error", small(4))]},
        {"role": "assistant", "content": [tool_use("tu3", "shell")]},
        {"role": "user", "content": [tool_result("tu3", "success", {"json": make_json(5, "large")}, image(6))]},
        {"role": "assistant", "content": [big(7), tool_use("tu4", "retrieve_context")]},
        {"role": "user", "content": [tool_result("tu4", "success", big(8))]},
        {"role": "assistant", "content": [tool_use("tu5", "read_file")], "metadata": {"custom": {"pinned": True}}},
        {"role": "user", "content": [tool_result("tu5", "success", big(9), document(10))]},
        {"role": "assistant", "content": [big(11)]},
        {"role": "user", "content": [big(12), image(13)]},
        {"role": "assistant", "content": [tool_use("tu6", "search")]},
        {"role": "user", "content": [tool_result("tu6", "error", big(14))]},
        {"role": "assistant", "content": [small(15)]},
        {"role": "user", "content": [small(16)]},
    ]
    for index, message in enumerate(messages):
        message["tracking_id"] = f"m{index}"
    return messages
