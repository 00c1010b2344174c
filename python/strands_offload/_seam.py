"""The one place that touches names strands-agents and the standard library keep private.

Everything else in the package asks this module for them. Each private name belongs to a
*feature*; the feature is probed the first time it is needed. On a strands-agents version the
test suite ran on (``TESTED_STRANDS_VERSIONS``) the probe is a formality; on any other version it
checks that the names exist and have the shape we rely on. A failed probe logs one warning per
feature and process, and the caller either falls back to the SDK's own code or refuses with
:class:`SeamUnavailable`; it never runs on internals it could not check.

Features:
    ``storage-markers``: the SDK's ``_NAMESPACED`` / ``_EPHEMERAL`` sentinels, so the SDK treats our
        storage backends like its own.
    ``storage-views``: where the SDK's storage backends keep their search strategy
        (``_search_strategy``) and its namespaced view the storage it wraps (``_storage``), so stash
        search knows a BM25-configured storage behind any view.
    ``agent-as-tool``: ``strands.agent._agent_as_tool._AgentAsTool`` (delegate results are final answers).
    ``context-manager``: the private ``strands._context_manager`` package the public
        ``strands.experimental.context_manager`` is built from (the base class, the agentic tools and
        the token-usage middleware).
    ``re-parser``: ``re._parser`` / ``re._constants`` (``sre_parse`` / ``sre_constants`` before 3.11).
    ``re-casefix``: ``re._casefix._EXTRA_CASES`` (3.11+) or ``sre_compile._ignorecase_fixes`` (3.10).
    ``cycle-span``: the invocation-state key under which the event loop keeps the current cycle's span
        (``event_loop_cycle_span``), the parent of the ledger's spans.
    ``metrics-placeholder``: ``opentelemetry.metrics._internal._ProxyMeterProvider``, the API's stand-in
        until a global meter provider is set: while it stands, the ledger's metrics would go nowhere and
        are not made.
    ``session-log``: ``Agent._session_manager``, where the agent keeps its session manager, so that
        ``persist_reductions`` knows a message-log one (``RepositorySessionManager``) from the others.
    ``agent-request``: ``Agent._system_prompt_content``, the system prompt blocks the event loop sends,
        so that a ``cache_aligned`` summary request starts exactly as the agent's own requests.
    ``cache-strategy``: ``BedrockModel._cache_strategy``, whether a Bedrock model with a ``cache_config``
        really places cache points (``"auto"`` does only for Claude models), so the prompt-cache
        options and the ledger's cache-invalidating edits follow what the provider is sent.
    ``input-projection``: how the event loop projects the next request's size
        (``strands.event_loop.event_loop._estimate_input_tokens``: the last reported usage, which covers
        the system prompt and tool specs, plus the messages after it; the full count before any usage)
        and the usage total it reads (``strands.telemetry.metrics._total_prompt_tokens``), so that
        decisions taken ahead of a model call use the figure that call's hooks will see.
    ``model-input-middleware``: the fields of ``InvokeModelContext`` an ``InvokeModelStage.Input`` handler
        replaces (``tool_specs``, ``projected_input_tokens``) and the event loop's private
        ``_structured_output_request``, which sends the context's ``tool_specs``, so that
        ``Hide.tool_specs`` changes what the request carries.
    ``accelerate``: the module attributes :func:`strands_offload.accelerate` swaps (``ACCELERATE_TARGETS``)
        and the SDK functions its replacements hand unusual inputs back to (``ACCELERATE_FALLBACKS``).
    ``accelerate-turn``: what accelerate() swaps in the turn itself (the targets of this feature in
        ``ACCELERATE_TARGETS``): the ``copy`` globals of the event loop and of the streaming module (whose
        ``_handle_model_execution`` and ``_normalize_messages`` deep-copy the conversation on every model
        call) and the tracer's ``Tracer._add_event_messages``, with what its replacement relies on
        (``serialize``, its encoder's per-value probe, the ``_add_event`` / ``_redact`` /
        ``_get_event_name_for_message`` methods: ``ACCELERATE_TURN_FALLBACKS``).
    ``span-events``: how the OpenTelemetry SDK's span keeps its events (``opentelemetry.sdk.trace._Span``,
        ``Span._events``, a ``opentelemetry.sdk.util.BoundedList`` that keeps the last ``maxlen`` events and
        counts the others in ``dropped``), so that accelerate()'s message events skip building the events a
        span would drop anyway and count them as it would.
"""

from __future__ import annotations

import functools
import importlib
import inspect
import logging
import sys
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from importlib.metadata import PackageNotFoundError, version
from types import ModuleType
from typing import Any

logger = logging.getLogger(__name__)

#: strands-agents versions the test suite ran on; other versions are probed.
TESTED_STRANDS_VERSIONS: frozenset[str] = frozenset({"1.62.0"})


class SeamUnavailable(RuntimeError):
    """A private name we rely on is missing or changed shape in the installed version."""


def strands_version() -> str:
    """The installed strands-agents version, or ``"unknown"``."""
    try:
        return version("strands-agents")
    except PackageNotFoundError:  # pragma: no cover - a vendored or source install
        return "unknown"


def _module(name: str) -> ModuleType:
    return importlib.import_module(name)


def _has(module: str, *names: str) -> None:
    mod = _module(module)
    missing = [n for n in names if not hasattr(mod, n)]
    if missing:
        raise SeamUnavailable(f"{module} has no {', '.join(missing)}")


def _params(func: Callable[..., Any], *expected: str) -> None:
    names = list(inspect.signature(func).parameters)
    if any(name not in names for name in expected):
        raise SeamUnavailable(f"{getattr(func, '__qualname__', func)!r} takes {names}, expected {list(expected)}")


def _probe_storage_markers() -> None:
    _has("strands.storage.storage", "_NAMESPACED", "_EPHEMERAL")


def _probe_storage_views() -> None:
    _has("strands.storage.storage", "_NamespacedStorage")
    backend = _module("strands.storage").InMemoryStorage()
    if not hasattr(backend, "_search_strategy"):
        raise SeamUnavailable("InMemoryStorage keeps no _search_strategy")
    view = _module("strands.storage.storage")._NamespacedStorage(backend, "probe")
    if getattr(view, "_storage", None) is not backend:
        raise SeamUnavailable("_NamespacedStorage keeps no _storage")


def _probe_agent_as_tool() -> None:
    _has("strands.agent._agent_as_tool", "_AgentAsTool")
    if not isinstance(getattr(_module("strands.agent._agent_as_tool")._AgentAsTool, "delegate", None), property):
        raise SeamUnavailable("_AgentAsTool.delegate is no longer a property")


def _probe_context_manager() -> None:
    _has("strands.experimental.context_manager", "ContextManager")
    _has("strands._context_manager.modes.agentic.agentic_context", *_AGENTIC_NAMES)
    base = _module("strands.experimental.context_manager").ContextManager
    for member in ("init_agent", "from_strategy", "resolve_conversation_manager"):
        if not callable(getattr(base, member, None)):
            raise SeamUnavailable(f"ContextManager.{member} is missing")
    for member in ("stash", "stash_is_durable", "name"):
        if not isinstance(getattr(base, member, None), property):
            raise SeamUnavailable(f"ContextManager.{member} is no longer a property")
    _params(_module("strands._context_manager.modes.agentic.agentic_context").create_token_usage_middleware)


def _probe_re_parser() -> None:
    parser = re_parser()
    constants = re_constants()
    for name in ("parse", "SubPattern"):
        if not hasattr(parser, name):
            raise SeamUnavailable(f"{parser.__name__}.{name} is missing")
    for name in ("CATEGORY_DIGIT", "IN", "LITERAL", "MAX_REPEAT"):
        if not hasattr(constants, name):
            raise SeamUnavailable(f"{constants.__name__}.{name} is missing")


def _probe_re_casefix() -> None:
    if not isinstance(re_extra_cases(), dict):
        raise SeamUnavailable("the re module's extra case table is not a dict")


def _resolve(target: SwapTarget) -> Any:
    """The current value of ``target`` (its name may be dotted: a class attribute)."""
    owner: Any = _module(target.module)
    for part in target.name.split("."):
        owner = getattr(owner, part)
    return owner


def _probe_targets(targets: tuple[SwapTarget, ...]) -> None:
    for target in targets:
        owner, _, attribute = f"{target.module}.{target.name}".rpartition(".")
        try:
            value = _resolve(target)
        except AttributeError:
            raise SeamUnavailable(f"{owner} has no {attribute}") from None
        if target.kind in _MODULE_KINDS:
            if value is not sys.modules.get(target.kind) and not getattr(value, STAND_IN_MARK, False):
                raise SeamUnavailable(f"{target.module}.{target.name} is not the {target.kind} module")
            continue
        if not callable(value):
            raise SeamUnavailable(f"{target.module}.{target.name} is not callable")
        original = getattr(value, ORIGINAL_MARK, value)  # already swapped: check what we wrapped
        names = list(inspect.signature(original).parameters)
        if names != list(target.params):
            raise SeamUnavailable(f"{target.module}.{target.name} takes {names}, expected {list(target.params)}")


def _probe_accelerate() -> None:
    # Every target and fallback is checked before accelerate() swaps anything.
    _probe_targets((*(t for t in ACCELERATE_TARGETS if t.feature == "accelerate"), *ACCELERATE_FALLBACKS))
    # Model.count_tokens must look the estimate up by name at call time, or swapping it does nothing.
    count_tokens = _module("strands.models.model").Model.count_tokens
    code = getattr(count_tokens, "__code__", None)
    if code is None or "_estimate_tokens_with_heuristic" not in code.co_names:
        raise SeamUnavailable("Model.count_tokens no longer calls _estimate_tokens_with_heuristic")


def _uses(function: Any, what: str, names: tuple[str, ...] = (), consts: tuple[str, ...] = ()) -> None:
    code = getattr(getattr(function, ORIGINAL_MARK, function), "__code__", None)
    missing = [n for n in names if code is None or n not in code.co_names]
    missing += [c for c in consts if code is None or c not in code.co_consts]
    if missing:
        raise SeamUnavailable(f"{what} no longer uses {', '.join(map(str, missing))}")


_TRACER = "strands.telemetry.tracer"


def _probe_accelerate_turn() -> None:
    _probe_targets((*(t for t in ACCELERATE_TARGETS if t.feature == "accelerate-turn"), *ACCELERATE_TURN_FALLBACKS))
    # The copies go through the module's copy global, looked up at call time.
    loop = _module(_EVENT_LOOP)
    _uses(loop._handle_model_execution, "_handle_model_execution", ("copy", "deepcopy", "InvokeModelContext"))
    _uses(_module(_STREAMING)._normalize_messages, "_normalize_messages", ("copy", "deepcopy"))
    # The tracer's message events: what the replacement reproduces.
    tracer = _module(_TRACER)
    _uses(
        tracer.Tracer._add_event_messages,
        "Tracer._add_event_messages",
        (*_TRACER_METHODS, "serialize", "use_latest_genai_conventions", "_span_attributes_only"),
        ("gen_ai.output.messages", "gen_ai.input.messages", "assistant", "content"),
    )
    _uses(tracer.Tracer._get_event_name_for_message, "Tracer._get_event_name_for_message", (), ("toolResult",))
    _uses(tracer.serialize, "serialize", ("json", "dumps", "JSONEncoder"))
    _uses(tracer.JSONEncoder._process_value, "JSONEncoder._process_value", ("dumps",), ("<replaced>",))
    if not isinstance(getattr(_module("opentelemetry.trace"), "NonRecordingSpan", None), type):
        raise SeamUnavailable("opentelemetry.trace has no NonRecordingSpan class")


_OTEL_SDK_TRACE = "opentelemetry.sdk.trace"


def _probe_span_events() -> None:
    trace = _module(_OTEL_SDK_TRACE)
    bounded: Any = _module("opentelemetry.sdk.util").BoundedList
    span_class: Any = getattr(trace, "_Span", None)
    if not isinstance(span_class, type) or not issubclass(span_class, trace.Span):
        raise SeamUnavailable(f"{_OTEL_SDK_TRACE} has no _Span subclass of Span")
    _uses(trace.Span.add_event, "Span.add_event", ("_add_event", "Event", "BoundedAttributes"))
    # The events of a span made the usual way, and how the list drops the oldest.
    probe_list = bounded(2)
    for item in range(3):
        probe_list.append(item)
    if list(probe_list) != [1, 2] or probe_list.dropped != 1 or probe_list._dq.maxlen != 2:
        raise SeamUnavailable("BoundedList no longer keeps the last maxlen items and counts the dropped ones")
    provider = trace.TracerProvider()
    span: Any = provider.get_tracer("strands_offload.probe").start_span("probe")
    made_as_expected = type(span) is span_class and type(span.__dict__.get("_events")) is bounded
    span.end()
    provider.shutdown()
    if not made_as_expected:
        raise SeamUnavailable("Span no longer keeps its events in a BoundedList (_events)")


_TRACER_METHODS = ("_add_event", "_redact", "_get_event_name_for_message", "_map_content_blocks_to_otel_parts")

_CYCLE_SPAN_KEY = "event_loop_cycle_span"


def _probe_session_log() -> None:
    _has("strands.session.repository_session_manager", "RepositorySessionManager")
    init = _module("strands.agent.agent").Agent.__init__
    if "_session_manager" not in init.__code__.co_names:
        raise SeamUnavailable("Agent no longer keeps its session manager in _session_manager")


def _probe_agent_request() -> None:
    init = _module("strands.agent.agent").Agent.__init__
    if "_system_prompt_content" not in init.__code__.co_names:
        raise SeamUnavailable("Agent no longer keeps its system prompt blocks in _system_prompt_content")


def _probe_cache_strategy() -> None:
    bedrock = _module("strands.models.bedrock").BedrockModel
    if not isinstance(inspect.getattr_static(bedrock, "_cache_strategy", None), property):
        raise SeamUnavailable("BedrockModel no longer has a _cache_strategy property")


_PROJECTION_NAMES = ("_total_prompt_tokens", "count_tokens", "get_all_tool_specs", "_system_prompt_content")
_PROJECTION_KEYS = ("assistant", "metadata", "usage", "outputTokens")


def _probe_input_projection() -> None:
    estimate = _module("strands.event_loop.event_loop")._estimate_input_tokens
    code = estimate.__code__
    missing = [name for name in _PROJECTION_NAMES if name not in code.co_names]
    missing += [key for key in _PROJECTION_KEYS if key not in code.co_consts]
    if missing:
        raise SeamUnavailable(f"_estimate_input_tokens no longer reads {', '.join(missing)}")
    _params(estimate, "agent")
    _params(_module("strands.telemetry.metrics")._total_prompt_tokens, "usage")


def _probe_cycle_span() -> None:
    cycle = _module("strands.event_loop.event_loop").event_loop_cycle
    if _CYCLE_SPAN_KEY not in cycle.__code__.co_consts:
        raise SeamUnavailable(f"event_loop_cycle no longer stores {_CYCLE_SPAN_KEY!r} in the invocation state")


_METRICS_INTERNAL = "opentelemetry.metrics._internal"


def _probe_metrics_placeholder() -> None:
    placeholder = getattr(_module(_METRICS_INTERNAL), "_ProxyMeterProvider", None)
    if not isinstance(placeholder, type):
        raise SeamUnavailable(f"{_METRICS_INTERNAL} has no _ProxyMeterProvider class")


_MIDDLEWARE_FIELDS = ("agent", "tool_specs", "tool_choice", "invocation_state", "projected_input_tokens")


def _probe_model_input_middleware() -> None:
    import dataclasses

    stages = _module("strands.middleware.stages")
    fields = {field.name for field in dataclasses.fields(stages.InvokeModelContext)}
    missing = [name for name in _MIDDLEWARE_FIELDS if name not in fields]
    if missing:
        raise SeamUnavailable(f"InvokeModelContext has no {', '.join(missing)}")
    _params(stages.InvokeModelContext.replace, "tool_specs", "projected_input_tokens")
    if getattr(stages.InvokeModelStage, "Input", None) is None:
        raise SeamUnavailable("InvokeModelStage has no Input phase")
    _params(_module("strands.agent.agent").Agent.add_middleware, "stage_or_phase", "handler")
    request = _module("strands.event_loop.event_loop")._structured_output_request
    if "tool_specs" not in request.__code__.co_names:
        raise SeamUnavailable("_structured_output_request no longer sends the context's tool_specs")


_AGENTIC_NAMES = ("summarize_context", "truncate_context", "pin_context", "create_token_usage_middleware")

_PROBES: dict[str, Callable[[], None]] = {
    "storage-markers": _probe_storage_markers,
    "storage-views": _probe_storage_views,
    "agent-as-tool": _probe_agent_as_tool,
    "context-manager": _probe_context_manager,
    "re-parser": _probe_re_parser,
    "re-casefix": _probe_re_casefix,
    "accelerate": _probe_accelerate,
    "accelerate-turn": _probe_accelerate_turn,
    "span-events": _probe_span_events,
    "cycle-span": _probe_cycle_span,
    "session-log": _probe_session_log,
    "agent-request": _probe_agent_request,
    "cache-strategy": _probe_cache_strategy,
    "input-projection": _probe_input_projection,
    "model-input-middleware": _probe_model_input_middleware,
    "metrics-placeholder": _probe_metrics_placeholder,
}

# Features whose names live in strands-agents (version-dependent); the rest follow the interpreter.
_STRANDS_FEATURES = frozenset(
    {
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
)


def _whose(feature: str) -> str:
    """The package (and version) whose private names ``feature`` uses."""
    if feature in _STRANDS_FEATURES:
        return f"strands-agents {strands_version()}"
    if feature == "metrics-placeholder":
        return f"opentelemetry-api {_version_of('opentelemetry-api')}"
    if feature == "span-events":
        return f"opentelemetry-sdk {_version_of('opentelemetry-sdk')}"
    return f"Python {sys.version.split()[0]}"


def _version_of(package: str) -> str:
    try:
        return version(package)
    except PackageNotFoundError:  # pragma: no cover - a vendored or source install
        return "unknown"


@functools.cache
def probe(feature: str) -> str | None:
    """Check ``feature`` once; return why it is unusable, or ``None`` when it can be used."""
    check = _PROBES[feature]
    try:
        check()
    except (ImportError, AttributeError, TypeError, ValueError, SeamUnavailable) as error:
        reason = str(error) or type(error).__name__
    else:
        return None
    where = _whose(feature)
    message = (
        f"strands_offload: {feature} is unavailable on {where} ({reason}); "
        f"tested with strands-agents {', '.join(sorted(TESTED_STRANDS_VERSIONS))}"
    )
    warnings.warn(message, RuntimeWarning, stacklevel=3)
    logger.warning("feature=<%s>, reason=<%s> | private names unavailable, falling back", feature, reason)
    return reason


def available(feature: str) -> bool:
    """Whether ``feature`` passed its probe (warns once when it did not).

    Tested versions are probed too: the check is cheap and a patched or vendored copy may differ.
    """
    return probe(feature) is None


def require(feature: str) -> None:
    """Raise :class:`SeamUnavailable` when ``feature`` failed its probe."""
    reason = probe(feature)
    if reason is not None:
        raise SeamUnavailable(f"{feature} is unavailable on strands-agents {strands_version()}: {reason}")


# ---------------------------------------------------------------------------- strands-agents

_OWN_NAMESPACED = object()
_OWN_EPHEMERAL = object()


@functools.cache
def storage_markers() -> tuple[object, object]:
    """The SDK's ``(_NAMESPACED, _EPHEMERAL)`` sentinels; our own objects when they are gone."""
    if not available("storage-markers"):
        return _OWN_NAMESPACED, _OWN_EPHEMERAL
    module = _module("strands.storage.storage")
    return module._NAMESPACED, module._EPHEMERAL


def sdk_search_strategy(storage: object) -> object | None:
    """The search strategy of a storage built like the SDK's backends, or ``None``.

    Reads the private ``_search_strategy`` the SDK's backends (and storage modelled on them) keep;
    ``None`` when there is none or ``storage-views`` failed its probe.
    """
    if not available("storage-views"):
        return None
    return getattr(storage, "_search_strategy", None)


def sdk_wrapped_storage(storage: object) -> object | None:
    """The storage a view built like the SDK's namespaced view wraps (its ``_storage``), or ``None``."""
    if not available("storage-views"):
        return None
    return getattr(storage, "_storage", None)


def is_delegating_agent_tool(tool: object) -> bool:
    """Whether ``tool`` is an agent wrapped as a tool whose result is the final answer."""
    if not available("agent-as-tool"):
        return False
    cls = _module("strands.agent._agent_as_tool")._AgentAsTool
    return isinstance(tool, cls) and bool(tool.delegate)


def cycle_span(invocation_state: Any) -> Any:
    """The span of the event-loop cycle an invocation state belongs to, or ``None``.

    Without the probe (another SDK version) the ledger's spans take the current context instead.
    """
    if not invocation_state or not available("cycle-span"):
        return None
    span = invocation_state.get(_CYCLE_SPAN_KEY)
    return span if isinstance(span, _module("opentelemetry.trace").Span) else None


def message_log_session_manager(agent: Any) -> Any:
    """The agent's session manager when it keeps a message log, else ``None``.

    Message-log managers are ``RepositorySessionManager`` and its subclasses (file, S3, AgentCore
    memory); ``None`` also for no session manager, a snapshot one, or an SDK whose agent no longer
    shows it.
    """
    if not available("session-log"):
        return None
    manager = getattr(agent, "_session_manager", None)
    log_class = _module("strands.session.repository_session_manager").RepositorySessionManager
    return manager if isinstance(manager, log_class) else None


def system_prompt_content(agent: Any) -> Any:
    """The system prompt blocks the agent's requests carry (``None``: none, or the probe failed).

    Raises:
        SeamUnavailable: When the probe failed: a request without them would not share the agent's prefix.
    """
    require("agent-request")
    return agent._system_prompt_content


async def projected_input_tokens(agent: Any, messages: list[Any] | None = None) -> int:
    """The input tokens the event loop projects for a request of ``agent`` holding ``messages``.

    ``messages`` defaults to the agent's. The rule is the event loop's: the prompt and output tokens
    the last assistant message with usage reported (which counted the system prompt and tool specs)
    plus the model's count of the messages after it; with no usage yet, the model's count of the
    whole request. When the probe failed, always the whole request's count (system prompt as text).
    """
    messages = agent.messages if messages is None else messages
    model = agent.model
    if available("input-projection"):
        for index in range(len(messages) - 1, -1, -1):
            message = messages[index]
            usage = message.get("metadata", {}).get("usage") if message.get("role") == "assistant" else None
            if usage:
                total = _module("strands.telemetry.metrics")._total_prompt_tokens
                baseline = int(total(usage)) + int(usage["outputTokens"])
                after = messages[index + 1 :]
                return baseline + int(await model.count_tokens(after)) if after else baseline
        content = agent._system_prompt_content
    else:
        content = None
    specs = agent.tool_registry.get_all_tool_specs()
    return int(
        await model.count_tokens(
            messages, tool_specs=specs, system_prompt=agent.system_prompt, system_prompt_content=content
        )
    )


#: What :func:`places_cache_points` answers when it cannot tell.
UNKNOWN = object()


def places_cache_points(model: Any) -> Any:
    """Whether a Bedrock model's ``cache_config`` really places cache points.

    ``True`` or ``False``; :data:`UNKNOWN` for other models and when the probe failed (callers then
    trust the config).
    """
    bedrock = sys.modules.get("strands.models.bedrock")
    if bedrock is None or not isinstance(model, bedrock.BedrockModel) or not available("cache-strategy"):
        return UNKNOWN
    try:
        return model._cache_strategy is not None
    except Exception:
        return UNKNOWN


def global_metrics_unset() -> bool:
    """Whether no global meter provider has been set yet (the API's stand-in is still in place).

    ``False`` when the probe fails: the ledger then always makes its metrics.
    """
    placeholder = _metrics_placeholder()
    return placeholder is not None and isinstance(_module("opentelemetry.metrics").get_meter_provider(), placeholder)


@functools.cache
def _metrics_placeholder() -> type | None:
    # Asked before every model call: the probe and the lookup are made once.
    return _module(_METRICS_INTERNAL)._ProxyMeterProvider if available("metrics-placeholder") else None


def reference_context_manager_class() -> type[Any]:
    """The SDK's public ``ContextManager`` class (the Agent accepts only its instances)."""
    require("context-manager")
    return _module("strands.experimental.context_manager").ContextManager  # type: ignore[no-any-return]


def agentic_tools() -> list[Any]:
    """The SDK's model-driven context tools: ``summarize_context``, ``truncate_context``, ``pin_context``."""
    require("context-manager")
    module = _module("strands._context_manager.modes.agentic.agentic_context")
    return [module.summarize_context, module.truncate_context, module.pin_context]


def sdk_truncate_preview() -> Callable[..., str]:
    """The SDK's truncate-method preview builder (``_build_preview``), which the benchmarks compare with."""
    require("context-manager")
    return _module("strands._context_manager.methods.truncate")._build_preview  # type: ignore[no-any-return]


def token_usage_middleware() -> Any:
    """A fresh instance of the SDK's token-usage middleware of the agentic mode."""
    require("context-manager")
    return _module("strands._context_manager.modes.agentic.agentic_context").create_token_usage_middleware()


def add_model_input_middleware(agent: Any, handler: Callable[[Any], Any]) -> bool:
    """Register ``handler`` as an ``InvokeModelStage.Input`` middleware of ``agent``.

    ``False`` (nothing registered) when ``model-input-middleware`` failed its probe.
    """
    if not available("model-input-middleware"):
        return False
    agent.add_middleware(_module("strands.middleware.stages").InvokeModelStage.Input, handler)
    return True


# ---------------------------------------------------------------------------- accelerate()

#: Attribute set on the ``json`` stand-ins accelerate() installs (a probe after a swap accepts them).
STAND_IN_MARK = "__strands_offload_stand_in__"
#: Attribute of a replacement function naming the SDK function it replaced.
ORIGINAL_MARK = "__wrapped__"


@dataclass(frozen=True)
class SwapTarget:
    """One module attribute of strands-agents that accelerate() reads or replaces.

    Attributes:
        module: Dotted module name.
        name: Attribute of that module (``Class.attribute`` for a method).
        kind: ``"function"`` (probed for its parameter names), ``"json"`` or ``"copy"`` (the module's
            ``json`` / ``copy`` global).
        params: The function's parameter names, in order.
        feature: The seam feature whose probe checks it.
    """

    module: str
    name: str
    kind: str = "function"
    params: tuple[str, ...] = ()
    feature: str = "accelerate"

    @property
    def dotted(self) -> str:
        """``module.name``, for logs and messages."""
        return f"{self.module}.{self.name}"


#: Target kinds that are a module global standing for a whole module (accelerate() puts a stand-in there).
_MODULE_KINDS = ("json", "copy")

_SEARCH = ("text", "pattern", "line_range", "context_lines", "max_chars")
_OFFLOADER = "strands.vended_plugins.context_offloader"
_CM = "strands._context_manager"
_MODEL = "strands.models.model"
_EVENT_LOOP = "strands.event_loop.event_loop"
_STREAMING = "strands.event_loop.streaming"

#: Everything accelerate() swaps: the offloader's search where it is defined and where two modules
#: copied it at import, the ``json`` globals of the modules that dump JSON on the hot path, the stash
#: encoder and the base model's heuristic estimate (which ``Model.count_tokens`` calls).
ACCELERATE_TARGETS: tuple[SwapTarget, ...] = (
    SwapTarget(f"{_OFFLOADER}.search", "_search_content", params=_SEARCH),
    SwapTarget(f"{_OFFLOADER}.plugin", "_search_content", params=_SEARCH),
    SwapTarget(f"{_CM}.retrieval_tool", "_search_content", params=_SEARCH),
    SwapTarget(f"{_OFFLOADER}.plugin", "json", "json"),
    SwapTarget(f"{_CM}.stash", "json", "json"),
    SwapTarget(f"{_CM}.retrieval_tool", "json", "json"),
    SwapTarget(f"{_CM}.methods.truncate", "json", "json"),
    SwapTarget(f"{_CM}.methods.summarize", "json", "json"),
    SwapTarget(f"{_CM}.stash", "_encode", params=("value",)),
    SwapTarget(
        _MODEL,
        "_estimate_tokens_with_heuristic",
        params=("messages", "tool_specs", "system_prompt", "system_prompt_content"),
    ),
    SwapTarget(_EVENT_LOOP, "copy", "copy", feature="accelerate-turn"),
    SwapTarget(_STREAMING, "copy", "copy", feature="accelerate-turn"),
    SwapTarget(_TRACER, "Tracer._add_event_messages", params=("self", "span", "messages"), feature="accelerate-turn"),
)

#: SDK functions the replacements hand unusual inputs to (read, never swapped).
ACCELERATE_FALLBACKS: tuple[SwapTarget, ...] = (
    SwapTarget(_MODEL, "_count_content_block_tokens", params=("block", "count_text", "count_json")),
    SwapTarget(_MODEL, "_heuristic_estimate_text", params=("text",)),
    SwapTarget(_MODEL, "_heuristic_estimate_json", params=("obj",)),
)


#: What the replacement of ``Tracer._add_event_messages`` relies on (read, never swapped).
ACCELERATE_TURN_FALLBACKS: tuple[SwapTarget, ...] = (
    SwapTarget(_TRACER, "serialize", params=("obj",), feature="accelerate-turn"),
    SwapTarget(
        _TRACER,
        "Tracer._add_event",
        params=("self", "span", "event_name", "event_attributes", "to_span_attributes"),
        feature="accelerate-turn",
    ),
    SwapTarget(_TRACER, "Tracer._redact", params=("self", "attribute_name", "value"), feature="accelerate-turn"),
    SwapTarget(_TRACER, "Tracer._get_event_name_for_message", params=("self", "message"), feature="accelerate-turn"),
    SwapTarget(
        _TRACER,
        "Tracer._map_content_blocks_to_otel_parts",
        params=("self", "content_blocks"),
        feature="accelerate-turn",
    ),
)


def swap_get(target: SwapTarget) -> Any:
    """The current value of ``target`` (raises :class:`SeamUnavailable` when its feature failed its probe)."""
    require(target.feature)
    return _resolve(target)


def swap_set(target: SwapTarget, value: Any) -> None:
    """Set ``target`` to ``value`` (raises :class:`SeamUnavailable` when its feature failed its probe)."""
    require(target.feature)
    owner, _, attribute = target.name.rpartition(".")
    setattr(_resolve(SwapTarget(target.module, owner)) if owner else _module(target.module), attribute, value)


def accelerate_fallback(name: str) -> Any:
    """One of :data:`ACCELERATE_FALLBACKS` or :data:`ACCELERATE_TURN_FALLBACKS` by attribute name."""
    target = next(t for t in (*ACCELERATE_FALLBACKS, *ACCELERATE_TURN_FALLBACKS) if t.name == name)
    return swap_get(target)


def tracer_module() -> ModuleType:
    """``strands.telemetry.tracer`` (whose ``serialize``, ``JSONEncoder`` and ``json`` the span replacement checks)."""
    require("accelerate-turn")
    return _module(_TRACER)


def span_event_room(span: Any) -> int | None:
    """How many events ``span`` keeps, when it is the OpenTelemetry SDK's own recording span.

    ``None`` for any other span (or an ended one, or when ``span-events`` failed its probe): every
    event must then be added. The SDK span keeps the last that many events and counts the rest as
    dropped (see :func:`count_dropped_events`).
    """
    classes = _span_classes()
    if classes is None:
        return None
    span_class, span_base, bounded = classes
    if type(span) is not span_class or getattr(span_class, "add_event", None) is not getattr(span_base, "add_event", 0):
        return None
    events: Any = span.__dict__.get("_events")
    if type(events) is not bounded or span.__dict__.get("_end_time") is not None:
        return None
    room = events._dq.maxlen
    return room if type(room) is int and room > 0 else None


def count_dropped_events(span: Any, count: int) -> None:
    """Count ``count`` more events as dropped by ``span`` (one :func:`span_event_room` accepted)."""
    events = span._events
    with events._lock:
        events.dropped += count


@functools.cache
def _span_classes() -> tuple[Any, Any, Any] | None:
    if not available("span-events"):
        return None
    trace = _module(_OTEL_SDK_TRACE)
    return trace._Span, trace.Span, _module("opentelemetry.sdk.util").BoundedList


def tracer_rules() -> tuple[Any, ...]:
    """What the tracer's ``serialize`` is made of, as it is now (compared with the known objects per call).

    ``serialize`` itself, its encoder class with the encoder's ``encode`` and per-value probe
    ``_process_value``, and the ``json`` module the tracer module uses.
    """
    tracer = _module(_TRACER)
    encoder = tracer.JSONEncoder
    return tracer.serialize, encoder, encoder.encode, encoder._process_value, tracer.json


def tracer_methods(tracer: Any) -> tuple[Any, ...] | None:
    """The tracer methods the message events go through, as ``tracer`` has them now.

    ``(_add_event, _redact, _get_event_name_for_message, _map_content_blocks_to_otel_parts)`` of its
    class, or ``None`` when the instance shadows one of them with its own attribute.
    """
    own = getattr(tracer, "__dict__", {})
    if any(name in own for name in _TRACER_METHODS):
        return None
    cls = type(tracer)
    return tuple(getattr(cls, name, None) for name in _TRACER_METHODS)


def tracer_attributes_only(tracer: Any) -> bool:
    """Whether ``tracer`` records the aggregated message content as span attributes, not events."""
    return bool(tracer._span_attributes_only)


def non_recording_span_class() -> type:
    """OpenTelemetry's span that records nothing (``opentelemetry.trace.NonRecordingSpan``)."""
    require("accelerate-turn")
    cls: type = _module("opentelemetry.trace").NonRecordingSpan
    return cls


# ---------------------------------------------------------------------------- Python's re


@functools.cache
def re_parser() -> ModuleType:
    """The regular-expression parser module of the running interpreter."""
    try:
        return _module("re._parser")
    except ImportError:  # Python 3.10
        return _module("sre_parse")


@functools.cache
def re_constants() -> ModuleType:
    """The regular-expression constants module of the running interpreter."""
    try:
        return _module("re._constants")
    except ImportError:  # Python 3.10
        return _module("sre_constants")


@functools.cache
def re_extra_cases() -> dict[int, tuple[int, ...]]:
    """Code points that ``re`` folds together beyond ``str.lower`` (empty when Python has none)."""
    try:
        return _module("re._casefix")._EXTRA_CASES  # type: ignore[no-any-return]
    except ImportError:  # Python 3.10 keeps the table in sre_compile
        table: dict[int, tuple[int, ...]] = getattr(_module("sre_compile"), "_ignorecase_fixes", {})
        return table
