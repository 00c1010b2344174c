"""The benchmark cases, shared by ``strands-offload bench`` and ``benches/bench_cases.py``.

A :class:`Case` is one operation at one input: how to build the reference's callable and ours. The
reference is strands-agents 1.62.0's own code (or the ``tiktoken`` package, or ``json``); ours is
this package's. Building a case checks once that both give the same answer, so a ratio is never
measured between two different results.
"""

from __future__ import annotations

import asyncio
import copy
import hashlib
import json
import os
import statistics
import tempfile
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from types import SimpleNamespace
from typing import Any

from .. import _native, _seam
from .._native import token_counter
from . import corpus

__all__ = ["Case", "CaseUnavailable", "all_cases", "tiktoken_encoding"]

Thunk = Callable[[], Any]


class CaseUnavailable(Exception):
    """A case cannot run here (a missing optional package, rank files that cannot be loaded offline)."""


@dataclass(frozen=True)
class Case:
    """One operation on one input, measured for the reference and for us.

    Attributes:
        group: The row's name: operation, input kind and size.
        operation: The family the chart colours by (``tokens``, ``json``, ``grep``...).
        build: Returns ``(reference, ours)``, two callables without arguments; raises
            :class:`CaseUnavailable` when the case cannot run here.
        same: Whether both callables must return equal values (checked once before timing).
    """

    group: str
    operation: str
    build: Callable[[], tuple[Thunk, Thunk]]
    same: bool = True

    def prepare(self) -> tuple[Thunk, Thunk]:
        """Build the two callables and check that they agree.

        Raises:
            CaseUnavailable: When the case cannot run here.
            AssertionError: When the two callables disagree.
        """
        reference, ours = self.build()
        if self.same:
            expected, actual = reference(), ours()
            if expected != actual:
                raise AssertionError(f"{self.group}: the reference and ours give different results")
        return reference, ours


# ---------------------------------------------------------------------------- tiktoken, offline

# tiktoken's cache file names (SHA-1 of the download URL) of the two encodings.
_RANK_FILES = {
    "cl100k_base": "9b5ad71b2ce5302211f9c61530b329a4922fc6a4",
    "o200k_base": "fb374d419588a4632f3f557e76b4b70aebbca790",
}


def _rank_dirs() -> Iterator[Path]:
    for variable in ("TIKTOKEN_CACHE_DIR", "DATA_GYM_CACHE_DIR"):
        if os.environ.get(variable):
            yield Path(os.environ[variable])
    yield Path(tempfile.gettempdir()) / "data-gym-cache"
    # Where the test suite keeps them (tests/conftest.py).
    yield Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "strands-offload-tiktoken"


_ENCODINGS: dict[str, Any] = {}


def tiktoken_encoding(name: str) -> Any:
    """The ``tiktoken`` encoding ``name``, loaded from rank files already on disk (never downloaded).

    Raises:
        CaseUnavailable: When tiktoken is not installed or its rank files are not on this machine.
    """
    if name in _ENCODINGS:
        return _ENCODINGS[name]
    try:
        import tiktoken
    except ImportError as error:
        raise CaseUnavailable("tiktoken is not installed") from error
    key = _RANK_FILES[name]
    folder = next((d for d in _rank_dirs() if (d / key).is_file()), None)
    if folder is None:
        raise CaseUnavailable(f"tiktoken's {name} rank file is not on this machine (it would be downloaded)")
    previous = os.environ.get("TIKTOKEN_CACHE_DIR")
    os.environ["TIKTOKEN_CACHE_DIR"] = str(folder)
    try:
        encoding = tiktoken.get_encoding(name)
    except Exception as error:  # a corrupt or partial file: tiktoken would try the network
        raise CaseUnavailable(f"tiktoken cannot load {name} offline: {error}") from error
    finally:
        if previous is None:
            os.environ.pop("TIKTOKEN_CACHE_DIR", None)
        else:
            os.environ["TIKTOKEN_CACHE_DIR"] = previous
    _ENCODINGS[name] = encoding
    return encoding


# ---------------------------------------------------------------------------- tokens and previews


def _bpe_count(kind: str, size: int, name: str = "cl100k_base") -> tuple[Thunk, Thunk]:
    encoding = tiktoken_encoding(name)
    text = corpus.text(kind, size)
    counter = token_counter(name)
    return (lambda: len(encoding.encode_ordinary(text))), (lambda: _native.count_tokens(text, counter))


def _conversation(size: int) -> list[dict[str, Any]]:
    """A conversation of about ``size`` characters: prose turns, tool calls, text and JSON results."""
    messages: list[dict[str, Any]] = []
    log = corpus.text("log", size // 2)
    rows = corpus.json_document(size // 4)["items"]
    step = max(1, len(log) // 20)
    for turn in range(20):
        messages.append({"role": "user", "content": [{"text": corpus.text("prose", 2_000)[turn * 50 :]}]})
        call = {"toolUseId": f"t{turn}", "name": "read_file", "input": {"path": f"/srv/{turn}.log", "lines": [1, 500]}}
        messages.append({"role": "assistant", "content": [{"text": "Reading."}, {"toolUse": call}]})
        body = {"json": rows[turn::20]} if turn % 3 == 0 else {"text": log[turn * step : (turn + 1) * step]}
        result: Any = {"toolUseId": f"t{turn}", "status": "success", "content": [body]}
        messages.append({"role": "user", "content": [{"toolResult": result}]})
    return messages


def _estimate(size: int) -> tuple[Thunk, Thunk]:
    from .._accelerate._replacements import make_estimate

    found = _seam.swap_get(_estimate_target())
    original = getattr(found, _seam.ORIGINAL_MARK, found)
    ours = make_estimate(
        original,
        _seam.accelerate_fallback("_count_content_block_tokens"),
        _seam.accelerate_fallback("_heuristic_estimate_text"),
        _seam.accelerate_fallback("_heuristic_estimate_json"),
    )
    messages = _conversation(size)
    return (lambda: original(messages)), (lambda: ours(messages))


def _estimate_target() -> _seam.SwapTarget:
    return next(t for t in _seam.ACCELERATE_TARGETS if t.name == "_estimate_tokens_with_heuristic")


def _truncate_preview(kind: str, size: int) -> tuple[Thunk, Thunk]:
    from ..context_manager.methods.truncate import build_preview

    reference = _seam.sdk_truncate_preview()
    text = corpus.text(kind, size)
    return (lambda: reference(text, 1, None)), (lambda: build_preview(text, 1, None))


def _bpe_preview(kind: str, size: int) -> tuple[Thunk, Thunk]:
    from .._tokens import preview

    encoding = tiktoken_encoding("cl100k_base")
    text = corpus.text(kind, size)

    def whole_characters(tokens: list[int], count: int, head: bool) -> str:
        # The most tokens (up to count) from that end whose bytes are whole UTF-8 characters.
        while count > 0:
            part = tokens[:count] if head else tokens[len(tokens) - count :]
            try:
                return bytes(encoding.decode_bytes(part)).decode("utf-8")
            except UnicodeDecodeError:
                count -= 1
        return ""

    def reference() -> tuple[str, str]:
        tokens = encoding.encode_ordinary(text)
        return whole_characters(tokens, 600, True), whole_characters(tokens, 400, False)

    def ours() -> tuple[str, str]:
        cut = preview(text, 1_000, mode="head_tail", encoding="cl100k_base", head_share=0.6)
        return cut.head, cut.tail

    return reference, ours


# ---------------------------------------------------------------------------- JSON, grep


def _dumps(size: int, indent: int | None) -> tuple[Thunk, Thunk]:
    document = corpus.json_document(size)
    return (lambda: json.dumps(document, indent=indent)), (lambda: _native.json_dumps(document, indent=indent))


_GREPS: dict[str, dict[str, Any]] = {
    "literal": {"pattern": "ERROR"},
    "regex": {"pattern": r"ERROR (auth|billing) request_id=r\d+", "context_lines": 2},
    "line range": {"line_range": (5_000, 5_200)},
}


def _grep(kind: str, size: int, query: dict[str, Any]) -> tuple[Thunk, Thunk]:
    from .._search import search_content

    found = _seam.swap_get(_seam.ACCELERATE_TARGETS[0])
    reference = getattr(found, _seam.ORIGINAL_MARK, found)  # the SDK's, even while accelerated
    text = corpus.text(kind, size)
    return (lambda: reference(text, **query)), (lambda: search_content(text, **query))


# ---------------------------------------------------------------------------- the plugin


def _agent(plugin: Any = None, manager: Any = None, messages: Any = None) -> Any:
    from strands import Agent

    from ..demo.scripted_model import Reply, ScriptedModel

    return Agent(
        model=ScriptedModel(lambda _messages: Reply("ok")),
        plugins=[plugin] if plugin is not None else [],
        context_manager=manager,
        messages=messages,
        callback_handler=None,
    )


def _offloaders() -> tuple[Any, Any]:
    import strands.storage as sdk_storage
    from strands.vended_plugins.context_offloader import ContextOffloader as SdkOffloader

    from ..context_offloader import ContextOffloader
    from ..storage import InMemoryStorage

    return SdkOffloader(sdk_storage.InMemoryStorage()), ContextOffloader(InMemoryStorage())


def _tool_call(plugin: Any, agent: Any, content: list[Any]) -> str:
    from strands.hooks.events import AfterToolCallEvent

    event = AfterToolCallEvent(
        agent=agent,
        selected_tool=None,
        tool_use={"toolUseId": "tooluse_bench", "name": "fetch", "input": {}},
        invocation_state={},
        result={"toolUseId": "tooluse_bench", "status": "success", "content": content},
    )
    asyncio.run(plugin._handle_tool_result(event))
    text: str = event.result["content"][0]["text"]
    return text.split("\n", 1)[0]  # the header; the guidance prose is each package's own


def offload_hook_seconds(plugin: Any, content: list[Any], repeats: int) -> float:
    """Median time of ``plugin``'s offload hook on a tool result of ``content`` (the demo's figure)."""
    agent = _agent(plugin)
    times = []
    for _ in range(repeats):
        started = time.perf_counter()
        _tool_call(plugin, agent, content)
        times.append(time.perf_counter() - started)
    return statistics.median(times)


def _hook(kind: str, size: int) -> tuple[Thunk, Thunk]:
    theirs, ours = _offloaders()
    content = [{"json": corpus.json_document(size)}] if kind == "json" else [{"text": corpus.text(kind, size)}]
    their_agent, our_agent = _agent(theirs), _agent(ours)
    return (lambda: _tool_call(theirs, their_agent, content)), (lambda: _tool_call(ours, our_agent, content))


def _retrieval(size: int, query: dict[str, Any]) -> tuple[Thunk, Thunk]:
    theirs, ours = _offloaders()
    content = [{"text": corpus.text("log", size)}]
    pairs = []
    for plugin in (theirs, ours):
        agent = _agent(plugin)
        _tool_call(plugin, agent, content)
        context = SimpleNamespace(agent=agent)

        def retrieve(plugin: Any = plugin, context: Any = context) -> Any:
            coroutine = plugin.retrieve_offloaded_content("tooluse_bench_0", tool_context=context, **query)
            return asyncio.run(coroutine)

        pairs.append(retrieve)
    return pairs[0], pairs[1]


# ---------------------------------------------------------------------------- context manager, storage


def _per_model_call(size: int) -> tuple[Thunk, Thunk]:
    from strands.experimental.context_manager import ContextManager as SdkContextManager
    from strands.hooks.events import BeforeModelCallEvent

    from ..context_manager import ContextManager

    messages = _conversation(size)
    runs = []
    for manager in (SdkContextManager(), ContextManager()):
        agent = _agent(manager=manager, messages=copy.deepcopy(messages))
        agent.model.update_config(context_window_limit=10 * size)  # steady state: nothing to offload

        def call(agent: Any = agent) -> int:
            event = BeforeModelCallEvent(agent=agent, invocation_state={}, projected_input_tokens=None)
            asyncio.run(agent.hooks.invoke_callbacks_async(event))
            return len(agent.messages)

        runs.append(call)
    return runs[0], runs[1]


def _storage(backend: str, size: int) -> tuple[Thunk, Thunk]:
    import strands.storage as sdk_storage

    from .. import storage as our_storage

    data = corpus.text("log", size).encode("utf-8")
    folder = Path(tempfile.mkdtemp(prefix="strands-offload-bench-"))
    stores: tuple[Any, Any]
    if backend == "local file":
        stores = (sdk_storage.LocalFileStorage(str(folder / "ref")), our_storage.LocalFileStorage(str(folder / "ours")))
    else:
        stores = (sdk_storage.InMemoryStorage(), our_storage.InMemoryStorage())

    def round_trip(store: Any) -> Callable[[], str]:
        async def go() -> str:
            await store.write("bench/entry", data)
            return hashlib.sha256(await store.read("bench/entry")).hexdigest()

        return lambda: asyncio.run(go())

    return round_trip(stores[0]), round_trip(stores[1])


# ---------------------------------------------------------------------------- accelerate()


def scripted_triage_agent(log: str, rows: Any, *, window: int, page: tuple[int, int]) -> tuple[Any, Any]:
    """A fresh, unchanged strands Agent (vended offloader + ``"auto"`` context manager) and its model.

    The scripted model reads ``log`` and ``rows`` through two tools, greps the offloaded log for
    ERROR, pages lines ``page`` of the offloaded rows, then answers. Shared by the ``accelerate()``
    bench case and the end-to-end test of ``accelerate()``.
    """
    import strands.storage as sdk_storage
    from strands import Agent, tool
    from strands.experimental.context_manager import ContextManager as SdkContextManager
    from strands.vended_plugins.context_offloader import ContextOffloader as SdkOffloader

    from ..demo.scripted_model import Reply, ScriptedModel, ToolCall

    @tool
    def read_log(name: str) -> str:
        """Read a log."""
        return log

    @tool
    def list_rows(page: int) -> dict[str, Any]:
        """List rows."""
        return {"status": "success", "content": [{"json": rows}]}

    grep = {"reference": "tu_log_0", "pattern": "ERROR"}
    lines = {"reference": "tu_rows_0", "line_range": {"start": page[0], "end": page[1]}}
    steps = iter(
        [
            Reply("reading", [ToolCall("read_log", {"name": "api"}, "tu_log")]),
            Reply("rows", [ToolCall("list_rows", {"page": 1}, "tu_rows")]),
            Reply("grep", [ToolCall("retrieve_offloaded_content", grep, "tu_g")]),
            Reply("page", [ToolCall("retrieve_offloaded_content", lines, "tu_p")]),
            Reply("done"),
        ]
    )
    model = ScriptedModel(lambda _messages: next(steps, Reply("done")))
    model.update_config(context_window_limit=window)
    agent = Agent(
        model=model,
        tools=[read_log, list_rows],
        plugins=[SdkOffloader(sdk_storage.InMemoryStorage(), max_result_tokens=3_000)],
        context_manager=SdkContextManager.from_strategy("auto"),
        callback_handler=None,
    )
    return agent, model


def _accelerated_agent(size: int) -> tuple[Thunk, Thunk]:
    """One scripted session of an unchanged strands Agent (offloader plugin + context manager)."""
    from .._accelerate import accelerated

    log = corpus.text("log", size)
    rows = corpus.json_document(size // 2)

    def session() -> int:
        agent, _ = scripted_triage_agent(log, rows, window=60_000, page=(10, 90))
        agent("triage")
        return len(agent.messages)

    def fast() -> int:
        with accelerated():
            return session()

    return session, fast


# ---------------------------------------------------------------------------- the list


def all_cases(quick: bool = False) -> list[Case]:
    """Every case; ``quick`` keeps inputs up to 1 MB and leaves the slowest reference runs at 100 KB."""
    sizes = {"10KB": 10_000, "1MB": 1_000_000} if quick else {"10KB": 10_000, "1MB": 1_000_000, "10MB": 10_000_000}
    big = "1MB" if quick else "10MB"
    slow = "100KB" if quick else "1MB"  # inputs for the reference runs that take a second per MB (tiktoken)
    cases: list[Case] = []

    def add(group: str, operation: str, build: Callable[[], tuple[Thunk, Thunk]], same: bool = True) -> None:
        cases.append(Case(group, operation, build, same))

    for short, encoding in (("cl100k", "cl100k_base"), ("o200k", "o200k_base")):
        for kind in corpus.KINDS:
            for name in ("10KB", slow) if quick else ("10KB", "1MB", "10MB"):
                size = corpus.SIZES[name]
                group = f"count {short} (tiktoken) {kind} {name}"
                add(group, "tokens", partial(_bpe_count, kind, size, encoding))
    for name, size in sizes.items():
        add(f"heuristic estimate conversation {name}", "tokens", partial(_estimate, size))
    for kind in ("prose", "cjk"):
        add(f"truncate preview {kind} {big}", "preview", partial(_truncate_preview, kind, corpus.SIZES[big]))
        add(f"preview cl100k (tiktoken) {kind} {slow}", "preview", partial(_bpe_preview, kind, corpus.SIZES[slow]))
    for name, size in sizes.items():
        add(f"json dumps compact {name}", "json", partial(_dumps, size, None))
        add(f"json dumps indent=2 {name}", "json", partial(_dumps, size, 2))
    for query_name, query in _GREPS.items():
        for kind in ("log", "code") if query_name != "line range" else ("log",):
            add(f"grep {query_name} {kind} {big}", "grep", partial(_grep, kind, corpus.SIZES[big], query))
    for kind in ("log", "json"):
        add(f"plugin tool-call hook {kind} {big}", "plugin", partial(_hook, kind, corpus.SIZES[big]))
    for query_name, query in (
        ("pattern", {"pattern": "ERROR", "context_lines": 2}),
        ("line range", {"line_range": {"start": 5_000, "end": 5_200}}),
    ):
        add(f"retrieval {query_name} log {big}", "retrieval", partial(_retrieval, corpus.SIZES[big], query))
    add(f"context manager per model call {slow}", "context manager", partial(_per_model_call, corpus.SIZES[slow]))
    for backend in ("in memory", "local file"):
        add(f"storage write+read {backend} {big}", "storage", partial(_storage, backend, corpus.SIZES[big]))
    add(f"accelerate() unchanged agent session {big}", "accelerate", partial(_accelerated_agent, corpus.SIZES[big]))
    return cases
