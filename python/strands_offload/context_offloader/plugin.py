"""The ``ContextOffloader`` plugin: keep oversized tool results out of the context window.

A tool result whose estimated size passes ``max_result_tokens`` is written to
storage block by block; the conversation gets a notice with a preview and one
reference per stored block, and the model can grep or page the stored copy with
the ``retrieve_offloaded_content`` tool. Behaviour, formats and defaults follow
``strands.vended_plugins.context_offloader`` (strands-agents 1.62.0); the JSON
text, the grep and the line pages run in the native core.

Options the reference does not have are keyword-only:

- ``tokenizer``: ``"cl100k_base"`` / ``"o200k_base"`` count and cut previews with
  exact BPE; ``"auto"`` picks the encoding of an OpenAI model and otherwise keeps
  the default (the model's ``count_tokens`` and chars/4 previews).
- ``json_queries``: the retrieval tool also takes ``query``, a JSONPath subset
  evaluated on stored JSON.
- ``opaque_references``: the model only ever sees random handles, never storage
  keys, paths or bucket names, not even in error messages. With unified storage the
  handle table is kept in the storage, bound to the agent id and the namespace, so a
  restarted plugin resolves the handles of an earlier run (see ``_handles``).
- ``telemetry`` (on by default; changes no output), ``meter_provider``, ``tracer_provider``: what
  was offloaded and retrieved goes out as OpenTelemetry metrics and spans and adds up in
  :meth:`ContextOffloader.savings` (see ``_ledger``).

- ``preview="shape"``: a JSON, CSV/TSV or log result is previewed as its shape (skeleton, counts,
  edge rows, warning/error lines), each part with its line number and, for JSON, its JSONPath;
  other results keep the reference's head preview (see ``strands_offload._shape``).

A tool can keep its own result from being offloaded with :func:`skip_offload`.
"""

from __future__ import annotations

import inspect
import logging
import time
import uuid
from collections.abc import Awaitable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol, cast

from strands.hooks.events import AfterToolCallEvent, BeforeModelCallEvent
from strands.plugins import Plugin, hook
from strands.tools.decorator import tool
from strands.types.tools import ToolContext, ToolResult, ToolResultContent
from typing_extensions import TypedDict

from .. import _native, _seam
from .._heuristic import CHARS_PER_TOKEN, block_tokens, counter_for, sdk_walk_tokens, uses_base_heuristic
from .._index_cache import IndexCache
from .._jsonpath import json_query
from .._ledger import Ledger, NativeClock, counter_name, now_ns
from .._ledger import ToolCall as LedgerCall
from .._native import BlockMeter, TokenCounter, token_counter
from .._shape import shape_within
from ..context_manager import _media
from ..storage.storage import _NamespacedStorage, is_namespaced
from ..telemetry import Savings
from ._backend import is_legacy_storage, retrieve_blob, store_blob
from ._content import decode_full_content
from ._eviction import PerAgent, UseRecord
from ._frame import UnreadableEntryError, frame_prefix, write_frame
from ._handles import HandleTable, is_reserved
from .search import _is_searchable_content, _search_content
from .storage import InMemoryStorage

if TYPE_CHECKING:
    from strands.agent.agent import Agent

logger = logging.getLogger(__name__)

_TOOL_NAME = "retrieve_offloaded_content"
_PREVIEWS = ("head", "shape")
_TOKENIZERS = ("cl100k_base", "o200k_base", "auto")

SKIP_OFFLOAD_KEY = "strands_offload.skip_tool_use_ids"
"""Invocation-state key holding the toolUseIds whose results must stay in context."""


def skip_offload(tool_context: ToolContext) -> None:
    """Mark the calling tool's result as never to be offloaded.

    The invocation state is shared by every tool call of one invocation, so the
    mark names this call's ``toolUseId``; other calls are unaffected.
    """
    marks = tool_context.invocation_state.setdefault(SKIP_OFFLOAD_KEY, set())
    marks.add(tool_context.tool_use["toolUseId"])


def _skip_requested(invocation_state: dict[str, Any], tool_use_id: str) -> bool:
    marks = invocation_state.get(SKIP_OFFLOAD_KEY)
    if marks is None:
        return False
    if isinstance(marks, str):
        return marks == tool_use_id
    return tool_use_id in marks


class LineRange(TypedDict):
    """Lines to read, 1-indexed, both ends included."""

    start: int
    end: int


class ShouldOffload(Protocol):
    """Decides per call whether an oversized result is offloaded (may be async)."""

    def __call__(self, tool_name: str, token_count: int, **kwargs: Any) -> bool | Awaitable[bool]:
        """Return True to offload, False to keep the result in the conversation.

        Args:
            tool_name: The tool that produced the result ("" when unnamed).
            token_count: The estimate that exceeded the threshold.
            **kwargs: Room for future arguments; accept and ignore them.
        """
        ...


@dataclass
class _StoredBlock:
    reference: str
    content_type: str
    description: str
    size: int = 0


@dataclass
class OffloadedContent:
    """What :meth:`ContextOffloader.offload` stored and what to show in its place.

    Attributes:
        notice: The text that replaces the content (header, guidance, preview, references).
        references: One reference per stored block, in block order.
        content: The notice block followed by the placeholders of non-text blocks.
    """

    notice: str
    references: list[str]
    content: list[ToolResultContent] = field(default_factory=list)


class ContextOffloader(Plugin):
    """Offload oversized tool results to storage and let the model search them.

    Args:
        storage: A unified ``Storage``, a legacy offloader ``Storage`` or None
            (use the agent's ``storage``, else a legacy ``InMemoryStorage``).
        max_result_tokens: Results estimated above this many tokens are offloaded.
        preview_tokens: Size of the preview left in the conversation, in tokens.
        include_retrieval_tool: Register ``retrieve_offloaded_content``.
        should_offload: Optional callback consulted once a result is over the threshold.
        evict_after_cycles: Delete what was stored (unified storage) this many agent
            cycles after it was last stored or retrieved; None keeps it.
        tokenizer: None (the model's own estimate), ``"cl100k_base"``, ``"o200k_base"``
            or ``"auto"``.
        json_queries: Let the retrieval tool evaluate a ``query`` on stored JSON.
        opaque_references: Show the model random handles instead of storage references, in
            notices and in every error it can see.
        telemetry: Record offloads and retrievals as OpenTelemetry metrics and spans and in
            :meth:`savings`; ``False`` records nothing.
        meter_provider: The OpenTelemetry meter provider to use (default: the global one).
        tracer_provider: The OpenTelemetry tracer provider to use (default: the global one).
        media_tokens: ``"auto"``, ``"anthropic"``, ``"openai"`` or ``"gemini"``: the notice's
            ``~N tokens`` and the ledger count a result's images and documents as the provider
            bills them (see ``docs/design/media-tokens.md``). Whether to offload is still decided
            on the text alone: an agent does not lose its screenshots because they are large.
        preview: ``"head"`` (the reference's preview: the first ``preview_tokens``) or ``"shape"``:
            a one-block JSON, CSV/TSV or log result is previewed as its shape, each part with the
            line (for ``line_range``) and, for JSON, the JSONPath (for ``query``) it starts at;
            other results keep the head preview.

    Raises:
        ValueError: On an invalid threshold, preview size, eviction setting, tokenizer, media_tokens
            or preview.
    """

    name = "context_offloader"

    def __init__(
        self,
        storage: Any = None,
        max_result_tokens: int = 2_500,
        preview_tokens: int = 1_000,
        *,
        should_offload: ShouldOffload | None = None,
        include_retrieval_tool: bool = True,
        evict_after_cycles: int | None = 20,
        tokenizer: str | None = None,
        json_queries: bool = False,
        opaque_references: bool = False,
        telemetry: bool = True,
        meter_provider: Any = None,
        tracer_provider: Any = None,
        media_tokens: str | None = None,
        preview: str = "head",
    ) -> None:
        _validate(max_result_tokens, preview_tokens, evict_after_cycles, tokenizer)
        if preview not in _PREVIEWS:
            raise ValueError(f"preview must be one of {', '.join(_PREVIEWS)}, got {preview!r}")
        self._preview_mode = preview
        self._media_tokens = _media.check_option(media_tokens)
        self._ledger = Ledger(enabled=telemetry, meter_provider=meter_provider, tracer_provider=tracer_provider)
        self._max_result_tokens, self._preview_tokens = max_result_tokens, preview_tokens
        self._include_retrieval_tool, self._should_offload = include_retrieval_tool, should_offload
        self._evict_after_cycles, self._tokenizer = evict_after_cycles, tokenizer
        self._json_queries, self._opaque_references = json_queries, opaque_references
        self._storage: Any = None if storage is None else self._scope(storage)
        # Per-agent state dies with its agent: bound storage, uses for eviction, handle table.
        self._bound: PerAgent[Any] = PerAgent(lambda agent: self._require_storage().for_sandbox(agent.sandbox))
        self._uses = UseRecord()
        self._handles: PerAgent[HandleTable] = PerAgent(
            lambda agent: HandleTable(
                self._storage_for_agent(agent), str(getattr(agent, "agent_id", None) or "default")
            )
        )
        self._indexes: IndexCache[_native.TextIndex] = IndexCache()
        # The retrieval tool has two variants (with and without ``query``); the options pick one here.
        # Setting the list first keeps the base class from discovering both.
        self._tools = [self._retrieve_with_query if json_queries else self.retrieve_offloaded_content]
        super().__init__()

    def savings(self, agent: Agent | None = None) -> Savings:
        """What this plugin kept out of context and read back, for ``agent`` or (``None``) every agent."""
        return self._ledger.savings(agent)

    # ------------------------------------------------------------------ storage binding

    @staticmethod
    def _scope(storage: Any) -> Any:
        """Give unified storage its ``offloader`` namespace unless it is already scoped."""
        if is_legacy_storage(storage) or is_namespaced(storage):
            return storage
        return _NamespacedStorage(storage, "offloader")

    def _require_storage(self) -> Any:
        if self._storage is None:
            raise RuntimeError("ContextOffloader storage not initialized; call init_agent first")
        return self._storage

    def _storage_for_agent(self, agent: Agent) -> Any:
        root = self._require_storage()
        # Storage that can follow an agent's sandbox is bound once per agent; the rest is shared.
        return self._bound.get(agent) if hasattr(root, "for_sandbox") else root

    def init_agent(self, agent: Agent) -> None:
        """Resolve and bind storage for ``agent``; drop the retrieval tool when disabled."""
        if self._storage is None:
            fallback = agent.storage
            self._storage = InMemoryStorage() if fallback is None else self._scope(fallback)
        legacy_memory = self._storage if isinstance(self._storage, InMemoryStorage) else None
        if legacy_memory is not None:
            legacy_memory.bind_agent(id(agent))  # refuses a second agent
        self._storage_for_agent(agent)
        if self._include_retrieval_tool:
            return
        self._tools = [t for t in self._tools if t.tool_name != _TOOL_NAME]

    # ------------------------------------------------------------------ eviction

    @hook  # type: ignore[call-overload]  # the decorator's overloads do not accept bound async methods
    async def _on_before_model_call(self, event: BeforeModelCallEvent) -> None:
        """Evict what this agent stored too many cycles ago."""
        root = self._storage
        cycle = event.agent.event_loop_metrics.cycle_count
        if isinstance(root, InMemoryStorage):
            root.advance_cycle(cycle)  # the legacy in-memory store applies its own age limit
            return
        if root is None or self._evict_after_cycles is None or is_legacy_storage(root):
            return
        stale = self._uses.stale(event.agent, cycle, self._evict_after_cycles)
        if not stale:
            return
        storage = self._storage_for_agent(event.agent)
        removed: list[str] = []
        for reference in stale:
            try:
                await storage.delete(reference)
            except Exception:
                logger.debug("key=<%s> | eviction failed, will retry next cycle", reference)
                continue
            self._indexes.forget(reference)
            removed.append(reference)
        if not removed:
            return
        self._uses.forget(event.agent, removed)
        logger.debug("evicted=<%d>, cycle=<%d> | stale offloaded entries deleted", len(removed), cycle)
        if self._opaque_references:
            try:
                await self._table(event.agent).drop(removed)
            except Exception:
                # The stored table keeps handles of deleted entries; they resolve to "not found".
                logger.warning(
                    "evicted=<%d> | could not drop their handles from the table", len(removed), exc_info=True
                )

    def _track(self, agent: Agent, reference: str, cycle: int) -> None:
        if self._storage is None or is_legacy_storage(self._storage):
            return
        self._uses.touch(agent, reference, cycle)

    # ------------------------------------------------------------------ references shown to the model

    def _table(self, agent: Agent) -> HandleTable:
        return self._handles.get(agent)

    async def _resolve(self, agent: Agent, shown: str) -> str:
        """The storage reference the model means by ``shown``.

        Raises:
            ValueError: ``reference not found: {shown}`` for an unknown handle or a handle table's
                key; any other failure is reported naming ``shown`` only.
        """
        if not self._opaque_references:
            reference: str | None = shown
        else:
            try:
                reference = await self._table(agent).resolve(shown)
            except Exception as error:
                raise self._unreachable(shown, error) from None
        if reference is None or is_reserved(reference):
            raise ValueError(f"reference not found: {shown}")
        return reference

    def _unreachable(self, handle: str, error: Exception) -> ValueError:
        """An error for the model about ``handle`` whose text cannot name a key, path or bucket.

        The storage's own message (which may name them) goes to the log, for the operator.
        """
        if isinstance(error, UnreadableEntryError):
            return ValueError(f"Stored entry '{handle}' is unreadable: {error.reason}")
        logger.warning("handle=<%s> | storage failed while resolving or reading it", handle, exc_info=error)
        return ValueError(f"Stored entry '{handle}' could not be read from storage ({type(error).__name__})")

    # ------------------------------------------------------------------ the retrieval tool

    @tool(context=True)
    async def retrieve_offloaded_content(
        self,
        reference: str,
        pattern: str | None = None,
        line_range: LineRange | None = None,
        context_lines: int | None = None,
        *,
        tool_context: ToolContext,
    ) -> dict[str, Any] | str:
        """Read back a tool result that was moved out of the conversation because of its size.

        An offloaded result left a preview and one reference per stored block in the
        conversation. Pass such a reference here.

        Modes:
          - pattern: only the lines matching it, each with surrounding context lines.
          - line_range: exactly those lines, numbered.
          - neither: the whole stored content. This puts every token back into the
            conversation, so prefer the preview, a pattern or a range.

        Notes:
          - pattern, line_range and context_lines apply to text content only; leave them
            out for images, documents and other binary content.
          - Line numbers start at 1 and can be reused in a later line_range call.
          - Each retrieval counts as a fresh use, so content you keep reading is not
            evicted while you still need it.

        Examples:
          {"reference": "ref_1", "pattern": "error"} -> lines with "error", 5 lines of context
          {"reference": "ref_1", "pattern": "error|warning", "context_lines": 3} -> regex, 3 context lines
          {"reference": "ref_1", "line_range": {"start": 10, "end": 25}} -> lines 10 to 25
          {"reference": "ref_1", "pattern": "TODO", "line_range": {"start": 1, "end": 50}} -> search lines 1-50

        Args:
            reference: A reference listed in the offload notice (for example "mem_1_tool-123_0").
            pattern: Regular expression or plain keyword to search for; returns matching lines
                with context instead of the whole content.
            line_range: Object with 1-indexed 'start' and 'end' lines to return; with a pattern,
                limits the search to those lines.
            context_lines: Lines shown before and after each match, like grep -C (default 5).
                Alone, returns the first N lines.
            tool_context: Supplied by the framework.
        """
        return await self._retrieve_recorded(tool_context, reference, pattern, line_range, context_lines, None)

    @tool(name=_TOOL_NAME, context=True)
    async def _retrieve_with_query(
        self,
        reference: str,
        pattern: str | None = None,
        line_range: LineRange | None = None,
        context_lines: int | None = None,
        query: str | None = None,
        *,
        tool_context: ToolContext,
    ) -> dict[str, Any] | str:
        """Read back a tool result that was moved out of the conversation because of its size.

        An offloaded result left a preview and one reference per stored block in the
        conversation. Pass such a reference here.

        Modes:
          - query: for stored JSON, the values a JSONPath expression selects, such as
            "$.items[3].name", "$.items[*].id", "$..error" or "$.items[?(@.status == 'failed')].id";
            the cheapest way into large JSON.
          - pattern: only the lines matching it, each with surrounding context lines.
          - line_range: exactly those lines, numbered.
          - none of them: the whole stored content. This puts every token back into the
            conversation, so prefer the preview, a query, a pattern or a range.

        Notes:
          - pattern, line_range and context_lines apply to text content only; query to JSON only.
          - Line numbers start at 1 and can be reused in a later line_range call.
          - Each retrieval counts as a fresh use, so content you keep reading is not
            evicted while you still need it.

        Examples:
          {"reference": "ref_1", "query": "$.items[0:3]"} -> the first three items
          {"reference": "ref_1", "pattern": "error", "context_lines": 3} -> lines with "error"
          {"reference": "ref_1", "line_range": {"start": 10, "end": 25}} -> lines 10 to 25

        Args:
            reference: A reference listed in the offload notice (for example "mem_1_tool-123_0").
            pattern: Regular expression or plain keyword to search for.
            line_range: Object with 1-indexed 'start' and 'end' lines to return.
            context_lines: Lines shown before and after each match (default 5).
            query: JSONPath expression evaluated on stored JSON content.
            tool_context: Supplied by the framework.
        """
        return await self._retrieve_recorded(tool_context, reference, pattern, line_range, context_lines, query)

    async def _retrieve_recorded(
        self,
        tool_context: ToolContext,
        shown: str,
        pattern: str | None,
        line_range: LineRange | None,
        context_lines: int | None,
        query: str | None,
    ) -> dict[str, Any] | str:
        """``_retrieve``, with the call and its outcome recorded in the ledger."""
        agent = tool_context.agent
        if not self._ledger.enabled:
            return await self._retrieve(agent, shown, pattern, line_range, context_lines, query)
        started = now_ns()
        timing = NativeClock()
        mode = _retrieval_mode(pattern, line_range, context_lines, query)
        error_type: str | None = None
        answer: dict[str, Any] | str | None = None
        try:
            answer = await self._retrieve(agent, shown, pattern, line_range, context_lines, query, timing)
            outcome = "ok"
            return answer
        except ValueError as error:
            outcome = "not_found" if str(error).startswith("reference not found") else "refused"
            error_type = type(error).__name__
            raise
        except Exception as error:
            outcome, error_type = "error", type(error).__name__
            raise
        finally:
            # The reference reads only the agent from the context: a caller may pass no more than that.
            call = getattr(tool_context, "tool_use", None)
            call_id = str(call.get("toolUseId", "")) if isinstance(call, dict) else ""
            try:
                self._ledger.refresh()
                counter = self._encoding(agent) or token_counter("heuristic")
                tokens = _answer_tokens(answer, counter) if answer is not None else 0
                self._ledger.retrieval(
                    LedgerCall(agent, getattr(tool_context, "invocation_state", None), started, _TOOL_NAME, call_id),
                    mode=mode,
                    outcome=outcome,
                    counter=counter.name,
                    tokens=tokens,
                    native_seconds=timing.seconds,
                    error_type=error_type,
                )
            except Exception:
                # The ledger never changes what the model gets, not even when it fails.
                logger.warning("tool_use_id=<%s> | recording the retrieval failed", call_id, exc_info=True)

    async def _retrieve(
        self,
        agent: Agent,
        shown: str,
        pattern: str | None,
        line_range: LineRange | None,
        context_lines: int | None,
        query: str | None,
        timing: NativeClock | None = None,
    ) -> dict[str, Any] | str:
        timing = timing or NativeClock()
        reference = await self._resolve(agent, shown)
        storage = self._storage_for_agent(agent)
        try:
            blob = await retrieve_blob(storage, reference)
        except KeyError as error:
            raise ValueError(f"reference not found: {shown}") from error
        except Exception as error:
            if not self._opaque_references:
                raise
            raise self._unreachable(shown, error) from None
        self._track(agent, reference, agent.event_loop_metrics.cycle_count)

        content_type = blob.content_type
        if query is not None:
            if content_type != "application/json":
                raise ValueError(f"query works on JSON content only; this reference holds {content_type}")
            with timing:
                return json_query(blob.content, query, max_chars=self._max_result_tokens * CHARS_PER_TOKEN)

        if pattern is None and line_range is None and context_lines is None:
            return decode_full_content(blob.stored, content_type, shown)

        if not _is_searchable_content(content_type):
            hint = "Omit pattern/line_range/context_lines to retrieve the full content."
            raise ValueError(f"cannot search binary content ({content_type}). {hint}")
        if blob.text is not None:
            # A legacy backend handed back a str for a text kind: the reference fails to decode it.
            raise AttributeError("'str' object has no attribute 'decode'")
        lines_around = context_lines if context_lines is not None else 5
        span: tuple[int, int] | None = None
        if line_range is not None:
            span = (int(line_range["start"]), int(line_range["end"]))
        elif pattern is None:
            span = (1, max(1, lines_around))
        with timing:
            index = self._indexes.get(
                reference, blob.raw, lambda: _native.TextIndex(blob.raw, blob.offset), start=blob.offset
            )
            return _search_content(
                index,
                pattern=pattern,
                line_range=span,
                context_lines=lines_around,
                max_chars=self._max_result_tokens * CHARS_PER_TOKEN,
            )

    # ------------------------------------------------------------------ intercepting tool results

    def _encoding(self, agent: Agent) -> TokenCounter | None:
        return counter_for(self._tokenizer, agent.model)

    async def _estimate(self, agent: Agent, result: ToolResult, meter: BlockMeter) -> int | None:
        """Tokens of ``result`` when over the threshold, else None."""
        limit = self._max_result_tokens
        encoding = self._encoding(agent)
        if encoding is not None:
            # Counting stops past the threshold; only a result over it gets the notice's count.
            counted = meter.result(result.get("content", []), limit=limit)
            if counted is None:  # a shape the meter leaves to the SDK's walk
                counted = sdk_walk_tokens({"toolResult": result}, encoding)
            if counted <= limit:
                return None
            return max(limit + 1, _notice_tokens(meter, result, encoding))
        tokens: int | None = None
        if uses_base_heuristic(agent.model):
            tokens = meter.result(result.get("content", []))
        if tokens is None:
            tokens = await agent.model.count_tokens([{"role": "user", "content": [{"toolResult": result}]}])
        return tokens if tokens > limit else None

    @hook  # type: ignore[call-overload]  # see _on_before_model_call
    async def _handle_tool_result(self, event: AfterToolCallEvent) -> None:
        """Replace an oversized tool result by a notice, a preview and references."""
        if event.cancel_message is not None:
            return
        if self._include_retrieval_tool and event.tool_use.get("name") == _TOOL_NAME:
            return
        if _seam.is_delegating_agent_tool(event.selected_tool):
            return  # a delegate's result is the final answer; nothing could retrieve it
        result = event.result
        tool_use_id = event.tool_use["toolUseId"]
        if _skip_requested(event.invocation_state, tool_use_id):
            logger.debug("tool_use_id=<%s> | offload skipped on request", tool_use_id)
            return

        started = now_ns()
        measured = time.perf_counter()
        meter = self._meter(event.agent)
        tokens = await self._estimate(event.agent, result, meter)
        if tokens is None:
            return
        measured = time.perf_counter() - measured
        if self._should_offload is not None and not await self._callback_agrees(event, tokens):
            return
        tokens += self._media_of(event.agent, result)  # reported, never decided on
        try:
            offloaded, stored_bytes = await self._offload_blocks(
                event.agent, result["content"], tool_use_id, tokens, meter
            )
        except Exception:
            logger.warning(
                "tool_use_id=<%s> | offloading failed, keeping the original result", tool_use_id, exc_info=True
            )
            return
        logger.debug("tool_use_id=<%s>, tokens=<%d> | tool result offloaded", tool_use_id, tokens)
        event.result = ToolResult(toolUseId=result["toolUseId"], status=result["status"], content=offloaded.content)
        if self._ledger.enabled:
            self._record_offload(
                event.agent,
                event.invocation_state,
                started,
                str(event.tool_use.get("name", "")),
                tool_use_id,
                tokens,
                event.result,
                stored_bytes,
                len(result["content"]),
                measured,
            )

    def _media_of(self, agent: Agent, result: ToolResult) -> int:
        """Media tokens of ``result`` under ``media_tokens`` (0 when off)."""
        if self._media_tokens is None:
            return 0
        rule = _media.resolve(self._media_tokens, agent.model)
        return _media.media_tokens([{"role": "user", "content": [{"toolResult": result}]}], rule)

    def _record_offload(
        self,
        agent: Agent,
        invocation_state: Mapping[str, Any] | None,
        started: int,
        tool_name: str,
        call_id: str,
        tokens: int,
        shown: ToolResult,
        stored_bytes: int,
        blocks: int,
        native_seconds: float,
    ) -> None:
        """Put one offload in the ledger; a failure here is logged and never fails the offload."""
        try:
            self._ledger.refresh()
            encoding = self._encoding(agent)
            counter = encoding or token_counter("heuristic")
            if encoding is not None:
                original_counter = encoding.name
            else:
                original_counter = "heuristic" if uses_base_heuristic(agent.model) else "model"
            named = counter_name(original_counter, counter.name)
            shown_tokens = block_tokens({"toolResult": shown}, counter)
            rule = _media.resolve(self._media_tokens, agent.model) if self._media_tokens is not None else None
            if rule is not None:
                named += f"+media:{rule}"  # the media of both figures counted by this rule
                shown_tokens += self._media_of(agent, shown)
            self._ledger.offload(
                LedgerCall(agent, invocation_state, started, tool_name, call_id),
                storage=_backend_name(self._storage_for_agent(agent)),
                counter=named,
                original_tokens=tokens,
                shown_tokens=shown_tokens,
                bytes_stored=stored_bytes,
                blocks=blocks,
                native_seconds=native_seconds,
            )
        except Exception:
            logger.warning("tool_use_id=<%s> | recording the offload failed", call_id, exc_info=True)

    async def _callback_agrees(self, event: AfterToolCallEvent, tokens: int) -> bool:
        """Ask ``should_offload``; a callback that fails counts as a yes (nothing is lost by offloading)."""
        assert self._should_offload is not None
        try:
            answer = self._should_offload(event.tool_use.get("name", ""), tokens)
            return bool(await answer if inspect.isawaitable(answer) else answer)
        except Exception:
            logger.warning(
                "tool_use_id=<%s> | should_offload callback raised, offloading anyway",
                event.tool_use["toolUseId"],
                exc_info=True,
            )
            return True

    # ------------------------------------------------------------------ offloading

    async def offload(
        self,
        agent: Agent,
        content: str | bytes | list[ToolResultContent],
        *,
        key: str | None = None,
    ) -> OffloadedContent:
        """Store ``content`` now and return the notice and references that stand for it.

        For large user input or data inside a tool: the caller puts ``notice`` (or
        ``content``) where the data would have gone, and the model reads the rest
        through the retrieval tool.

        Args:
            agent: The agent whose storage and retrieval tool will serve the content.
            content: Text, raw bytes (stored as ``application/octet-stream``) or tool
                result content blocks.
            key: Storage key prefix; defaults to a fresh ``manual_...`` id.
        """
        if self._storage is None:
            self.init_agent(agent)
        if isinstance(content, str):
            blocks: list[ToolResultContent] = [{"text": content}]
        elif isinstance(content, (bytes, bytearray)):
            document = {"format": "octet-stream", "name": key or "content", "source": {"bytes": bytes(content)}}
            blocks = [cast(ToolResultContent, {"document": document})]
        else:
            blocks = list(content)
        started = now_ns()
        measured = time.perf_counter()
        meter = self._meter(agent)
        counter = self._encoding(agent) or token_counter("heuristic")
        whole = ToolResult(toolUseId="", status="success", content=blocks)
        tokens = _notice_tokens(meter, whole, counter) + self._media_of(agent, whole)
        measured = time.perf_counter() - measured
        offloaded, stored_bytes = await self._offload_blocks(
            agent, blocks, key or f"manual_{uuid.uuid4().hex[:12]}", tokens, meter
        )
        if self._ledger.enabled:
            shown = ToolResult(toolUseId="", status="success", content=offloaded.content)
            self._record_offload(agent, None, started, "", "", tokens, shown, stored_bytes, len(blocks), measured)
        return offloaded

    async def _offload_blocks(
        self,
        agent: Agent,
        content: list[ToolResultContent],
        key_prefix: str,
        tokens: int,
        meter: BlockMeter,
    ) -> tuple[OffloadedContent, int]:
        """The notice and references for ``content``, and the bytes stored for it."""
        storage = self._storage_for_agent(agent)
        stored_bytes = 0
        cycle = agent.event_loop_metrics.cycle_count
        preview_parts: list[str | memoryview] = []
        # One entry per stored block, or None for an image/document without bytes.
        # Other blocks get no entry; the placeholder pass indexes this list by block
        # position all the same, as the reference does (its QUIRK A94).
        entries: list[_StoredBlock | None] = []
        for position, block in enumerate(content):
            key = f"{key_prefix}_{position}"
            stored = await self._store_block(storage, key, block, preview_parts, meter)
            if stored is _NOT_RECORDED:
                continue
            if isinstance(stored, _StoredBlock):
                stored_bytes += stored.size
                self._track(agent, stored.reference, cycle)
                entries.append(stored)
            else:
                entries.append(None)
        if self._opaque_references:
            # One table save for the whole result; a failed save fails the offload (nothing is shown).
            recorded = [stored_block for stored_block in entries if stored_block is not None]
            handles = await self._table(agent).issue([stored_block.reference for stored_block in recorded])
            for stored_block, handle in zip(recorded, handles, strict=True):
                stored_block.reference = handle

        preview = self._preview(preview_parts, agent)
        listed = "\n".join(f"  {e.reference} ({e.description})" for e in entries if e is not None and e.reference)
        notice = (
            f"[Offloaded: {len(content)} blocks, ~{tokens:,} tokens]\n"
            f"{self._guidance()}\n\n"
            f"{preview}\n\n"
            f"[Stored references:]\n{listed}"
        )
        new_content: list[ToolResultContent] = [{"text": notice}]
        for position, block in enumerate(content):
            entry = entries[position] if position < len(entries) else None
            if entry is None:
                new_content.append(block)
            elif "text" in block or "json" in block:
                continue
            elif "image" in block:
                new_content.append({"text": _placeholder("image", block["image"], entry.reference)})
            elif "document" in block:
                new_content.append({"text": _placeholder("document", block["document"], entry.reference)})
            else:
                new_content.append(block)
        references = [e.reference for e in entries if e is not None]
        return OffloadedContent(notice=notice, references=references, content=new_content), stored_bytes

    async def _store_block(
        self,
        storage: Any,
        key: str,
        block: ToolResultContent,
        preview_parts: list[str | memoryview],
        meter: BlockMeter,
    ) -> _StoredBlock | None | object:
        """Store one block; feed the preview; say what was recorded for it."""
        text = block.get("text")
        if text:
            preview_parts.append(text)
            self._indexes.forget(key)
            encoded = text.encode("utf-8")
            reference = await store_blob(storage, key, encoded, "text/plain")
            return _StoredBlock(reference, "text/plain", f"text, {len(text):,} chars", len(encoded))
        if "json" in block:
            # The bytes the estimate's walk already wrote, framed for unified
            # storage; the JSON is ASCII, so the preview decodes only what it shows.
            data = meter.stored(block["json"])
            start = len(meter.prefix)
            payload = memoryview(data)[start:]
            preview_parts.append(payload)
            self._indexes.forget(key)
            if start and not is_legacy_storage(storage):
                reference = await write_frame(storage, key, data)
            else:
                reference = await store_blob(storage, key, bytes(payload) if start else data, "application/json")
            return _StoredBlock(reference, "application/json", f"json, {len(payload):,} bytes", len(payload))
        if "image" in block:
            image: Mapping[str, Any] = block["image"]
            image_format = image.get("format", "unknown")
            data = image.get("source", {}).get("bytes", b"")
            if not data:
                return None
            reference = await store_blob(storage, key, data, f"image/{image_format}")
            description = f"image/{image_format}, {len(data):,} bytes"
            return _StoredBlock(reference, f"image/{image_format}", description, len(data))
        if "document" in block:
            document: Mapping[str, Any] = block["document"]
            document_format = document.get("format", "unknown")
            name = document.get("name", "unknown")
            data = document.get("source", {}).get("bytes", b"")
            if not data:
                return None
            reference = await store_blob(storage, key, data, f"application/{document_format}")
            return _StoredBlock(reference, f"application/{document_format}", f"{name}, {len(data):,} bytes", len(data))
        return _NOT_RECORDED

    def _meter(self, agent: Agent) -> BlockMeter:
        """A block meter with this agent's counter, its stored JSON framed as this agent's storage stores it."""
        legacy = is_legacy_storage(self._storage_for_agent(agent))
        counter = self._encoding(agent) or token_counter("heuristic")
        return BlockMeter(counter, prefix=b"" if legacy else frame_prefix("application/json"))

    def _preview(self, parts: list[str | memoryview], agent: Agent) -> str:
        """The start of the joined preview source, cut like the reference or on BPE tokens."""
        encoding = self._encoding(agent)
        if self._preview_mode == "shape" and len(parts) == 1:
            part = parts[0]
            text = str(part, "ascii") if isinstance(part, memoryview) else part
            shape = shape_within(text, self._preview_tokens, self._preview_tokens * CHARS_PER_TOKEN, encoding)
            if shape is not None:
                return shape
        if encoding is None:
            return _joined_prefix(parts, self._preview_tokens * CHARS_PER_TOKEN)
        # The core reads windows of the joined parts as far as the cut needs.
        return _joined_prefix(parts, _native.joined_head_end(parts, self._preview_tokens, encoding=encoding))

    def _guidance(self) -> str:
        lines = [
            "This tool result was too large for the conversation and was moved to external storage.",
            "Check the preview below first; it may already answer the question.",
        ]
        if self._include_retrieval_tool:
            lines += [
                "For more, call retrieve_offloaded_content with one of the references and:",
                "  - pattern: a regex or keyword; returns the matching lines with context",
                "  - line_range: { start, end }; returns that span of lines",
                "Fetching the full content (no pattern or line_range) is the last resort.",
            ]
        else:
            lines.append("For more, use your other tools to reach the specific data you need.")
        return "\n".join(lines)


_NOT_RECORDED = object()


def _retrieval_mode(
    pattern: str | None, line_range: LineRange | None, context_lines: int | None, query: str | None
) -> str:
    if query is not None:
        return "json_query"
    if pattern is not None:
        return "grep"
    if line_range is not None or context_lines is not None:
        return "line_range"
    return "full"


def _answer_tokens(answer: dict[str, Any] | str, counter: TokenCounter) -> int:
    """Tokens of what a retrieval returned to the model, counted as the SDK walks a tool result."""
    if isinstance(answer, str):
        return _native.count_tokens(answer, counter)
    result = {"toolUseId": "", "status": answer.get("status", "success"), "content": answer.get("content", [])}
    return block_tokens({"toolResult": result}, counter)


def _backend_name(storage: Any) -> str:
    """The class name of the storage behind any namespaced views (never a path, bucket or prefix)."""
    seen = 0
    while isinstance(storage, _NamespacedStorage) and seen < 8:
        storage, seen = storage._storage, seen + 1
    return type(storage).__name__


# Exact counts of parts above this many code points come from their two ends, scaled.
_EXACT_SAMPLE_CHARS = 262_144


def _notice_tokens(meter: BlockMeter, result: ToolResult, counter: TokenCounter) -> int:
    """The notice's ``~N tokens``: with an exact counter, parts over the sample size are sampled and scaled."""
    tokens = meter.result(result.get("content", []), sample=_EXACT_SAMPLE_CHARS)
    return tokens if tokens is not None else sdk_walk_tokens({"toolResult": result}, counter)


def _validate(max_result_tokens: int, preview_tokens: int, evict_after_cycles: object, tokenizer: str | None) -> None:
    """Raise the reference's ValueError for the first bad setting, in its order."""
    eviction_ok = evict_after_cycles is None or (isinstance(evict_after_cycles, int) and evict_after_cycles >= 1)
    checks = (
        (max_result_tokens > 0, "max_result_tokens must be positive"),
        (preview_tokens >= 0, "preview_tokens must be non-negative"),
        (preview_tokens < max_result_tokens, "preview_tokens must be less than max_result_tokens"),
        (eviction_ok, "evict_after_cycles must be a positive integer or None"),
        (
            tokenizer is None or tokenizer in _TOKENIZERS,
            f"tokenizer must be None or one of {', '.join(_TOKENIZERS)}, got {tokenizer!r}",
        ),
    )
    for ok, message in checks:
        if not ok:
            raise ValueError(message)


def _joined_prefix(parts: Iterable[str | memoryview], limit: int) -> str:
    """The first ``limit`` characters of the parts joined by newlines, without joining the rest.

    A ``memoryview`` part is ASCII (stored JSON), so its first n bytes are its first n characters.
    """
    pieces: list[str] = []
    size = 0
    for part in parts:
        if pieces:
            pieces.append("\n")
            size += 1
        if size >= limit:
            break
        piece = part[: limit - size]
        pieces.append(str(piece, "ascii") if isinstance(piece, memoryview) else piece)
        size += len(pieces[-1])
        if size >= limit:
            break
    return "".join(pieces)[:limit]


def _placeholder(kind: str, block: Mapping[str, Any], reference: str) -> str:
    fmt = block.get("format", "unknown")
    data = block.get("source", {}).get("bytes", b"")
    size = len(data) if data else 0
    label = f"{fmt}, {block.get('name', 'unknown')}" if kind == "document" else fmt
    suffix = f" | ref: {reference}" if reference else ""
    return f"[{kind}: {label}, {size} bytes{suffix}]"
