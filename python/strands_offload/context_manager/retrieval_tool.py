"""The ``retrieve_context`` tool: the model's way back to what the context manager offloaded.

Outputs and errors are the reference's, byte for byte; grep and line pages run natively, and
the line index of a stored text is kept between calls (a model usually pages through one
original several times).
"""

from __future__ import annotations

import base64
import json
import logging
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from strands.tools.tools import PythonAgentTool
from strands.types.tools import ToolResult, ToolSpec

from .. import _native
from .._heuristic import CHARS_PER_TOKEN
from .._index_cache import IndexCache
from .._ledger import UNTIMED, NativeClock, now_ns
from .._search import TextIndex, search_content

if TYPE_CHECKING:
    from strands.types.content import Message

    from ._edits import EditRecorder
    from .stash import Stash

RETRIEVAL_TOOL_NAME = "retrieve_context"

# Answers are cut to this many tokens unless the caller asks for another budget.
_ANSWER_TOKENS = 10_000
_DEFAULT_CONTEXT_LINES = 5
_MEDIA_KINDS = ("image", "document")

logger = logging.getLogger(__name__)

_DESCRIPTION = (
    "Fetch an original that the context manager moved out of the conversation.\n\n"
    "Truncated, dropped and summarized content leaves a reference behind (for example "
    "[ref: tu_abc123_0]); pass that key to read the original.\n\n"
    "Ways to read:\n"
    "  - pattern: a regex or keyword; returns the matching lines with context\n"
    "  - line_range: { start, end } gives those lines (1-based, inclusive)\n"
    "  - neither: returns the whole original (media comes back as it was)\n\n"
    "Examples:\n"
    '  { reference: "tu_abc123_0", pattern: "timeout" }\n'
    '  { reference: "tu_abc123_0", line_range: { start: 40, end: 60 } }\n'
    '  { reference: "tu_abc123_0" }'
)

_SEARCH_NOTE = (
    "\n\nNo reference at hand? Pass query (words, no reference) to search everything stashed; "
    "the answer lists the best references with their first matching line."
)

# What the model reads about each argument. The schema is part of the tool's contract (a model
# prompted for the reference's tool must read ours alike), so these texts are the reference's.
_ARGUMENT_HELP = {
    "reference": "The reference key from the offload placeholder.",
    "pattern": "Regex or keyword to grep for. Returns matching lines with context.",
    "line_range": "Line range to extract (1-indexed, inclusive).",
    "start": "First line to return.",
    "end": "Last line to return.",
    "context_lines": "Lines of context around each match (default: 5).",
}


def _argument(name: str, json_type: str, *, minimum: int | None = None, **nested: Any) -> dict[str, Any]:
    """One argument's schema, its keys in the reference's order: type, bound, help, nesting."""
    schema: dict[str, Any] = {"type": json_type}
    if minimum is not None:
        schema["minimum"] = minimum
    schema["description"] = _ARGUMENT_HELP[name]
    return schema | nested


# Machine-readable: the reference's schema, key for key and in its key order.
_INPUT_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "reference": _argument("reference", "string"),
        "pattern": _argument("pattern", "string"),
        "line_range": _argument(
            "line_range",
            "object",
            properties={
                "start": _argument("start", "integer", minimum=1),
                "end": _argument("end", "integer", minimum=1),
            },
            required=["start", "end"],
        ),
        "context_lines": _argument("context_lines", "integer", minimum=0),
    },
    "required": ["reference"],
}


def _media_of(value: Mapping[str, Any]) -> dict[str, Any] | None:
    """An image or document item rebuilt from its stored form (base64 text back to bytes)."""
    for kind in _MEDIA_KINDS:
        if kind in value:
            media = value[kind]
            source = media.get("source", {})
            if isinstance(source.get("bytes"), str):
                media = {**media, "source": {**source, "bytes": base64.b64decode(source["bytes"])}}
            return {kind: media}
    return None


def searchable_text(value: object) -> str | None:
    """The text grep and pages run on: a string, a ``text`` field, or a ``json`` field indented."""
    if isinstance(value, str):
        return value
    if isinstance(value, dict):
        text = value.get("text")
        if isinstance(text, str):
            return text
        if value.get("json") is not None:
            return _native.json_dumps(value["json"], indent=2)
    return None


class _NullOriginal(Exception):
    """The stored original is JSON ``null``, which reads as a missing reference."""


def _error(tool_use_id: str, text: str) -> ToolResult:
    return ToolResult(toolUseId=tool_use_id, status="error", content=[{"text": text}])


def _success(tool_use_id: str, text: str) -> ToolResult:
    return ToolResult(toolUseId=tool_use_id, status="success", content=[{"text": text}])


def _schema_with_search() -> dict[str, Any]:
    schema: dict[str, Any] = json.loads(json.dumps(_INPUT_SCHEMA))
    schema["properties"]["reference"]["description"] += " Omit it to search with query."
    schema["properties"]["query"] = {
        "type": "string",
        "description": "Words to look for in everything stashed; returns the best references.",
    }
    schema["required"] = []
    return schema


def create_retrieval_tool(
    stash: Stash,
    max_result_tokens: int | None = None,
    *,
    search: bool = False,
    recorder: EditRecorder | None = None,
) -> PythonAgentTool:
    """Build the ``retrieve_context`` tool over ``stash``.

    Args:
        stash: The stash the references point into.
        max_result_tokens: Output budget in tokens (4 characters each); 10,000 by default.
        search: Also take ``query`` without ``reference`` and answer with the best references.
        recorder: Where each call is reported (the manager's savings ledger), or ``None``.
    """
    max_chars = (max_result_tokens or _ANSWER_TOKENS) * CHARS_PER_TOKEN
    # None stands for an original that is not text (media, a bare number): it cannot be searched.
    indexes: IndexCache[TextIndex | None] = IndexCache(max_entries=16)

    async def _recorded(tool_use: dict[str, Any], **invocation_state: Any) -> ToolResult:
        if recorder is None:
            return await _invoke(tool_use, UNTIMED)
        started, clock = now_ns(), NativeClock()
        result = await _invoke(tool_use, clock)
        inputs = tool_use.get("input", {})
        try:
            recorder.retrieval(
                invocation_state.get("agent"),
                invocation_state,
                started_ns=started,
                call_id=str(tool_use.get("toolUseId", "")),
                mode=_mode(inputs, search),
                outcome=_outcome(result),
                answer=result.get("content"),
                native_seconds=clock.seconds,
            )
        except Exception:
            logger.warning("recording a retrieve_context call failed", exc_info=True)
        return result

    async def _invoke(tool_use: dict[str, Any], clock: NativeClock | Any) -> ToolResult:
        tool_use_id = tool_use["toolUseId"]
        inputs = tool_use.get("input", {})
        if search and inputs.get("reference") is None:
            query = inputs.get("query")
            if not isinstance(query, str) or not query.strip():
                return _error(tool_use_id, "Error: give a reference, or a query to search the stash.")
            from ._stash_search import search_stash  # imports this module: loaded on first use

            return _success(tool_use_id, await search_stash(stash, query))
        reference: str = inputs["reference"]
        pattern = inputs.get("pattern")
        line_range = inputs.get("line_range")
        context_lines = inputs.get("context_lines")

        raw = await stash.retrieve_raw(reference)
        if raw is None:
            return _error(tool_use_id, f"Error: reference not found: {reference}")

        if pattern is None and line_range is None:
            value: Any = json.loads(raw.decode("utf-8"))
            if value is None:
                # A stored JSON null reads as missing, as in the reference.
                return _error(tool_use_id, f"Error: reference not found: {reference}")
            if isinstance(value, dict):
                media = _media_of(value)
                if media is not None:
                    return ToolResult(toolUseId=tool_use_id, status="success", content=[media])  # type: ignore[list-item]
            with clock:
                text = _native.json_dumps(value)
            if len(text) > max_chars:
                text = text[:max_chars] + "\n\n[truncated]"
            return _success(tool_use_id, text)

        def build_index() -> TextIndex | None:
            value = json.loads(raw.decode("utf-8"))
            if value is None:
                raise _NullOriginal
            with clock:
                found = searchable_text(value)
                return None if found is None else TextIndex(found)

        try:
            index = indexes.get(reference, raw, build_index)
        except _NullOriginal:
            return _error(tool_use_id, f"Error: reference not found: {reference}")
        if index is None:
            return _error(
                tool_use_id,
                "Error: cannot search non-text content. Omit pattern/line_range to retrieve full content.",
            )

        bounds: tuple[int, int] | None = None
        if line_range is not None:
            try:
                bounds = (int(line_range["start"]), int(line_range["end"]))
            except (KeyError, TypeError, ValueError) as error:
                return _error(tool_use_id, f"Error: invalid line_range: {error}")

        try:
            with clock:
                found_text = search_content(
                    index,
                    pattern=pattern,
                    line_range=bounds,
                    context_lines=_DEFAULT_CONTEXT_LINES if context_lines is None else context_lines,
                    max_chars=max_chars,
                )
        except ValueError as error:
            return _error(tool_use_id, str(error))
        return _success(tool_use_id, found_text)

    _recorded.__name__ = RETRIEVAL_TOOL_NAME
    description = _DESCRIPTION + (_SEARCH_NOTE if search else "")
    schema = _schema_with_search() if search else _INPUT_SCHEMA
    spec = ToolSpec(name=RETRIEVAL_TOOL_NAME, description=description, inputSchema=schema)
    return PythonAgentTool(tool_name=RETRIEVAL_TOOL_NAME, tool_spec=spec, tool_func=_recorded)


def _mode(inputs: Mapping[str, Any], search: bool) -> str:
    """The retrieval mode a call's input asks for, as the ledger names it."""
    if search and inputs.get("reference") is None:
        return "stash_search"
    if inputs.get("pattern") is not None:
        return "grep"
    if inputs.get("line_range") is not None:
        return "line_range"
    return "full"


def _outcome(result: Mapping[str, Any]) -> str:
    if result.get("status") == "success":
        return "ok"
    texts = [item.get("text", "") for item in result.get("content", [])]
    return "not_found" if any("reference not found" in text for text in texts) else "refused"


def track_retrieval_calls(message: Message, calls: set[str]) -> None:
    """Add the toolUseIds of ``retrieve_context`` calls in an assistant ``message`` to ``calls``.

    Their results are never stashed nor offloaded per block, so retrieving cannot loop.
    """
    if message.get("role") != "assistant":
        return
    for block in message.get("content", []):
        if "toolUse" in block and block["toolUse"].get("name") == RETRIEVAL_TOOL_NAME:
            calls.add(block["toolUse"]["toolUseId"])
