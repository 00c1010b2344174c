"""``Offload.summarize(..., ahead=True)``: summaries started while the tools run.

With a deterministic summarizer the conversation after each turn, and every model input, equal
the synchronous summarize's; the summary is requested while the tools run; a span that changed
is summarized again; every way a turn ends early settles the summary started ahead (cancelled,
awaited, counted as unused) without a warning from the event loop.
"""

from __future__ import annotations

import asyncio
import gc
import logging
import time
import warnings
from collections.abc import AsyncIterable, Iterator
from typing import Any

import pytest
from _cm_harness import ContextModel, Reply, ToolCall, fixed_tracking_ids, without_usage
from hypothesis import given, settings
from hypothesis import strategies as st
from strands import Agent, tool
from strands.hooks.events import AfterToolsEvent, BeforeToolsEvent
from strands.types.content import Messages
from strands.types.streaming import StreamEvent
from strands_offload.context_manager import ContextManager, Offload


class TimedModel(ContextModel):
    """A :class:`ContextModel` whose summaries take ``summary_seconds`` and are timed."""

    def __init__(self, *args: Any, summary_seconds: float = 0.0, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.summary_seconds = summary_seconds
        self.summary_started: list[float] = []

    async def stream(self, messages: Messages, *args: Any, **kwargs: Any) -> AsyncIterable[StreamEvent]:
        if not (args[0] if args else kwargs.get("tool_specs")):
            self.summary_started.append(time.monotonic())
            await asyncio.sleep(self.summary_seconds)
        async for event in super().stream(messages, *args, **kwargs):
            yield event


def _lines(part: int, size: int) -> str:
    return "\n".join(f"12:00:{i % 60:02d} INFO part {part} request {i} ok" for i in range(size))


def _script(batches: list[list[int]], tool_name: str = "read_part") -> Any:
    """A script calling ``tool_name`` in batches (each a list of result sizes, in lines; call ``i`` of
    batch ``b`` reads part ``10 * b + i``), then answering "done"."""
    queue = [
        Reply(
            "",
            [ToolCall(tool_name, {"part": 10 * b + i, "size": size}, f"tu_{b}_{i}") for i, size in enumerate(batch)],
        )
        for b, batch in enumerate(batches)
    ]
    return lambda _messages: queue.pop(0) if queue else Reply("done")


tool_runs: list[tuple[float, float]] = []


@tool
def read_part(part: int, size: int) -> str:
    """Read one part of the service log."""
    started = time.monotonic()
    time.sleep(0.05)
    tool_runs.append((started, time.monotonic()))
    return _lines(part, size)


def _session(
    ahead: bool,
    batches: list[list[int]],
    *,
    window: int = 12_000,
    utilization: float = 0.6,
    preserve_recent: int = 2,
    summary_seconds: float = 0.0,
    summaries: str = "digest",
    tools: list[Any] | None = None,
    hooks: list[Any] | None = None,
) -> tuple[Agent, TimedModel, ContextManager]:
    tools = tools or [read_part]
    model = TimedModel(
        _script(batches, tools[0].tool_name),
        context_window_limit=window,
        summary_seconds=summary_seconds,
        summaries=summaries,
    )
    strategy = Offload.summarize("*", ahead=ahead).when(utilization=utilization, preserve_recent=preserve_recent)
    manager = ContextManager(strategies=[strategy])
    agent = Agent(model=model, tools=tools, context_manager=manager, callback_handler=None, hooks=hooks or [])
    return agent, model, manager


@pytest.fixture
def quiet_loop(caplog: pytest.LogCaptureFixture) -> Iterator[None]:
    """Fails the test on an event-loop complaint: a task destroyed pending, an exception never
    retrieved, a coroutine never awaited."""
    caplog.set_level(logging.ERROR, logger="asyncio")
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        yield
        gc.collect()
    assert [r.getMessage() for r in caplog.records if r.name == "asyncio"] == []


def _run(ahead: bool, batches: list[list[int]], **options: Any) -> tuple[Agent, TimedModel, ContextManager]:
    agent, model, manager = _session(ahead, batches, **options)
    with fixed_tracking_ids():
        agent("read the parts of the log")
    return agent, model, manager


# ------------------------------------------------------------------------------ same outcome


@settings(max_examples=12, deadline=None)
@given(
    batches=st.lists(st.lists(st.integers(5, 400), min_size=1, max_size=2), min_size=2, max_size=6),
    utilization=st.sampled_from([0.3, 0.5, 0.7]),
    preserve_recent=st.integers(1, 4),
)
def test_the_conversation_equals_the_synchronous_summarize(
    batches: list[list[int]], utilization: float, preserve_recent: int
) -> None:
    options = {"utilization": utilization, "preserve_recent": preserve_recent}
    sync_agent, sync_model, _ = _run(False, batches, **options)
    agent, model, manager = _run(True, batches, **options)
    assert without_usage(model.calls) == without_usage(sync_model.calls)
    assert without_usage(agent.messages) == without_usage(sync_agent.messages)
    made = len(model.summary_requests) - len(sync_model.summary_requests)
    assert made == manager.savings().summaries_ahead_unused  # every extra call is an unused one


def test_the_summary_is_requested_while_the_tools_run(quiet_loop: None) -> None:
    # The strategy was rebuilt by ``.when()`` (see ``_session``): the option survives it.
    batches = [[280], [280], [280]]
    tool_runs.clear()
    _, model, manager = _run(True, batches, window=10_000, summary_seconds=0.02)
    assert len(model.summary_requests) == 1 and manager.savings().summaries_ahead_unused == 0
    third_batch = tool_runs[2]
    assert third_batch[0] - 0.01 <= model.summary_started[0] <= third_batch[1]
    # Without ahead the summary waits for the tools.
    tool_runs.clear()
    _, sync_model, _ = _run(False, batches, window=10_000)
    assert sync_model.summary_started[0] >= tool_runs[2][1]


# ------------------------------------------------------------------------------ a real request's size

# A system prompt and a tool spec of a few thousand tokens each: the next model call's hooks see
# them in the event loop's projection (the usage the last response reported), so the decision
# taken while the tools run must count them too.
_PROMPT = "You are the service's log analyst. " + " ".join(f"Guideline {i}: read before answering." for i in range(250))
_SPEC = "Read one part of the service log. " + " ".join(
    f"Rule {i}: parts are numbered from zero and hold log lines." for i in range(100)
)
slow_runs: list[tuple[float, float]] = []


@tool(description=_SPEC)
def read_slowly(part: int, size: int) -> str:
    """Read one part of the service log; the third read takes a second."""
    started = time.monotonic()
    time.sleep(1.0 if part == 20 else 0.01)
    slow_runs.append((started, time.monotonic()))
    return _lines(part, size)


def _prompted_run(
    ahead: bool, window: int, *, summary_seconds: float = 0.0, utilization: float = 0.6
) -> tuple[Agent, TimedModel, ContextManager, float]:
    model = TimedModel(
        _script([[280], [280], [280]], "read_slowly"), context_window_limit=window, summary_seconds=summary_seconds
    )
    strategy = Offload.summarize("*", ahead=ahead).when(utilization=utilization, preserve_recent=2)
    manager = ContextManager(strategies=[strategy])
    agent = Agent(
        model=model, tools=[read_slowly], system_prompt=_PROMPT, context_manager=manager, callback_handler=None
    )
    slow_runs.clear()
    started = time.monotonic()
    with fixed_tracking_ids():
        agent("read the parts of the log")
    return agent, model, manager, time.monotonic() - started


@pytest.mark.parametrize("window", [19_000, 21_000])
def test_with_a_large_system_prompt_and_tool_specs_the_summary_runs_behind_the_tools(
    window: int, quiet_loop: None
) -> None:
    # The messages alone stay below 60% of the window when the third batch starts; with the
    # system prompt and the tool specs the next call crosses it, as the synchronous pass finds.
    _, sync_model, _, plain = _prompted_run(False, window)
    assert len(sync_model.summary_requests) == 1  # one summary, at the call after the third batch
    agent, model, manager, turn = _prompted_run(True, window, summary_seconds=1.0)
    assert len(model.summary_requests) == 1 and manager.savings().summaries_ahead_unused == 0
    third = slow_runs[2]
    # Started with the 1 s tool, not after it (ordering, not a timing bar: a loaded machine only
    # delays both sides).
    assert third[0] - 0.01 <= model.summary_started[0] < third[1] - 0.5
    # A 1 s summary behind a 1 s tool: the turn is the tool's, not the two of them in a row (they
    # would take 1 s more). The 0.1 s figure of the issue is measured by benches/summary_ahead.py;
    # here the margin only separates "overlapped" from "in a row" on a loaded machine.
    assert turn <= plain + 0.5, (turn, plain)
    assert without_usage(model.calls) == without_usage(sync_model.calls)


@pytest.mark.parametrize("utilization", [0.3, 0.5, 0.6, 0.7])
def test_with_a_large_system_prompt_no_summary_started_ahead_goes_unused(utilization: float) -> None:
    sync_agent, sync_model, _, _ = _prompted_run(False, 19_000, utilization=utilization)
    agent, model, manager, _ = _prompted_run(True, 19_000, utilization=utilization)
    assert manager.savings().summaries_ahead_unused == 0
    assert len(model.summary_requests) == len(sync_model.summary_requests)
    assert without_usage(agent.messages) == without_usage(sync_agent.messages)


# ------------------------------------------------------------------------------ a changed span


def test_a_span_changed_while_the_tools_ran_is_summarized_again(quiet_loop: None) -> None:
    pinned: list[Agent] = []

    @tool
    def read_and_pin(part: int, size: int) -> str:
        """Read one part of the service log and pin the first answer."""
        if part == 20 and pinned:
            pinned[0].messages[2].setdefault("metadata", {})["custom"] = {"pinned": True}
        return _lines(part, size)

    def script_for(ahead: bool) -> tuple[Agent, TimedModel, ContextManager]:
        agent, model, manager = _session(ahead, [[280], [280], [280]], window=10_000, tools=[read_and_pin])
        pinned[:] = [agent]
        with fixed_tracking_ids():
            agent("read the parts of the log")
        return agent, model, manager

    sync_agent, sync_model, _ = script_for(False)
    agent, model, manager = script_for(True)
    assert without_usage(agent.messages) == without_usage(sync_agent.messages)
    assert without_usage(model.calls) == without_usage(sync_model.calls)
    assert manager.savings().summaries_ahead_unused == 1
    assert len(model.summary_requests) == len(sync_model.summary_requests) + 1


def test_a_result_redacted_in_place_while_the_summary_runs_is_summarized_again(quiet_loop: None) -> None:
    # The third batch's tool redacts a secret in the first result, in place and to a text of the
    # same length, while the summary started ahead (of the unredacted span) is running.
    holder: list[Agent] = []
    models: list[TimedModel] = []
    waits = [False]

    @tool
    def read_and_redact(part: int, size: int) -> str:
        """Read one part of the service log; the third read redacts the credentials read before."""
        if part == 20:
            started = time.monotonic()
            while waits[0] and not models[0].summary_started and time.monotonic() - started < 2:
                time.sleep(0.005)  # redact once the summary ahead has read the span
            for message in holder[0].messages:
                for block in message["content"]:
                    for item in block.get("toolResult", {}).get("content", []):
                        if "text" in item:
                            item["text"] = item["text"].replace("SECRET-123", "[REDACTED]")
        text = _lines(part, size)
        return f"token=SECRET-123\n{text}" if part == 0 else text

    def script_for(ahead: bool) -> tuple[Agent, TimedModel, ContextManager]:
        agent, model, manager = _session(
            ahead, [[280], [280], [280]], window=10_000, tools=[read_and_redact], summary_seconds=0.1
        )
        holder[:], models[:], waits[:] = [agent], [model], [ahead]
        with fixed_tracking_ids():
            agent("read the parts of the log")
        return agent, model, manager

    sync_agent, sync_model, _ = script_for(False)
    agent, model, manager = script_for(True)
    # Started ahead over the unredacted span, then dropped; the pass summarized the span again.
    assert len(model.summary_started) == 2 and manager.savings().summaries_ahead_unused == 1
    assert all("SECRET-123" not in str(request["messages"]) for request in model.summary_requests)
    assert all("SECRET-123" not in str(request["messages"]) for request in sync_model.summary_requests)
    # What was sent and kept is the summary of the redacted text, as without the option.
    assert without_usage(model.calls) == without_usage(sync_model.calls)
    assert without_usage(agent.messages) == without_usage(sync_agent.messages)
    assert any("[Summarized" in str(m) for m in agent.messages)


# ------------------------------------------------------------------------------ turns that end early


def test_end_turn_after_the_tools_settles_the_summary(quiet_loop: None) -> None:
    def stop(event: AfterToolsEvent) -> None:
        if event.message["content"][0]["toolResult"]["toolUseId"] == "tu_2_0":
            event.end_turn = True

    agent, model, manager = _session(True, [[280], [280], [280]], window=10_000, summary_seconds=0.2, hooks=[stop])
    agent("read the parts of the log")
    # Started during the third batch, cancelled when the turn ended: it never got its answer.
    assert len(model.summary_started) == 1 and model.summary_requests == []
    assert manager.savings().summaries_ahead_unused == 1
    assert not any("[Summarized" in str(m) for m in agent.messages)


def test_a_raising_after_invocation_hook_leaves_no_task_for_the_next_invocation(quiet_loop: None) -> None:
    # Another hook of AfterInvocationEvent raises (after the summary ahead started), so ours may not
    # run; each agent(...) call runs its own event loop, closed when the call ends.
    from strands.hooks.events import AfterInvocationEvent

    failures = [True]

    def stop(event: AfterToolsEvent) -> None:
        if event.message["content"][0]["toolResult"]["toolUseId"] == "tu_2_0":
            event.end_turn = True

    def audit(event: AfterInvocationEvent) -> None:
        if failures.pop(0) if failures else False:
            raise RuntimeError("audit store unavailable")

    batches = [[280], [280], [280], [280], [280]]
    agent, model, manager = _session(True, batches, window=10_000, summary_seconds=0.2, hooks=[stop])
    agent.hooks.add_callback(AfterInvocationEvent, audit)  # runs before ours (After* events run in reverse)
    with pytest.raises(RuntimeError, match="audit store unavailable"):
        agent("read the parts of the log")
    assert len(model.summary_started) == 1 and model.summary_requests == []
    # The next invocation drops the task of the closed loop (counted as unused) and summarizes anew.
    calls_before = len(model.calls)
    result = agent("go on reading")
    assert result.stop_reason == "end_turn"
    assert manager.savings().summaries_ahead_unused == 1
    assert model.summary_requests  # the request after the first batch of this turn was summarized
    assert "[Summarized" in str(model.calls[calls_before])


def test_a_task_of_a_closed_loop_is_dropped_without_waiting() -> None:
    from strands_offload.context_manager.strategies.offload import _ahead

    other = asyncio.new_event_loop()
    finished = other.create_task(asyncio.sleep(0, result="summary"))
    other.run_until_complete(finished)
    stuck = other.create_task(asyncio.sleep(60))
    other.run_until_complete(asyncio.sleep(0))  # started, waiting on its timer
    other.close()
    key = _ahead.span_key([{"role": "user", "content": [{"text": "x"}]}])
    for task in (finished, stuck):
        pending = _ahead.Ahead(key, task)
        assert not _ahead.on_running_loop(pending)
        asyncio.run(_ahead.settle(pending))  # neither waits nor raises "Event loop is closed"
    stuck._log_destroy_pending = False  # a task its closed loop never ends: nothing to report


def test_cancel_settles_the_summary(quiet_loop: None) -> None:
    holder: list[Agent] = []

    @tool
    def read_then_cancel(part: int, size: int) -> str:
        """Read one part; the third read cancels the agent."""
        if part == 20:
            holder[0].cancel()
        return _lines(part, size)

    batches = [[280], [280], [280]]
    agent, model, manager = _session(True, batches, window=10_000, summary_seconds=0.2, tools=[read_then_cancel])
    holder.append(agent)
    result = agent("read the parts of the log")
    assert result.stop_reason == "cancelled"
    assert manager.savings().summaries_ahead_unused == 1


def test_an_interrupt_settles_the_summary_and_the_turn_resumes(quiet_loop: None) -> None:
    def ask(event: BeforeToolsEvent) -> None:
        if any(b.get("toolUse", {}).get("toolUseId") == "tu_2_0" for b in event.message["content"]):
            event.interrupt("approve", reason="third read")

    agent, model, manager = _session(True, [[280], [280], [280]], window=10_000, summary_seconds=0.2, hooks=[ask])
    result = agent("read the parts of the log")
    assert result.stop_reason == "interrupt"
    assert manager.savings().summaries_ahead_unused == 1
    # Resumed on a new event loop: the tools run, the summary is made then and used.
    responses = [{"interruptResponse": {"interruptId": i.id, "response": "yes"}} for i in result.interrupts]
    assert agent(responses).stop_reason == "end_turn"
    assert any("[Summarized" in str(m) for m in agent.messages)


def test_a_failing_summarizer_fails_as_the_synchronous_one_does(quiet_loop: None) -> None:
    batches = [[280], [280], [280]]
    sync_agent, sync_model, _ = _run(False, batches, window=10_000, summaries="error")
    agent, model, _ = _run(True, batches, window=10_000, summaries="error")
    assert without_usage(agent.messages) == without_usage(sync_agent.messages)
    assert without_usage(model.calls) == without_usage(sync_model.calls)


def test_a_tool_that_raises_does_not_end_the_turn(quiet_loop: None) -> None:
    @tool
    def read_or_fail(part: int, size: int) -> str:
        """Read one part; the third read fails."""
        if part == 20:
            raise RuntimeError("disk on fire")
        return _lines(part, size)

    def session(ahead: bool) -> tuple[Agent, TimedModel, ContextManager]:
        agent, model, manager = _session(ahead, [[280]] * 4, window=8_000, tools=[read_or_fail])
        with fixed_tracking_ids():
            agent("read the parts of the log")
        return agent, model, manager

    sync_agent, sync_model, _ = session(False)
    agent, model, manager = session(True)
    assert without_usage(agent.messages) == without_usage(sync_agent.messages)
    # The turn went on past the error result, as without the option; a summary started ahead on
    # the expectation of a large result is the only extra call, counted as unused.
    assert without_usage(model.calls) == without_usage(sync_model.calls)
    assert model.summary_requests
    unused = manager.savings().summaries_ahead_unused
    assert len(model.summary_requests) - len(sync_model.summary_requests) == unused


def test_a_failed_model_call_leaves_nothing_pending(quiet_loop: None) -> None:
    class FailingFourthCall(TimedModel):
        async def stream(self, messages: Messages, *args: Any, **kwargs: Any) -> AsyncIterable[StreamEvent]:
            if (args[0] if args else kwargs.get("tool_specs")) and len(self.calls) == 3:
                raise RuntimeError("provider unavailable")
            async for event in super().stream(messages, *args, **kwargs):
                yield event

    model = FailingFourthCall(_script([[280], [280], [280]]), context_window_limit=10_000, summary_seconds=0.05)
    strategy = Offload.summarize("*", ahead=True).when(utilization=0.6, preserve_recent=2)
    manager = ContextManager(strategies=[strategy])
    agent = Agent(model=model, tools=[read_part], context_manager=manager, callback_handler=None)
    with pytest.raises(Exception, match="provider unavailable"):
        agent("read the parts of the log")
    # The summary started ahead served the pass before the failed call: used, none left running.
    assert len(model.summary_requests) == 1 and manager.savings().summaries_ahead_unused == 0
    assert any("[Summarized" in str(m) for m in agent.messages)


def test_a_turn_limit_settles_the_summary(quiet_loop: None) -> None:
    # The cap is checked before the model call that follows the third batch: the tools ran,
    # the summary started ahead is never asked for.
    agent, model, manager = _session(True, [[280], [280], [280]], window=10_000, summary_seconds=0.2)
    result = agent("read the parts of the log", limits={"turns": 3})
    assert result.stop_reason == "limit_turns"
    assert len(model.summary_started) == 1 and manager.savings().summaries_ahead_unused == 1
