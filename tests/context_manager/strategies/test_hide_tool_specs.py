"""``Hide.tool_specs``: what tool specs each request of a real ``strands.Agent`` carries."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterable, Sequence
from typing import Any

import pytest
from _cm_harness import OURS, REFERENCE, ContextModel, Reply, ToolCall, _summary_request, replies
from pydantic import BaseModel
from strands import Agent
from strands.middleware import InvokeModelStage
from strands.tools.tools import PythonAgentTool
from strands.types.content import Messages
from strands.types.streaming import StreamEvent
from strands_offload.context_manager import ContextManager, Hide, Offload
from strands_offload.context_manager.ranking import BM25Ranker
from strands_offload.context_manager.strategies.hide import ACKNOWLEDGEMENTS, HideToolSpecsStrategy
from strands_offload.context_manager.strategies.hide._query import is_acknowledgement, latest_user_text
from strands_offload.context_manager.strategies.hide.tool_specs import _spec_text

TOPICS = {
    "read_file": "Read the complete contents of a file from the local disk",
    "write_file": "Write text to a file on the local disk, replacing it",
    "git_commit": "Record staged changes in the git repository with a commit message",
    "git_log": "Show the commit history of the git repository",
    "create_issue": "Open a new issue in a GitHub project",
    "list_buckets": "List the storage buckets of the cloud account",
    "run_query": "Run an SQL query against the database",
    "browser_navigate": "Point the web browser at an address",
    "web_search": "Search the web for pages about a topic",
    "send_email": "Send an email message to a recipient",
    "translate_text": "Translate text into another language",
    "weather_forecast": "Get the weather forecast for a city",
}


class SpecModel(ContextModel):
    """The scripted model, also recording the tool specs and tool choice of every agent-loop request."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.specs: list[list[dict[str, Any]]] = []
        self.choices: list[Any] = []

    async def stream(self, messages: Messages, *args: Any, **kwargs: Any) -> AsyncIterable[StreamEvent]:
        tool_specs = args[0] if args else kwargs.get("tool_specs")
        if not _summary_request(messages, tool_specs):
            # The SDK passes None for an empty list (no toolConfig is sent).
            self.specs.append([dict(spec) for spec in tool_specs or ()])
            self.choices.append(kwargs.get("tool_choice"))
        async for event in super().stream(messages, *args, **kwargs):
            yield event


def make_tool(name: str, description: str | None, ran: list[str] | None = None, schema: Any = None) -> PythonAgentTool:
    if schema is None:
        schema = {"type": "object", "properties": {"target": {"type": "string", "description": f"what {name} acts on"}}}
    spec: dict[str, Any] = {"name": name, "inputSchema": {"json": schema}}
    if description is not None:
        spec["description"] = description

    def run(tool_use: Any, **_: Any) -> dict[str, Any]:
        if ran is not None:
            ran.append(name)
        return {"toolUseId": tool_use["toolUseId"], "status": "success", "content": [{"text": f"{name} done"}]}

    return PythonAgentTool(name, spec, run)  # type: ignore[arg-type]


def catalog(ran: list[str] | None = None) -> list[PythonAgentTool]:
    return [make_tool(name, text, ran) for name, text in TOPICS.items()]


def names(specs: Sequence[dict[str, Any]]) -> list[str]:
    return [spec["name"] for spec in specs]


def agent_with(strategies: list[Any], model: SpecModel, tools: list[Any] | None = None, **options: Any) -> Agent:
    manager = ContextManager(strategies=strategies, **options)
    return Agent(
        model=model, tools=tools if tools is not None else catalog(), context_manager=manager, callback_handler=None
    )


# ---------------------------------------------------------------------------- without the strategy


def test_without_the_strategy_every_request_carries_what_the_references_does() -> None:
    def run(manager: Any) -> list[list[dict[str, Any]]]:
        model = SpecModel(replies(Reply("", [ToolCall("git_log", {"target": "x"}, "t1")]), Reply("done")))
        agent = Agent(model=model, tools=catalog(), context_manager=manager, callback_handler=None)
        agent("show me the git history")
        agent("thanks")
        # The retrieval tool's description is prose of ours (the model reads it); all else is equal.
        return [[{**s, "description": None} if s["name"] == "retrieve_context" else s for s in r] for r in model.specs]

    theirs = run(REFERENCE.auto())
    ours = run(OURS.auto())
    assert ours == theirs and len(ours) == 3
    assert "retrieve_context" in names(ours[0]) and len(ours[0]) == len(TOPICS) + 1


# ---------------------------------------------------------------------------- the choice


def test_a_turn_shows_the_best_tools_and_the_choice_holds_for_the_invocation() -> None:
    ran: list[str] = []
    model = SpecModel(
        replies(
            Reply("", [ToolCall("git_commit", {"target": "x"}, "t1")]),
            Reply("", [ToolCall("git_log", {"target": "x"}, "t2")]),
            Reply("committed"),
        )
    )
    agent = agent_with([Hide.tool_specs(config={"keep": 2})], model, catalog(ran))
    agent("commit my changes to the git repository")
    assert ran == ["git_commit", "git_log"]
    first = model.specs[0]
    assert set(names(first)) == {"git_commit", "git_log", "retrieve_context"}
    assert model.specs[1] == first and model.specs[2] == first  # byte-identical within the invocation
    # The registry is unchanged: every spec is still registered.
    assert set(agent.tool_registry.get_all_tools_config()) == {*TOPICS, "retrieve_context"}


def test_a_call_to_a_hidden_tool_still_runs() -> None:
    ran: list[str] = []
    model = SpecModel(replies(Reply("", [ToolCall("send_email", {"target": "bob"}, "t1")]), Reply("sent")))
    agent = agent_with([Hide.tool_specs(config={"keep": 1})], model, catalog(ran))
    agent("what is the weather forecast for Paris")
    assert "send_email" not in names(model.specs[0])
    assert ran == ["send_email"]
    result = agent.messages[2]["content"][0]["toolResult"]
    assert result["status"] == "success" and result["content"] == [{"text": "send_email done"}]


def test_a_new_invocation_chooses_again_and_an_acknowledgement_keeps_the_choice() -> None:
    model = SpecModel()
    agent = agent_with([Hide.tool_specs(config={"keep": 1})], model)
    agent("search the web for pages about rust")
    agent("ok, go ahead, thanks!")
    agent("translate this text into French")
    chosen = [set(names(specs)) - {"retrieve_context"} for specs in model.specs]
    assert chosen == [{"web_search"}, {"web_search"}, {"translate_text"}]


def test_the_query_skips_tool_result_turns() -> None:
    messages = [
        {"role": "user", "content": [{"text": "read my file"}]},
        {"role": "assistant", "content": [{"toolUse": {"toolUseId": "a", "name": "read_file", "input": {}}}]},
        {"role": "user", "content": [{"toolResult": {"toolUseId": "a", "status": "success", "content": []}}]},
    ]
    assert latest_user_text(messages) == "read my file"
    assert latest_user_text(messages[1:]) is None


@pytest.mark.parametrize(
    ("text", "ack"),
    [
        ("yes", True),
        ("OK, go ahead!", True),
        ("Thanks, that's great", False),  # "that's" is a content word
        ("thank you very much", True),
        ("confirm", True),
        ("proceed with the next one please", False),
        ("👍", True),
        ("yes, and email it to Bob", False),
    ],
)
def test_acknowledgements(text: str, ack: bool) -> None:
    assert is_acknowledgement(text) is ack
    assert {"yes", "ok", "thanks", "go", "ahead", "proceed", "confirm"} <= ACKNOWLEDGEMENTS


def test_no_match_falls_back_to_on_failure() -> None:
    for on_failure, expected in (("all", {*TOPICS, "retrieve_context"}), ("none", {"retrieve_context"})):
        model = SpecModel()
        agent = agent_with([Hide.tool_specs(config={"on_failure": on_failure})], model)  # type: ignore[typeddict-item]
        agent("zzz qqq")
        assert set(names(model.specs[0])) == expected


class Failing:
    max_sources_per_query = 10

    async def score(self, query: str, texts: Sequence[str]) -> list[float]:
        raise RuntimeError("ranker down")


class Wrong:
    max_sources_per_query = 10

    async def score(self, query: str, texts: Sequence[str]) -> list[float]:
        return [2.0] * len(texts)


@pytest.mark.parametrize("ranker", [Failing(), Wrong()], ids=["raises", "out-of-range"])
def test_a_ranker_error_warns_and_falls_back(ranker: Any, caplog: pytest.LogCaptureFixture) -> None:
    model = SpecModel()
    agent = agent_with([Hide.tool_specs(config={"search": ranker, "keep": 1})], model)
    with caplog.at_level(logging.WARNING):
        agent("read my file")
    assert set(names(model.specs[0])) == {*TOPICS, "retrieve_context"}
    assert any("ranking the tool specs failed" in r.getMessage() for r in caplog.records)


def test_a_plugged_in_ranker_decides() -> None:
    class Last:
        max_sources_per_query = 1

        async def score(self, query: str, texts: Sequence[str]) -> list[float]:
            return [1.0 if i == len(texts) - 1 else 0.0 for i in range(len(texts))]

    model = SpecModel()
    agent = agent_with([Hide.tool_specs(config={"search": Last(), "keep": 3})], model)
    agent("anything")
    assert set(names(model.specs[0])) == {"weather_forecast", "retrieve_context"}


def test_never_zero_specs_while_the_history_holds_tool_blocks() -> None:
    model = SpecModel(replies(Reply("", [ToolCall("git_log", {"target": "x"}, "t1")]), Reply("ok")))
    strategy = Hide.tool_specs(config={"on_failure": "none"})
    agent = agent_with([strategy], model, stash=False)
    agent("zzz qqq")
    assert model.specs[0] == []  # nothing matches and no tool block yet: no toolConfig at all
    assert names(model.specs[1]) == ["git_log"]  # the history now holds git_log's call and result
    agent("zzz again")
    assert names(model.specs[2]) == ["git_log"]


def test_target_lists_candidates_and_always_shown() -> None:
    model = SpecModel()
    target = ["toolSpec::git_commit", "toolSpec::git_log", "toolSpec::web_search"]
    agent = agent_with([Hide.tool_specs(target, {"keep": 1})], model, stash=False)
    agent("search the web")
    assert set(names(model.specs[0])) == (set(TOPICS) - {"git_commit", "git_log"})

    model = SpecModel()
    target = ["toolSpec::*", "!toolSpec::send_email"]
    agent = agent_with([Hide.tool_specs(target, {"keep": 1, "always_hide": ["run_query"]})], model, stash=False)
    agent("search the web")
    assert set(names(model.specs[0])) == {"web_search", "send_email"}


def test_always_hide_never_hides_the_packages_tools() -> None:
    model = SpecModel()
    agent = agent_with([Hide.tool_specs(config={"always_hide": ["retrieve_context", "read_file"]})], model)
    agent("read the file")
    assert "retrieve_context" in names(model.specs[0]) and "read_file" not in names(model.specs[0])


def test_count_acts_only_with_enough_candidates() -> None:
    model = SpecModel()
    agent = agent_with([Hide.tool_specs(config={"keep": 1}).when(count=len(TOPICS) + 1)], model, stash=False)
    agent("read the file")
    assert len(model.specs[0]) == len(TOPICS)
    model = SpecModel()
    agent = agent_with([Hide.tool_specs(config={"keep": 1}).when(count=len(TOPICS))], model, stash=False)
    agent("read the file")
    assert names(model.specs[0]) == ["read_file"]


def test_specs_that_join_during_the_invocation_stay_visible() -> None:
    late = make_tool("late_tool", "Appears later")

    def add_tool(tool_use: Any, **_: Any) -> dict[str, Any]:
        agent.tool_registry.register_tool(late)
        return {"toolUseId": tool_use["toolUseId"], "status": "success", "content": [{"text": "added"}]}

    adder = PythonAgentTool(
        "add_tool",
        {"name": "add_tool", "description": "Add a tool", "inputSchema": {"json": {"type": "object"}}},
        add_tool,  # type: ignore[arg-type]
    )
    model = SpecModel(replies(Reply("", [ToolCall("add_tool", {}, "t1")]), Reply("ok")))
    agent = agent_with([Hide.tool_specs(config={"keep": 1})], model, [*catalog(), adder], stash=False)
    agent("add a tool")
    assert names(model.specs[0]) == ["add_tool"]
    assert names(model.specs[1]) == ["add_tool", "late_tool"]


def test_a_forced_tool_and_the_structured_output_tool_are_shown() -> None:
    class Answer(BaseModel):
        city: str

    def script(messages: Messages) -> Reply:
        return Reply("", [ToolCall("Answer", {"city": "Paris"}, f"so{len(messages)}")])

    model = SpecModel(script)
    agent = agent_with([Hide.tool_specs(config={"keep": 1})], model, stash=False)
    result = agent("what is the weather forecast for Paris", structured_output_model=Answer)
    assert result.structured_output == Answer(city="Paris")
    assert all("Answer" in names(specs) for specs in model.specs)
    assert "weather_forecast" in names(model.specs[0])


def test_the_middleware_sees_the_projection_of_what_is_sent() -> None:
    seen: list[tuple[int | None, list[str]]] = []

    def after(context: Any) -> Any:
        seen.append((context.projected_input_tokens, names(context.tool_specs)))
        return context

    model = SpecModel()
    agent = agent_with([Hide.tool_specs(config={"keep": 1})], model, stash=False)
    agent.add_middleware(InvokeModelStage.Input, after)
    agent("read the file")
    full = asyncio.run(
        model.count_tokens(
            agent.messages[:1], tool_specs=agent.tool_registry.get_all_tool_specs(), system_prompt=agent.system_prompt
        )
    )
    shown = [s for s in agent.tool_registry.get_all_tool_specs() if s["name"] == "read_file"]
    expected = asyncio.run(model.count_tokens(agent.messages[:1], tool_specs=shown, system_prompt=agent.system_prompt))
    assert seen == [(expected, ["read_file"])]
    assert expected < full


def test_the_ledger_counts_hidden_specs_per_request() -> None:
    model = SpecModel(replies(Reply("", [ToolCall("read_file", {"target": "x"}, "t1")]), Reply("ok")))
    manager = ContextManager(strategies=[Hide.tool_specs(config={"keep": 1})], stash=False)
    agent = Agent(model=model, tools=catalog(), context_manager=manager, callback_handler=None)
    agent("read the file")
    savings = manager.savings(agent)
    hidden = [s for s in agent.tool_registry.get_all_tool_specs() if s["name"] != "read_file"]
    per_request = sum(asyncio.run(model.count_tokens([], tool_specs=[s])) for s in hidden)
    assert savings.tool_specs_hidden == 2 * len(hidden)
    assert savings.tool_spec_tokens_hidden == 2 * per_request
    assert "tool specs hidden" in str(savings)


def test_specs_without_a_description_or_with_odd_schemas_are_ranked_on_what_they_have() -> None:
    odd = [
        {"name": "fetch_invoice"},
        {"name": "odd_schema", "description": "Convert currencies", "inputSchema": ["not", "a", "schema"]},
        {"name": "listed", "inputSchema": {"json": {"properties": ["a", "list"]}}},
        {
            "name": "nested",
            "inputSchema": {"json": {"properties": {"deep": {"items": {"properties": {"ledger": {}}}}}}},
        },
        {"name": 7, "description": None, "inputSchema": {"json": {"properties": {3: "x", "y": None}}}},
        {},
    ]
    texts = [_spec_text(spec) for spec in odd]
    assert texts[0] == "fetch_invoice\nfetch_invoice"
    assert "Convert currencies" in texts[1] and texts[2] == "listed\nlisted"
    assert texts[3] == "nested\nnested\ndeep\nledger" and texts[4] == "y" and texts[5] == ""
    ranker = BM25Ranker()
    for query, best in (("fetch the invoice", 0), ("convert currencies", 1), ("ledger", 3)):
        scores = asyncio.run(ranker.score(query, texts))
        assert scores.index(1.0) == best
    # Through an agent: an empty description (the SDK's registry refuses a missing one).
    tools = [make_tool("fetch_invoice", ""), *catalog()]
    model = SpecModel()
    agent = agent_with([Hide.tool_specs(config={"keep": 1})], model, tools, stash=False)
    agent("fetch the invoice")
    assert names(model.specs[0]) == ["fetch_invoice"]


def test_a_huge_query_is_ranked_on_its_tail() -> None:
    model = SpecModel()
    agent = agent_with([Hide.tool_specs(config={"keep": 1})], model, stash=False)
    agent("send an email " + "x" * 1_000_000 + " then get the weather forecast")
    assert names(model.specs[0]) == ["weather_forecast"]


# ---------------------------------------------------------------------------- the builder


@pytest.mark.parametrize(
    ("target", "config", "error", "match"),
    [
        ([], None, ValueError, "empty list"),
        (["tool::x"], None, ValueError, "malformed"),
        (["toolSpec::"], None, ValueError, "names no tool"),
        (["!toolSpec::*"], None, ValueError, "must name one tool"),
        ([3], None, ValueError, "not a string"),
        (["toolSpec::a", "!toolSpec::a"], None, ValueError, "both a candidate and always shown"),
        ("tools", None, ValueError, "must be 'tool_specs'"),
        (42, None, TypeError, "must be 'tool_specs'"),
        ("tool_specs", {"keep": 0}, ValueError, "keep must be at least 1"),
        ("tool_specs", {"keep": 2.5}, TypeError, "keep must be an int"),
        ("tool_specs", {"keep": True}, TypeError, "keep must be an int"),
        ("tool_specs", {"on_failure": "some"}, ValueError, "on_failure"),
        ("tool_specs", {"always_hide": "read_file"}, TypeError, "always_hide"),
        ("tool_specs", {"search": object()}, TypeError, "search must be a ranker"),
        ("tool_specs", {"top": 3}, TypeError, "unknown Hide.tool_specs config key 'top'"),
        ("tool_specs", [("keep", 3)], TypeError, "config must be a dict"),
    ],
)
def test_bad_arguments_are_refused(target: Any, config: Any, error: type[Exception], match: str) -> None:
    with pytest.raises(error, match=match):
        Hide.tool_specs(target, config)


def test_when_takes_only_count() -> None:
    strategy = Hide.tool_specs()
    assert isinstance(strategy, HideToolSpecsStrategy) and strategy.name == "hide:tool_specs"
    assert strategy.when(count=20) is strategy and strategy.conditions == {"count": 20}
    assert strategy.keep == 10
    with pytest.raises(TypeError, match="takes only count"):
        strategy.when(threshold=5)
    with pytest.raises(TypeError, match="takes only count"):
        strategy.when(count=2, utilization=0.5)
    with pytest.raises(ValueError, match="count must be at least 1"):
        strategy.when(count=0)
    with pytest.raises(TypeError, match="count must be an int"):
        strategy.when(count="3")  # type: ignore[arg-type]


def test_hide_sits_beside_offload() -> None:
    import strands_offload.context_manager as cm

    assert cm.Hide is Hide and cm.Offload is Offload


def test_hidden_specs_go_out_as_metrics_and_a_span(monkeypatch: pytest.MonkeyPatch) -> None:
    from _telemetry_support import recorded

    telemetry = recorded(monkeypatch)
    manager = ContextManager(
        strategies=[Hide.tool_specs(config={"keep": 1})],
        stash=False,
        meter_provider=telemetry.meter_provider,
        tracer_provider=telemetry.tracer_provider,
    )
    model = SpecModel()
    agent = Agent(model=model, tools=catalog(), context_manager=manager, callback_handler=None)
    agent("read the file")
    savings = manager.savings(agent)
    assert savings.tool_specs_hidden == len(TOPICS) - 1
    assert telemetry.total("strands_offload.tool_specs.hidden") == savings.tool_specs_hidden
    assert telemetry.total("strands_offload.tool_specs.tokens_hidden") == savings.tool_spec_tokens_hidden > 0
    spans = [s for s in telemetry.ours() if s.name == "strands_offload.hide_tool_specs"]
    assert len(spans) == 1
    assert spans[0].attributes["strands_offload.tool_specs.hidden"] == len(TOPICS) - 1
    assert spans[0].parent is not None  # the event-loop cycle's span


def test_telemetry_off_counts_nothing() -> None:
    manager = ContextManager(strategies=[Hide.tool_specs(config={"keep": 1})], stash=False, telemetry=False)
    model = SpecModel()
    agent = Agent(model=model, tools=catalog(), context_manager=manager, callback_handler=None)
    agent("read the file")
    assert names(model.specs[0]) == ["read_file"]
    assert manager.savings(agent).tool_specs_hidden == 0


# ---------------------------------------------------------------------------- prompt cache


def cached_model() -> SpecModel:
    from strands.models.model import CacheConfig

    model = SpecModel()
    model.update_config(cache_config=CacheConfig(strategy="auto"))
    return model


def test_a_warm_cache_keeps_the_selection_while_it_holds_the_querys_best_tools() -> None:
    from strands_offload.context_manager import _prompt_cache

    def run(model: SpecModel) -> tuple[list[set[str]], list[int]]:
        agent = agent_with([Hide.tool_specs(config={"keep": 4})], model, stash=False)
        entries = []
        for query in (
            "read a file, write a file, make a git commit, show the git log",
            "read the file and write the file",  # its best tools are all shown already
            "search the web",  # web_search is not: a new selection
        ):
            agent(query)
            view = _prompt_cache.known_view(agent)
            entries.append(len(view.entries) if view is not None else -1)
        return [set(names(specs)) for specs in model.specs], entries

    first = {"read_file", "write_file", "git_commit", "git_log"}
    cached, entries = run(cached_model())
    assert cached[0] == cached[1] == first
    assert "web_search" in cached[2] and not cached[2] & first
    # A new tool block: no earlier cached prefix can be read; the view keeps the new request's alone.
    assert entries == [1, 2, 1]
    plain, _ = run(SpecModel())
    assert plain[0] == first and plain[1] == {"read_file", "write_file"} and plain[2] == cached[2]


def test_a_new_tool_block_reaches_the_pipeline_as_an_empty_cached_prefix() -> None:
    """What cache_aware holds back is what lies inside the cached prefix: after a new tool block, nothing."""
    from strands_offload.context_manager import _prompt_cache

    class Probe:
        name = "probe"

        def __init__(self) -> None:
            self.cached_ends: list[int] = []

        async def apply(self, context: Any) -> bool:
            view = _prompt_cache.known_view(context.agent)
            self.cached_ends.append(view.cached_end(context.messages) if view is not None else -2)
            return False

    probe = Probe()
    model = cached_model()
    agent = agent_with([probe, Hide.tool_specs(config={"keep": 4})], model, stash=False)
    agent("read a file, write a file, make a git commit, show the git log")
    agent("read the file and write the file")  # the same selection: the cached prefix stands
    agent("search the web")  # a new selection: the whole prefix is written again
    assert [set(names(specs)) == set(names(model.specs[0])) for specs in model.specs] == [True, True, False]
    assert probe.cached_ends[0] == -1  # nothing sent yet
    assert probe.cached_ends[1] >= 0
    assert probe.cached_ends[2] == -1


def test_a_cold_cache_chooses_afresh() -> None:
    from strands_offload.context_manager import _prompt_cache

    model = cached_model()
    agent = agent_with([Hide.tool_specs(config={"keep": 4})], model, stash=False)
    agent("read a file, write a file, make a git commit, show the git log")
    view = _prompt_cache.known_view(agent)
    assert view is not None and not view.cold()
    view.last_call -= view.ttl + 1  # the lifetime passed since the last request
    agent("read the file and write the file")
    assert set(names(model.specs[1])) == {"read_file", "write_file"}


def test_cache_aligned_summary_requests_carry_the_last_requests_specs() -> None:
    from strands_offload.context_manager.strategies.offload._aligned import agent_request_parts

    model = cached_model()
    agent = agent_with([Hide.tool_specs(config={"keep": 1})], model, stash=False)
    assert agent_request_parts(agent)["tool_specs"] == agent.tool_registry.get_all_tool_specs()  # none sent yet
    agent("read the file")
    assert agent_request_parts(agent)["tool_specs"] == model.specs[-1]
    assert names(model.specs[-1]) == ["read_file"]
    # Without the strategy: the registry's specs, as before.
    plain = agent_with([], SpecModel(), stash=False)
    plain("read the file")
    assert agent_request_parts(plain)["tool_specs"] == plain.tool_registry.get_all_tool_specs()


# ---------------------------------------------------------------------------- the preset


def test_the_tool_registry_preset() -> None:
    manager = ContextManager.from_strategy("tool_registry")
    auto = ContextManager.from_strategy("auto")
    hide = [s for s in manager.strategies if isinstance(s, HideToolSpecsStrategy)]
    assert len(hide) == 1 and hide[0].keep == 10 and hide[0].conditions == {"count": 20}
    others = [type(s) for s in manager.strategies if not isinstance(s, HideToolSpecsStrategy)]
    assert others == [type(s) for s in auto.strategies]
    assert ContextManager.from_strategy("tool_registry", stash=False).stash is None

    many = [make_tool(f"tool_{i}_{word}", f"Does {word} things") for i, word in enumerate(["alpha", "beta"] * 15)]
    model = SpecModel()
    agent = Agent(model=model, tools=many, context_manager=ContextManager.from_strategy("tool_registry"))
    agent("alpha things please")
    assert set(names(model.specs[0])) == {s for s in names(model.specs[0]) if "alpha" in s} | {"retrieve_context"}
    assert len(model.specs[0]) == 11
    few = SpecModel()
    Agent(model=few, tools=catalog(), context_manager=ContextManager.from_strategy("tool_registry"))("read a file")
    assert len(few.specs[0]) == len(TOPICS) + 1  # 12 candidates: under count=20, nothing hidden


def test_the_readme_lists_the_acknowledgements() -> None:
    import re
    from pathlib import Path

    readme = (Path(__file__).parents[3] / "README.md").read_text(encoding="utf-8")
    start = readme.index("are all acknowledgements keeps")
    end = readme.index("(`strands_offload.context_manager.strategies.hide.ACKNOWLEDGEMENTS`)")
    assert set(re.findall(r"`(\w+)`", readme[start:end])) == ACKNOWLEDGEMENTS
