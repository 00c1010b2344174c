"""The seam to private names: probes, one warning and a fallback on failure, and nobody else imports them."""

from __future__ import annotations

import ast
import importlib
import importlib.metadata
import logging
import re
import sys
import warnings
from collections.abc import Callable, Iterator
from pathlib import Path
from types import ModuleType

import pytest
import strands.storage.storage as sdk_storage
import strands_offload
import strands_offload.storage.storage as our_storage
from strands import Agent
from strands.agent._agent_as_tool import _AgentAsTool
from strands.experimental.context_manager import ContextManager as SdkContextManager
from strands.storage import LocalFileStorage as SdkLocalFileStorage
from strands.storage.search import Bm25SearchStrategy as SdkBm25SearchStrategy
from strands_offload import _seam
from strands_offload.demo.scripted_model import Reply, ScriptedModel

FEATURES = {
    "storage-markers",
    "storage-views",
    "agent-as-tool",
    "context-manager",
    "re-parser",
    "re-casefix",
    "accelerate",
    "accelerate-turn",
    "span-events",
    "cycle-span",
    "session-log",
    "agent-request",
    "cache-strategy",
    "input-projection",
    "model-input-middleware",
    "metrics-placeholder",
}
STRANDS_FEATURES = {
    "storage-markers",
    "storage-views",
    "agent-as-tool",
    "context-manager",
    "accelerate",
    "accelerate-turn",
    "cycle-span",
    "session-log",
    "agent-request",
    "cache-strategy",
    "input-projection",
    "model-input-middleware",
}
EVENT_LOOP = "strands.event_loop.event_loop"
AGENTIC = "strands._context_manager.modes.agentic.agentic_context"
METRICS_INTERNAL = "opentelemetry.metrics._internal"


def _clear_seam_caches() -> None:
    for cached in (
        _seam.probe,
        _seam._metrics_placeholder,
        _seam.storage_markers,
        _seam.re_parser,
        _seam.re_constants,
        _seam.re_extra_cases,
    ):
        cached.cache_clear()


@pytest.fixture
def fresh_seam(monkeypatch: pytest.MonkeyPatch) -> Iterator[pytest.MonkeyPatch]:
    """Probes run again in the test; afterwards the patches are undone and the next use re-probes."""
    _clear_seam_caches()
    yield monkeypatch
    monkeypatch.undo()
    _clear_seam_caches()


def _agent() -> Agent:
    return Agent(model=ScriptedModel(lambda messages: Reply(text="done")), callback_handler=None)


def _casefix_table() -> tuple[ModuleType, str]:
    """Where the running Python keeps the extra case-folding table."""
    if sys.version_info >= (3, 11):
        return importlib.import_module("re._casefix"), "_EXTRA_CASES"
    return importlib.import_module("sre_compile"), "_ignorecase_fixes"


# ---------------------------------------------------------------------------- probes pass here


def test_every_feature_passes_its_probe_on_this_install(fresh_seam: pytest.MonkeyPatch) -> None:
    assert _seam.strands_version() in _seam.TESTED_STRANDS_VERSIONS
    assert set(_seam._PROBES) == FEATURES
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for feature in sorted(FEATURES):
            assert _seam.probe(feature) is None, feature
            assert _seam.available(feature)
            _seam.require(feature)


def test_handed_out_names_are_the_real_ones(fresh_seam: pytest.MonkeyPatch, tmp_path: Path) -> None:
    namespaced, ephemeral = _seam.storage_markers()
    assert namespaced is sdk_storage._NAMESPACED and ephemeral is sdk_storage._EPHEMERAL
    assert (our_storage._NAMESPACED, our_storage._EPHEMERAL) == (namespaced, ephemeral)
    strategy = SdkBm25SearchStrategy()
    backend = SdkLocalFileStorage(str(tmp_path), search_strategy=strategy)
    assert _seam.sdk_search_strategy(backend) is strategy
    assert _seam.sdk_wrapped_storage(sdk_storage._NamespacedStorage(backend, "p")) is backend
    assert _seam.sdk_search_strategy(object()) is None and _seam.sdk_wrapped_storage(object()) is None
    assert _seam.reference_context_manager_class() is SdkContextManager
    from strands.session.file_session_manager import FileSessionManager

    logged = FileSessionManager(session_id="seam", storage_dir=str(tmp_path / "sessions"))
    agent = Agent(model=ScriptedModel(lambda m: Reply(text="done")), session_manager=logged, callback_handler=None)
    assert _seam.message_log_session_manager(agent) is logged
    assert _seam.message_log_session_manager(_agent()) is None
    blocks = [{"text": "be brief"}, {"cachePoint": {"type": "default"}}]
    prompted = Agent(model=ScriptedModel(lambda m: Reply(text="done")), system_prompt=blocks, callback_handler=None)
    assert _seam.system_prompt_content(prompted) == blocks
    from strands.models.bedrock import BedrockModel
    from strands.models.model import CacheConfig

    auto = CacheConfig(strategy="auto")
    claude = BedrockModel(
        model_id="anthropic.claude-sonnet-4-20250514-v1:0", region_name="us-east-1", cache_config=auto
    )
    nova = BedrockModel(model_id="amazon.nova-pro-v1:0", region_name="us-east-1", cache_config=auto)
    assert _seam.places_cache_points(claude) is True and _seam.places_cache_points(nova) is False
    assert _seam.places_cache_points(BedrockModel(model_id="amazon.nova-pro-v1:0", region_name="us-east-1")) is False
    assert _seam.places_cache_points(ScriptedModel(lambda m: Reply(text="done"))) is _seam.UNKNOWN
    assert [tool.tool_name for tool in _seam.agentic_tools()] == [
        "summarize_context",
        "truncate_context",
        "pin_context",
    ]
    assert _seam.token_usage_middleware() is not _seam.token_usage_middleware()
    agent = _agent()
    assert _seam.is_delegating_agent_tool(agent.as_tool(name="helper", delegate=True))
    assert not _seam.is_delegating_agent_tool(agent.as_tool(name="helper"))
    assert not _seam.is_delegating_agent_tool(object())
    expected_parser = "re._parser" if sys.version_info >= (3, 11) else "sre_parse"
    assert _seam.re_parser() is sys.modules[expected_parser]
    assert _seam.re_parser().parse("a|b") is not None
    module, name = _casefix_table()
    assert _seam.re_extra_cases() is getattr(module, name) and _seam.re_extra_cases()


# ---------------------------------------------------------------------------- a failed probe

# feature -> (break the probed module, a piece of the reason the probe gives)
Breaker = Callable[[pytest.MonkeyPatch], None]
BREAKERS: dict[str, tuple[Breaker, str]] = {
    "storage-markers": (lambda mp: mp.delattr(sdk_storage, "_NAMESPACED"), "has no _NAMESPACED"),
    "storage-views": (lambda mp: mp.delattr(sdk_storage, "_NamespacedStorage"), "has no _NamespacedStorage"),
    "agent-as-tool": (lambda mp: mp.setattr(_AgentAsTool, "delegate", True), "no longer a property"),
    "context-manager": (lambda mp: mp.delattr(importlib.import_module(AGENTIC), "pin_context"), "has no pin_context"),
    "re-parser": (lambda mp: mp.delattr(_seam.re_parser(), "SubPattern"), "SubPattern is missing"),
    "re-casefix": (lambda mp: mp.setattr(*_casefix_table(), [(1, 2)]), "not a dict"),
    "accelerate": (
        lambda mp: mp.delattr(importlib.import_module("strands._context_manager.stash"), "_encode"),
        "has no _encode",
    ),
    "accelerate-turn": (
        lambda mp: mp.setattr(importlib.import_module("strands.event_loop.streaming"), "_normalize_messages", list),
        "_normalize_messages no longer uses copy, deepcopy",
    ),
    "span-events": (
        lambda mp: mp.delattr(importlib.import_module("opentelemetry.sdk.trace"), "_Span"),
        "has no _Span subclass of Span",
    ),
    "cycle-span": (
        lambda mp: mp.setattr(importlib.import_module(EVENT_LOOP), "event_loop_cycle", lambda *args: None),
        "no longer stores 'event_loop_cycle_span'",
    ),
    "session-log": (
        lambda mp: mp.delattr(
            importlib.import_module("strands.session.repository_session_manager"), "RepositorySessionManager"
        ),
        "has no RepositorySessionManager",
    ),
    "agent-request": (
        lambda mp: mp.setattr(importlib.import_module("strands.agent.agent").Agent, "__init__", lambda self: None),
        "no longer keeps its system prompt blocks",
    ),
    "cache-strategy": (
        lambda mp: mp.delattr(importlib.import_module("strands.models.bedrock").BedrockModel, "_cache_strategy"),
        "no longer has a _cache_strategy property",
    ),
    "input-projection": (
        lambda mp: mp.setattr(importlib.import_module(EVENT_LOOP), "_estimate_input_tokens", lambda agent: 0),
        "_estimate_input_tokens no longer reads _total_prompt_tokens",
    ),
    "model-input-middleware": (
        lambda mp: mp.setattr(
            importlib.import_module(EVENT_LOOP), "_structured_output_request", lambda ctx: ([], None)
        ),
        "_structured_output_request no longer sends the context's tool_specs",
    ),
    "metrics-placeholder": (
        lambda mp: mp.delattr(importlib.import_module(METRICS_INTERNAL), "_ProxyMeterProvider"),
        "has no _ProxyMeterProvider class",
    ),
}


def test_every_feature_has_a_failure_case() -> None:
    assert set(BREAKERS) == FEATURES


@pytest.mark.parametrize("feature", sorted(BREAKERS))
def test_failed_probe_warns_once_then_refuses(
    feature: str, fresh_seam: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    breaker, reason = BREAKERS[feature]
    caplog.set_level(logging.WARNING, logger=_seam.__name__)
    with warnings.catch_warnings(record=True) as caught:
        # "always": a second warning must not be hidden by Python's once-per-location registry.
        warnings.simplefilter("always")
        # Broken only while probing: the re features are Python's own regex machinery.
        with fresh_seam.context() as patch:
            breaker(patch)
            assert not _seam.available(feature)
        assert not _seam.available(feature)
        for _ in range(2):
            with pytest.raises(_seam.SeamUnavailable, match=f"^{feature} is unavailable on .*{reason}"):
                _seam.require(feature)
    ours = [w for w in caught if str(w.message).startswith("strands_offload:")]
    assert len(ours) == 1 and ours[0].category is RuntimeWarning
    if feature in STRANDS_FEATURES:
        where = f"strands-agents {_seam.strands_version()}"
    elif feature == "metrics-placeholder":
        where = f"opentelemetry-api {importlib.metadata.version('opentelemetry-api')}"
    elif feature == "span-events":
        where = f"opentelemetry-sdk {importlib.metadata.version('opentelemetry-sdk')}"
    else:
        where = f"Python {sys.version.split()[0]}"
    assert str(ours[0].message).startswith(f"strands_offload: {feature} is unavailable on {where} (")
    assert reason in str(ours[0].message) and "tested with strands-agents 1.62.0" in str(ours[0].message)
    assert [r.getMessage() for r in caplog.records if r.name == _seam.__name__] == [
        f"feature=<{feature}>, reason=<{_seam.probe(feature)}> | private names unavailable, falling back"
    ]
    # Other features are unaffected.
    assert all(_seam.available(other) for other in FEATURES - {feature})


def test_storage_markers_fall_back_to_our_own(fresh_seam: pytest.MonkeyPatch) -> None:
    fresh_seam.delattr(sdk_storage, "_NAMESPACED")
    with pytest.warns(RuntimeWarning, match="storage-markers is unavailable"):
        markers = _seam.storage_markers()
    assert markers == (_seam._OWN_NAMESPACED, _seam._OWN_EPHEMERAL)
    assert markers[0] is not markers[1]
    assert _seam.storage_markers() is markers


def test_storage_views_fall_back_to_no_strategy(fresh_seam: pytest.MonkeyPatch, tmp_path: Path) -> None:
    backend = SdkLocalFileStorage(str(tmp_path), search_strategy=SdkBm25SearchStrategy())
    view = sdk_storage._NamespacedStorage(backend, "p")
    fresh_seam.delattr(sdk_storage, "_NamespacedStorage")
    with pytest.warns(RuntimeWarning, match="storage-views is unavailable"):
        assert _seam.sdk_search_strategy(backend) is None
    assert _seam.sdk_wrapped_storage(view) is None


def test_delegate_detection_falls_back_to_no(fresh_seam: pytest.MonkeyPatch) -> None:
    tool = _agent().as_tool(name="helper", delegate=True)
    fresh_seam.setattr(_AgentAsTool, "delegate", True)
    with pytest.warns(RuntimeWarning, match="agent-as-tool is unavailable"):
        assert not _seam.is_delegating_agent_tool(tool)


def test_cycle_span_is_read_from_the_invocation_state_and_falls_back_to_none(
    fresh_seam: pytest.MonkeyPatch,
) -> None:
    from opentelemetry import trace

    span = trace.NonRecordingSpan(trace.INVALID_SPAN_CONTEXT)
    assert _seam.cycle_span({"event_loop_cycle_span": span}) is span
    assert _seam.cycle_span({"event_loop_cycle_span": "not a span"}) is None
    assert _seam.cycle_span({}) is None and _seam.cycle_span(None) is None
    _seam.probe.cache_clear()  # probed above on the real SDK: probe the broken one afresh
    fresh_seam.setattr(importlib.import_module(EVENT_LOOP), "event_loop_cycle", lambda *args: None)
    with pytest.warns(RuntimeWarning, match="cycle-span is unavailable"):
        assert _seam.cycle_span({"event_loop_cycle_span": span}) is None


def test_an_unset_global_meter_provider_is_seen_and_the_fallback_always_meters(
    fresh_seam: pytest.MonkeyPatch,
) -> None:
    from opentelemetry import metrics
    from opentelemetry.sdk.metrics import MeterProvider

    placeholder = metrics.get_meter_provider()
    assert _seam.global_metrics_unset() is (type(placeholder).__name__ == "_ProxyMeterProvider")
    fresh_seam.setattr(metrics, "get_meter_provider", lambda: MeterProvider())
    assert not _seam.global_metrics_unset()
    fresh_seam.setattr(metrics, "get_meter_provider", lambda: placeholder)
    _clear_seam_caches()
    fresh_seam.delattr(importlib.import_module(METRICS_INTERNAL), "_ProxyMeterProvider")
    with pytest.warns(RuntimeWarning, match="metrics-placeholder is unavailable"):
        assert not _seam.global_metrics_unset()


def test_the_input_projection_is_the_event_loops(fresh_seam: pytest.MonkeyPatch) -> None:
    """Before any usage, after it, and for a list the agent does not hold yet; the full count without the probe."""
    import asyncio

    from strands import tool
    from strands.event_loop.event_loop import _estimate_input_tokens

    @tool(description="Look a query up in the knowledge base. " + "Every detail of the lookup rules. " * 200)
    def lookup(query: str) -> str:
        return query

    prompt = [{"text": "You answer questions about the service. " * 300}]
    agent = Agent(
        model=ScriptedModel(lambda m: Reply(text="done")), tools=[lookup], system_prompt=prompt, callback_handler=None
    )
    agent.messages.append({"role": "user", "content": [{"text": "hello"}]})
    full = asyncio.run(_estimate_input_tokens(agent))
    assert full > 6_000  # the system prompt and the tool spec are in it
    assert asyncio.run(_seam.projected_input_tokens(agent)) == full
    usage = {"inputTokens": 4_000, "outputTokens": 50, "totalTokens": 4_150, "cacheReadInputTokens": 100}
    agent.messages.append({"role": "assistant", "content": [{"text": "hi"}], "metadata": {"usage": usage}})
    assert asyncio.run(_seam.projected_input_tokens(agent)) == asyncio.run(_estimate_input_tokens(agent)) == 4_150
    agent.messages.append({"role": "user", "content": [{"text": "and then? " * 40}]})
    assert asyncio.run(_seam.projected_input_tokens(agent)) == asyncio.run(_estimate_input_tokens(agent)) > 4_150
    later = [*agent.messages, {"role": "assistant", "content": [{"text": "more"}]}]
    grown = asyncio.run(_seam.projected_input_tokens(agent, later))
    assert grown == 4_150 + asyncio.run(agent.model.count_tokens(later[2:]))  # after the usage
    _seam.probe.cache_clear()  # probed above on the real SDK: probe the broken one afresh
    fresh_seam.setattr(importlib.import_module(EVENT_LOOP), "_estimate_input_tokens", lambda agent: 0)
    with pytest.warns(RuntimeWarning, match="input-projection is unavailable"):
        fallback = asyncio.run(_seam.projected_input_tokens(agent))
    specs = agent.tool_registry.get_all_tool_specs()
    count = agent.model.count_tokens(agent.messages, tool_specs=specs, system_prompt=agent.system_prompt)
    assert fallback == asyncio.run(count) > full  # the usage is not read; the messages grew


def test_hide_tool_specs_goes_through_the_model_middleware(fresh_seam: pytest.MonkeyPatch) -> None:
    """Registered as the SDK's InvokeModelStage.Input; without the probe nothing is hidden (one warning)."""
    from strands.tools.tools import PythonAgentTool
    from strands_offload.context_manager import ContextManager, Hide

    def tool_named(name: str) -> PythonAgentTool:
        spec = {"name": name, "description": f"{name} things", "inputSchema": {"json": {"type": "object"}}}
        return PythonAgentTool(name, spec, lambda tool_use, **_: {})  # type: ignore[arg-type]

    def sent_specs() -> list[str]:
        sent: list[str] = []

        class Recording(ScriptedModel):
            def stream(self, messages, tool_specs=None, *args, **kwargs):  # type: ignore[no-untyped-def]
                sent.extend(spec["name"] for spec in tool_specs or ())
                return super().stream(messages, tool_specs, *args, **kwargs)

        manager = ContextManager(strategies=[Hide.tool_specs(config={"keep": 1})], stash=False)
        tools = [tool_named("weather"), tool_named("email")]
        agent = Agent(model=Recording(lambda m: Reply(text="done")), tools=tools, context_manager=manager)
        agent("weather please")
        return sent

    assert _seam.add_model_input_middleware(_agent(), lambda context: context)
    assert sent_specs() == ["weather"]
    _seam.probe.cache_clear()
    fresh_seam.setattr(importlib.import_module(EVENT_LOOP), "_structured_output_request", lambda ctx: ([], None))
    with pytest.warns(RuntimeWarning, match="model-input-middleware is unavailable"):
        assert not _seam.add_model_input_middleware(_agent(), lambda context: context)
    fresh_seam.undo()
    fresh_seam.setattr(_seam, "available", lambda feature: feature != "model-input-middleware")
    assert sent_specs() == ["weather", "email"]


def test_context_manager_pieces_refuse(fresh_seam: pytest.MonkeyPatch) -> None:
    fresh_seam.delattr(importlib.import_module(AGENTIC), "pin_context")
    with pytest.warns(RuntimeWarning, match="context-manager is unavailable"):
        with pytest.raises(_seam.SeamUnavailable, match="has no pin_context"):
            _seam.reference_context_manager_class()
    for piece in (_seam.agentic_tools, _seam.token_usage_middleware):
        with pytest.raises(_seam.SeamUnavailable, match="has no pin_context"):
            piece()


# ---------------------------------------------------------------------------- nobody else imports them

PACKAGE = Path(strands_offload.__file__).resolve().parent
SEAM = PACKAGE / "_seam.py"
# Private modules of Python's regular-expression engine, old and new names.
PRIVATE_STDLIB = {"sre_parse", "sre_constants", "sre_compile"}
# Roots whose private names only the seam may touch.
GUARDED_ROOTS = {"strands", "re", "json", *PRIVATE_STDLIB}


def _private_component(parts: list[str]) -> bool:
    return any(part.startswith("_") for part in parts)


def is_private_module(dotted: str) -> bool:
    """``strands._context_manager``, ``strands.agent._agent_as_tool``, ``re._parser``, ``sre_parse``..."""
    root, *rest = dotted.split(".")
    return root in PRIVATE_STDLIB or (root in GUARDED_ROOTS and _private_component(rest))


def _is_private_name(name: str) -> bool:
    return name.startswith("_") and not (name.startswith("__") and name.endswith("__"))


_DOTTED = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)*")


def private_uses(source: str) -> list[tuple[int, str]]:
    """Lines and descriptions of every use of a guarded private name in ``source``.

    Covers ``import`` and ``from`` statements (module paths and imported names), attribute access
    on names bound by those imports (``re._parser``, ``storage._NAMESPACED``), ``getattr`` on them
    with a literal name, and literal private module paths handed to any call
    (``importlib.import_module("strands._context_manager")``, ``__import__("sre_parse")``, or a helper).
    """
    found: list[tuple[int, str]] = []
    bound: set[str] = set()  # local names standing for guarded modules or objects imported from them
    tree = ast.parse(source)
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if is_private_module(alias.name):
                    found.append((node.lineno, f"import {alias.name}"))
                if alias.name.split(".")[0] in GUARDED_ROOTS:
                    bound.add(alias.asname or alias.name.split(".")[0])
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            if node.module.split(".")[0] not in GUARDED_ROOTS:
                continue
            if is_private_module(node.module):
                found.append((node.lineno, f"from {node.module} import ..."))
            for alias in node.names:
                if _is_private_name(alias.name):
                    found.append((node.lineno, f"from {node.module} import {alias.name}"))
                bound.add(alias.asname or alias.name)
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and _is_private_name(node.attr):
            base = node.value
            while isinstance(base, ast.Attribute):
                base = base.value
            if isinstance(base, ast.Name) and base.id in bound:
                found.append((node.lineno, f"{ast.unparse(node)}"))
        elif isinstance(node, ast.Call):
            literals = [a.value for a in node.args if isinstance(a, ast.Constant) and isinstance(a.value, str)]
            for text in literals:
                if _DOTTED.fullmatch(text) and is_private_module(text):
                    found.append((node.lineno, f"{ast.unparse(node.func)}({text!r})"))
            if (
                isinstance(node.func, ast.Name)
                and node.func.id in {"getattr", "hasattr"}
                and len(node.args) >= 2
                and isinstance(node.args[0], ast.Name)
                and node.args[0].id in bound
                and isinstance(node.args[1], ast.Constant)
                and isinstance(node.args[1].value, str)
                and _is_private_name(node.args[1].value)
            ):
                found.append((node.lineno, ast.unparse(node)))
    return found


@pytest.mark.parametrize(
    "source",
    [
        "import strands._context_manager",
        "import strands.agent._agent_as_tool as tools",
        "from strands._context_manager.stash import resolve",
        "from strands.agent import _agent_as_tool",
        "from strands.storage.storage import _NAMESPACED",
        "from strands import _context_manager",
        "import re._parser",
        "from re import _casefix",
        "from re._constants import MAX_REPEAT",
        "import sre_parse",
        "from sre_constants import MAXREPEAT",
        "import sre_compile as c",
        "from json.encoder import _make_iterencode",
        "import importlib\nimportlib.import_module('strands._context_manager.stash')",
        "from importlib import import_module\nimport_module('re._constants')",
        "__import__('sre_constants')",
        "load('strands.agent._agent_as_tool')",
        "import re\nre._parser.parse('a')",
        "import strands.storage.storage as s\nmarker = s._EPHEMERAL",
        "import strands.storage.storage\nstrands.storage.storage._NAMESPACED",
        "from strands.agent import Agent\nAgent._private()",
        "import re\ngetattr(re, '_casefix')",
    ],
)
def test_the_scan_finds_private_uses(source: str) -> None:
    assert private_uses(source)


@pytest.mark.parametrize(
    "source",
    [
        "from __future__ import annotations",
        "import re\nre.compile('a').pattern",
        "from strands.storage import Storage\nStorage.__name__",
        "from . import _seam\n_seam.storage_markers()",
        "from ..storage.storage import _NAMESPACED",
        "import importlib\nimportlib.import_module(name)",
        "log('see strands._context_manager for the reference')",
        "getattr(storage, '_namespaced', None)",
        '"""Mirrors strands._context_manager.stash."""',
    ],
)
def test_the_scan_leaves_public_and_own_names_alone(source: str) -> None:
    assert private_uses(source) == []


def test_only_the_seam_touches_private_names() -> None:
    # Scanned at test time, so modules added later (context_manager/) are covered too.
    modules = sorted(PACKAGE.rglob("*.py"))
    assert SEAM in modules and PACKAGE / "storage" / "_keys.py" in modules
    offenders = {
        f"{path.relative_to(PACKAGE)}:{line}: {what}"
        for path in modules
        if path != SEAM
        for line, what in private_uses(path.read_text(encoding="utf-8"))
    }
    assert sorted(offenders) == []
    # The seam itself is where they are: the scan sees them there.
    assert private_uses(SEAM.read_text(encoding="utf-8"))
