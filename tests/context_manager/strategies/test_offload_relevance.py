"""``Offload.relevance``: chunking, selection, assembly, the query, rerankers and the pipeline."""

from __future__ import annotations

import asyncio
import json
import math
from collections.abc import Sequence
from typing import Any

import pytest
from _cm_harness import ContextModel, ToolCall, replies
from _cm_harness import Reply as ScriptReply
from _telemetry_support import recorded
from hypothesis import given
from hypothesis import strategies as st
from strands import Agent, tool
from strands_offload.context_manager import (
    BM25Ranker,
    ContextManager,
    Offload,
    RelevanceConfig,
    Reranker,
    RerankerError,
)
from strands_offload.context_manager.ranking import Ranker
from strands_offload.context_manager.strategies.offload._chunks import Chunks, assemble, select
from strands_offload.context_manager.strategies.offload.relevance import (
    RelevanceStrategy,
    build_query,
    query_parts,
    result_text,
)

# ----------------------------------------------------------------------------- chunking


@given(st.text(alphabet=st.sampled_from("ab é\n\u4e00x"), max_size=300), st.integers(1, 40))
def test_chunks_concatenate_back_and_break_after_newlines(text: str, size: int) -> None:
    chunks = Chunks.of(text, size)
    pieces = chunks.texts()
    assert "".join(pieces) == text
    for index, piece in enumerate(pieces):
        assert 1 <= len(piece) <= size
        window = text[chunks.starts[index] : chunks.starts[index] + size]
        if chunks.end(index) < len(text) and "\n" in window:
            assert piece.endswith("\n")  # cut after the last newline of the window
        before = text[: chunks.starts[index]]
        assert chunks.first_lines[index] == before.count("\n") + 1
        assert chunks.last_lines[index] == chunks.first_lines[index] + piece[:-1].count("\n")


def test_a_long_line_is_cut_by_character() -> None:
    assert Chunks.of("x" * 25 + "\nend", 10).texts() == ["x" * 10, "x" * 10, "xxxxx\nend"]
    assert Chunks.of("x" * 25 + "\nend+more", 10).texts() == ["x" * 10, "x" * 10, "xxxxx\n", "end+more"]


def test_native_scores_equal_the_bm25_ranker_over_the_chunk_texts() -> None:
    text = "".join(
        f"row {i}: user{i} status={'failed' if i % 97 == 0 else 'ok'} getFileContents\n" for i in range(2000)
    )
    chunks = Chunks.of(text, 400, "which users failed? getFileContents")
    expected = asyncio.run(BM25Ranker().score("which users failed? getFileContents", chunks.texts()))
    assert chunks.native_scores is not None
    assert max(abs(a - b) for a, b in zip(chunks.native_scores, expected, strict=True)) < 1e-9


def test_scores_are_all_zero_when_no_chunk_shares_a_term() -> None:
    chunks = Chunks.of("alpha\nbeta\n" * 100, 20, "zebra")
    assert chunks.native_scores == [0.0] * len(chunks)


# ----------------------------------------------------------------------------- selection and assembly


def _lines(count: int, width: int = 9) -> str:
    return "".join(f"{i:0{width - 1}d}\n" for i in range(1, count + 1))  # each line `width` chars


def test_selection_takes_the_best_first_while_they_fit_and_considers_every_candidate() -> None:
    chunks = Chunks.of(_lines(10) + "x" * 30 + "\n" + _lines(3), 10)  # 10 chunks of 9, 3 of 10/10/10/1, 3 of 9
    sizes = [chunks.size(i) for i in range(len(chunks))]
    scores = [0.0] * len(chunks)
    scores[11] = 1.0  # a 10-character piece of the long line
    scores[2] = 0.9
    scores[7] = 0.9  # tie with 2: position first
    scores[5] = 0.6
    kept = select(chunks, scores, 0.5, 28)
    assert sizes[11] == 10 and sizes[2] == 9
    assert kept == [2, 7, 11]  # 10 + 9 + 9 = 28; chunk 5 no longer fits
    kept = select(chunks, scores, 0.5, 29)
    assert kept == [2, 7, 11]
    assert select(chunks, scores, 0.5, 20) == [2, 11]  # 7 does not fit; 5 does not either
    assert select(chunks, scores, 0.5, 19) == [2, 11]
    assert select(chunks, scores, 0.5, 18) == [11]  # 2, 7 and 5 no longer fit beside it


def test_selection_keeps_the_single_best_when_none_reaches_the_threshold() -> None:
    chunks = Chunks.of(_lines(6), 9)
    assert select(chunks, [0.1, 0.3, 0.2, 0.3, 0.0, 0.0], 0.5, 100) == [1]
    assert select(chunks, [0.0] * 6, 0.5, 100) == [0]


def test_assembly_marks_omitted_lines_between_chunks_that_are_not_adjacent() -> None:
    chunks = Chunks.of(_lines(10), 9)
    assert assemble(chunks, [1, 2, 6], 1000) == "00000002\n00000003\n\n[... 3 lines omitted ...]\n00000007\n"


def test_assembly_drops_a_marker_that_does_not_fit_and_cuts_the_last_chunk() -> None:
    text = _lines(40)
    chunks = Chunks.of(text, 90)  # 10 lines per chunk
    assert [chunks.first_lines[i] for i in range(len(chunks))] == [1, 11, 21, 31]
    # Room for chunk 0 and chunk 2 but not the marker between them.
    assert assemble(chunks, [0, 2], 180) == text[:90] + text[180:270]
    # The budget runs out inside chunk 2: cut at a line boundary, the lines from the cut counted.
    out = assemble(chunks, [0, 2], 170)
    assert out == text[:90] + "\n[... 10 lines omitted ...]\n00000021\n00000022\n[... 18 lines omitted ...]"
    assert len(out) <= 170
    # No line boundary in the room left: cut by character, the partly shown line counted.
    assert (
        assemble(chunks, [0, 2], 150) == text[:90] + "\n[... 10 lines omitted ...]\n00000\n[... 20 lines omitted ...]"
    )


def test_a_best_chunk_alone_over_the_budget_is_cut() -> None:
    chunks = Chunks.of("a" * 500 + "\n" + "b" * 10, 1000)
    kept = select(chunks, [1.0], 0.5, 100)
    out = assemble(chunks, kept, 100)
    assert len(out) <= 100
    assert out.startswith("a" * 50) and out.endswith("[... 2 lines omitted ...]")


@given(
    st.text(alphabet=st.sampled_from("abc \n"), min_size=1, max_size=400),
    st.integers(1, 60),
    st.integers(0, 120),
    st.data(),
)
def test_previews_are_never_longer_than_the_budget(text: str, size: int, budget: int, data: st.DataObject) -> None:
    chunks = Chunks.of(text, size)
    scores = data.draw(st.lists(st.floats(0, 1), min_size=len(chunks), max_size=len(chunks)))
    kept = select(chunks, scores, 0.5, budget)
    out = assemble(chunks, kept, budget)
    assert len(out) <= budget
    if sum(chunks.size(i) for i in kept) <= budget and len(kept) == 1:
        assert out == chunks.chunk(kept[0])


# ----------------------------------------------------------------------------- text and query


def test_result_text_joins_text_and_indented_json_items() -> None:
    result = {"content": [{"text": "a"}, {"json": {"k": [1]}}, {"image": {"format": "png"}}, {"text": "b"}]}
    assert result_text(result) == "a\n" + json.dumps({"k": [1]}, indent=2) + "\nb"


def test_query_is_the_newest_user_text_and_the_call_input() -> None:
    messages: list[dict[str, Any]] = [
        {"role": "user", "content": [{"text": "old question"}]},
        {"role": "assistant", "content": [{"toolUse": {"toolUseId": "t0", "name": "x", "input": {}}}]},
        {"role": "user", "content": [{"toolResult": {"toolUseId": "t0", "status": "success", "content": []}}]},
        {"role": "user", "content": [{"text": "Which order failed?"}]},
        {"role": "assistant", "content": [{"toolUse": {"toolUseId": "t1", "name": "get", "input": {"id": 7}}}]},
        {"role": "user", "content": [{"toolResult": {"toolUseId": "t1", "status": "success", "content": []}}]},
    ]
    assert build_query(messages, "t1") == 'Which order failed?\n{"id": 7}'
    messages[3]["content"][0]["text"] = "q" * 3000
    assert build_query(messages, "t1") == ("q" * 3000 + '\n{"id": 7}')[-2000:]
    long_input = {"path": "p" * 2500}
    messages[4]["content"][0]["toolUse"]["input"] = long_input
    assert build_query(messages, "t1") == json.dumps(long_input)[:2000]


@pytest.mark.parametrize("question_chars", [0, 5, 1990, 1996, 3000])
@pytest.mark.parametrize("input_chars", [0, 3, 1990, 1997, 1998, 2000, 2500])
def test_the_query_parts_joined_are_the_query(question_chars: int, input_chars: int) -> None:
    call_input = {"p": "i" * input_chars} if input_chars else None
    messages: list[dict[str, Any]] = [{"role": "user", "content": [{"text": "q" * question_chars or " "}]}]
    if call_input is not None:
        messages.append(
            {"role": "assistant", "content": [{"toolUse": {"toolUseId": "t1", "name": "x", "input": call_input}}]}
        )
    question = "q" * question_chars
    encoded = json.dumps(call_input) if call_input is not None else ""
    # The definition, written out.
    if len(encoded) >= 2000:
        expected = encoded[:2000]
    else:
        expected = (f"{question}\n{encoded}" if encoded else question)[-2000:]
    assert build_query(messages, "t1") == expected
    head, tail = query_parts(messages, "t1")
    assert tail == (encoded[:2000] if encoded else "")
    assert (f"{head}\n{tail}" if tail and len(tail) < 2000 else head or tail) == expected
    assert question.endswith(head)


def _manual(sections: int, asked: int) -> tuple[str, str]:
    """A page as text: its title names the site the URL points to; one section is asked about."""
    parts = ["# R7 Service Manual (docs.example.com/r7/service-manual)\n"]
    verbs, things = ["Cleaning", "Mounting", "Testing", "Storing"], ["belt", "pump", "lens", "drum", "fuse"]
    answer = ""
    for i in range(sections):
        part = f"XR-{1000 + i}"
        title = f"{verbs[i % 4]} the {things[i // 4 % 5]} ({i})"
        if i == asked:
            title, answer = "Replacing the nozzle", part
        parts.append(f"\n## {title}\nRead these steps first.\nUse only part {part}.\nNotes: bolt washer clamp.\n")
    return "".join(parts), answer


def test_a_question_term_outweighs_the_tool_input_terms() -> None:
    # The URL's words are all in the page's title (and nowhere else): as one query the title chunk
    # is the best and the asked section falls under half of it; the native reranker weighs the
    # call's input as one question term in total, so the section the question names is kept.
    text, answer = _manual(120, 90)
    url = {"url": "https://docs.example.com/r7/service-manual"}
    messages: list[dict[str, Any]] = [
        {"role": "user", "content": [{"text": 'What is required for "Replacing the nozzle"?'}]},
        {"role": "assistant", "content": [{"toolUse": {"toolUseId": "t1", "name": "fetch", "input": url}}]},
    ]
    result = {"toolUseId": "t1", "status": "success", "content": [{"text": text}]}
    strategy = RelevanceStrategy("tool_results", {"chunk_tokens": 50, "preview_tokens": 100})
    preview = asyncio.run(strategy.preview(result, messages))
    assert preview is not None and answer in preview
    assert "R7 Service Manual" not in preview
    # The whole query as one (what the scorer did before): the title wins, the section is lost.
    whole = Chunks.of(text, 200, build_query(messages, "t1"))
    assert whole.native_scores is not None
    assert answer not in assemble(whole, select(whole, whole.native_scores, 0.5, 400), 400)
    assert whole.native_scores[0] == 1.0
    # A reranker of one's own still gets the query exactly as defined.
    reranker = _Scripted(lambda n: [1.0] + [0.0] * (n - 1))
    custom = RelevanceStrategy("tool_results", {"chunk_tokens": 50, "preview_tokens": 100, "reranker": reranker})
    asyncio.run(custom.preview(result, messages))
    assert [query for query, _ in reranker.asked] == [build_query(messages, "t1")]
    assert reranker.asked[0][0].endswith('\n{"url": "https://docs.example.com/r7/service-manual"}')


def test_the_call_input_alone_ranks_the_chunks_when_the_question_matches_nothing() -> None:
    text = "".join(f"line {i} of the dump\n" for i in range(200)) + "the needle is here\n" + "filler\n" * 50
    messages: list[dict[str, Any]] = [
        {"role": "user", "content": [{"text": "Summarize please."}]},
        {"role": "assistant", "content": [{"toolUse": {"toolUseId": "t1", "name": "grep", "input": {"q": "needle"}}}]},
    ]
    result = {"toolUseId": "t1", "status": "success", "content": [{"text": text}]}
    strategy = RelevanceStrategy("tool_results", {"chunk_tokens": 25, "preview_tokens": 30})
    preview = asyncio.run(strategy.preview(result, messages))
    assert preview is not None and "the needle is here" in preview


# ----------------------------------------------------------------------------- config


@pytest.mark.parametrize(
    ("config", "error"),
    [
        ({"chunk_tokens": 0}, ValueError),
        ({"chunk_tokens": 0.5}, ValueError),
        ({"relevance_threshold": 1.5}, ValueError),
        ({"relevance_threshold": -0.1}, ValueError),
        ({"relevance_threshold": math.nan}, ValueError),
        ({"preview_tokens": -1}, ValueError),
        ({"reranker": object()}, TypeError),
    ],
)
def test_bad_config_is_refused(config: dict[str, Any], error: type[Exception]) -> None:
    with pytest.raises(error):
        Offload.relevance("tool_results", config)


def test_name_when_and_threshold_check() -> None:
    strategy = Offload.relevance("tool_results", {"preview_tokens": 200, "summarize_overflow": True})
    assert strategy.name == "offload:relevance"
    conditioned = strategy.when(threshold=500, preserve_recent=1)
    assert isinstance(conditioned, RelevanceStrategy) and conditioned is not strategy
    with pytest.raises(ValueError, match="greater than preview_tokens"):
        strategy.when(threshold=200)
    assert isinstance(BM25Ranker(), Reranker) and Ranker in Reranker.__mro__


# ----------------------------------------------------------------------------- the pipeline


_QUESTION = "What is the shipping address of order ORD-88213?"


def _dump() -> str:
    rows = [{"order": f"ORD-{10000 + i}", "address": f"{i} Elm Street", "state": "shipped"} for i in range(2000)]
    rows[1700] = {"order": "ORD-88213", "address": "77 Quay Road, Leith", "state": "held"}
    return json.dumps(rows, indent=1)


@tool
def export_orders() -> str:
    """Export every order."""
    return _dump()


def _run(config: RelevanceConfig | None, **when: Any) -> tuple[Agent, ContextModel]:
    model = ContextModel(replies(ScriptReply("", [ToolCall("export_orders", {"status": "all"}, "tu_orders")])))
    strategy = Offload.relevance("tool_results", config).when(**(when or {"threshold": 2000}))
    agent = Agent(
        model=model,
        tools=[export_orders],
        context_manager=ContextManager(strategies=[strategy]),
        callback_handler=None,
    )
    agent(_QUESTION)
    return agent, model


def _result_of(agent: Agent, tool_use_id: str) -> dict[str, Any]:
    for message in agent.messages:
        for block in message["content"]:
            if block.get("toolResult", {}).get("toolUseId") == tool_use_id:
                return block["toolResult"]  # type: ignore[no-any-return]
    raise AssertionError(tool_use_id)


def test_a_threshold_rewrites_the_result_on_arrival_with_the_relevant_chunk() -> None:
    agent, model = _run({"chunk_tokens": 250, "preview_tokens": 500})
    text = _result_of(agent, "tu_orders")["content"][0]["text"]
    assert text.startswith("[Relevance: tool result, ~")
    assert "77 Quay Road, Leith" in text
    assert text.endswith("\n\n[Stashed] [ref: tu_orders_0]")
    preview = text.split("\n\n", 1)[1].rsplit("\n\n[Stashed]", 1)[0]
    assert len(preview) <= 500 * 4
    # The model saw the preview on its next call, not the dump.
    assert "77 Quay Road" in json.dumps(model.calls[1]) and "ORD-10005" not in json.dumps(model.calls[1])


class _Scripted:
    """A reranker that answers what it is told to (and remembers what it was asked)."""

    max_sources_per_query = 50

    def __init__(self, answer: Any) -> None:
        self.answer = answer
        self.asked: list[tuple[str, list[str]]] = []

    async def score(self, query: str, texts: Sequence[str]) -> list[float]:
        self.asked.append((query, list(texts)))
        if isinstance(self.answer, BaseException):
            raise self.answer
        return self.answer(len(texts)) if callable(self.answer) else self.answer  # type: ignore[no-any-return]


def test_a_custom_reranker_gets_the_query_and_every_chunk() -> None:
    reranker = _Scripted(lambda n: [1.0 if i == n - 1 else 0.0 for i in range(n)])
    agent, _ = _run({"reranker": reranker, "chunk_tokens": 250, "preview_tokens": 300})
    ((query, texts),) = reranker.asked
    assert query == _QUESTION + '\n{"status": "all"}'
    assert "".join(texts) == _dump()
    text = _result_of(agent, "tu_orders")["content"][0]["text"]
    assert texts[-1] in text


@pytest.mark.parametrize(
    "answer",
    [
        RerankerError("down"),
        RuntimeError("boom"),
        lambda n: [0.5] * (n - 1),
        lambda n: [math.nan] * n,
        lambda n: [True] * n,
        lambda n: [1.5] * n,
        lambda n: "scores",
    ],
    ids=["reranker-error", "other-error", "too-few", "nan", "bool", "over-one", "not-a-list"],
)
def test_a_failing_or_invalid_reranker_leaves_the_result_unchanged(answer: Any) -> None:
    agent, _ = _run({"reranker": _Scripted(answer), "chunk_tokens": 250})
    assert _result_of(agent, "tu_orders")["content"] == [{"text": _dump()}]


def test_an_empty_query_is_a_reranker_error() -> None:
    strategy = RelevanceStrategy("tool_results", {"chunk_tokens": 10, "preview_tokens": 5})
    with pytest.raises(RerankerError):
        asyncio.run(strategy._scored("x\n" * 100, "  \n ", ""))


def test_a_short_text_is_left_alone_without_scoring() -> None:
    reranker = _Scripted(lambda n: [1.0] * n)
    strategy = RelevanceStrategy("tool_results", {"reranker": reranker, "preview_tokens": 100})
    result = {"toolUseId": "t", "status": "success", "content": [{"text": "short\n" * 10}]}
    assert asyncio.run(strategy.preview(result, [])) is None and reranker.asked == []


def test_utilization_rewrites_instead_of_removing() -> None:
    agent, _ = _run({"chunk_tokens": 250, "preview_tokens": 500}, utilization=0.01)
    text = _result_of(agent, "tu_orders")["content"][0]["text"]
    assert text.startswith("[Relevance: tool result") and "77 Quay Road" in text


def test_without_relevance_the_result_is_untouched() -> None:
    model = ContextModel(replies(ScriptReply("", [ToolCall("export_orders", {}, "tu_orders")])))
    agent = Agent(
        model=model, tools=[export_orders], context_manager=ContextManager(strategies=[]), callback_handler=None
    )
    agent(_QUESTION)
    assert _result_of(agent, "tu_orders")["content"] == [{"text": _dump()}]


def test_rewrites_are_counted_as_relevance_edits(monkeypatch: pytest.MonkeyPatch) -> None:
    telemetry = recorded(monkeypatch)
    model = ContextModel(replies(ScriptReply("", [ToolCall("export_orders", {"status": "all"}, "tu_orders")])))
    strategy = Offload.relevance("tool_results", {"chunk_tokens": 250, "preview_tokens": 500}).when(threshold=2000)
    manager = ContextManager(
        strategies=[strategy], meter_provider=telemetry.meter_provider, tracer_provider=telemetry.tracer_provider
    )
    Agent(model=model, tools=[export_orders], context_manager=manager, callback_handler=None)(_QUESTION)
    assert telemetry.total("strands_offload.context.edits", **{"strands_offload.action": "relevance"}) == 1


def test_persist_reductions_restores_relevance_previews(tmp_path: Any) -> None:
    from strands.session.file_session_manager import FileSessionManager
    from strands_offload.storage import LocalFileStorage

    def agent(script: Any) -> Agent:
        return Agent(
            model=ContextModel(script),
            tools=[export_orders],
            context_manager=ContextManager(
                strategies=[Offload.relevance("tool_results", {"chunk_tokens": 250}).when(threshold=2000)],
                stash={"storage": LocalFileStorage(str(tmp_path / "stash"))},
                persist_reductions=True,
            ),
            session_manager=FileSessionManager(session_id="s1", storage_dir=str(tmp_path / "sessions")),
            agent_id="main",
            callback_handler=None,
        )

    first = agent(replies(ScriptReply("", [ToolCall("export_orders", {"status": "all"}, "tu_orders")])))
    first(_QUESTION)
    assert _result_of(first, "tu_orders")["content"][0]["text"].startswith("[Relevance: tool result")
    assert agent(replies()).messages == first.messages
