"""The truncate method: a head, tail or head-and-tail preview in place of long text.

The marker text is machine-read and equals the reference's. By default the cuts are the
reference's chars/4 positions; with an exact encoding they fall on BPE token boundaries and
``~N tokens`` is the exact count.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any, Literal

from typing_extensions import TypedDict

from ... import _heuristic, _native
from ..._native import TokenCounter
from ..._shape import shape_within
from ..._tokens import preview as cut_preview

__all__ = ["CHARS_PER_TOKEN", "DEFAULT_PREVIEW_TOKENS", "TruncateConfig", "build_preview", "preview_tokens_of"]

DEFAULT_PREVIEW_TOKENS = 1000
CHARS_PER_TOKEN = _heuristic.CHARS_PER_TOKEN
_HEAD_SHARE = {"head": 1.0, "tail": 0.0, "head_tail": 0.6}


class TruncateConfig(TypedDict, total=False):
    """Configuration of ``Offload.truncate``: the reference's keys, and one more preview mode.

    Attributes:
        preview_tokens: The preview's budget (default 1,000).
        preview: ``"head"``, ``"tail"``, ``"head_tail"`` (the default) or, beyond the reference,
            ``"shape"``: JSON as its skeleton, CSV/TSV as header, counts and edge rows, a log as
            its head, tail and warning/error lines, each part with its line number (and JSONPath);
            other text gets the ``"head_tail"`` preview. (The reference takes unknown values as
            ``"head_tail"``.)
    """

    preview_tokens: int
    preview: Literal["head", "tail", "head_tail", "shape"]


def requested_preview_tokens(config: Mapping[str, Any] | None) -> float:
    """The preview budget as a config writes it: a finite number as given, else the default.

    Errors quote this value (``preview_tokens (1000.5)``); :func:`preview_tokens_of` is the budget used.
    """
    raw = (config or {}).get("preview_tokens", DEFAULT_PREVIEW_TOKENS)
    if isinstance(raw, (int, float)) and math.isfinite(raw):
        return raw
    return DEFAULT_PREVIEW_TOKENS


def preview_tokens_of(config: Mapping[str, Any] | None) -> int:
    """The preview budget a config asks for: :func:`requested_preview_tokens` as a whole number, at least 0."""
    return max(0, int(requested_preview_tokens(config)))


def build_preview(
    text: str, block_count: int, config: Mapping[str, Any] | None, encoding: TokenCounter | None = None
) -> str:
    """``text`` cut to its preview with the truncation header, or ``text`` itself when that is not shorter.

    Args:
        text: The text (the textual items of a tool result joined by newlines, or a text block).
        block_count: How many items the text was made of (the header says it).
        config: The strategy's ``TruncateConfig``.
        encoding: ``None`` for the reference's chars/4 cuts, or an exact token counter.
    """
    budget = preview_tokens_of(config)
    mode = (config or {}).get("preview", "head_tail")
    share = _HEAD_SHARE.get(mode, 0.6)
    total = len(text)
    if mode == "shape":
        shaped = _shape_preview(text, block_count, budget, encoding)
        if shaped is not None:
            return shaped
    if encoding is None:
        budget_chars = _heuristic.budget_chars(budget)
        if total <= budget_chars:
            return text
        head_end = int(budget_chars * share)
        tail_len = budget_chars - head_end
        head, tail = text[:head_end], (text[-tail_len:] if tail_len > 0 else "")
        approx = _heuristic.text_tokens(total)
    else:
        cut = cut_preview(text, budget, mode="head_tail", encoding=encoding, head_share=share, count=True)
        if not cut.truncated:
            return text
        head, tail = cut.head, cut.tail
        approx = cut.token_count if cut.token_count is not None else _native.count_tokens(text, encoding)
    elided = total - len(head) - len(tail)
    body = "\n\n".join(part for part in (head, f"[... {elided:,} chars elided ...]", tail) if part)
    unit = "block" if block_count == 1 else "blocks"
    result = f"[Truncated: {block_count} {unit}, ~{approx:,} tokens]\n\n{body}"
    return text if len(result) >= total else result


def _shape_preview(text: str, block_count: int, budget: int, encoding: TokenCounter | None) -> str | None:
    """The ``"shape"`` preview with the truncation header; ``text`` when not shorter; ``None``: no shape."""
    budget_chars = _heuristic.budget_chars(budget)
    if encoding is None and len(text) <= budget_chars:
        return text
    if encoding is not None and _native.count_tokens(text, encoding) <= budget:
        return text
    shape = shape_within(text, budget, budget_chars, encoding)
    if shape is None:
        return None
    approx = _heuristic.text_tokens(len(text)) if encoding is None else _native.count_tokens(text, encoding)
    unit = "block" if block_count == 1 else "blocks"
    result = f"[Truncated: {block_count} {unit}, ~{approx:,} tokens]\n\n{shape}"
    return text if len(result) >= len(text) else result


def truncate_tool_result(
    result: Mapping[str, Any], config: Mapping[str, Any] | None, encoding: TokenCounter | None = None
) -> Any:
    """A tool result whose text and JSON items became one preview item (media items kept after it).

    Returns ``result`` itself when there is nothing textual or the preview would not be shorter.
    """
    textual: list[str] = []
    others: list[Any] = []
    for item in result["content"]:
        if "text" in item:
            textual.append(item["text"])
        elif "json" in item:
            textual.append(_native.json_dumps(item["json"]))
        else:
            others.append(item)
    if not textual:
        return result
    joined = "\n".join(textual)
    cut = build_preview(joined, len(textual), config, encoding)
    if cut == joined:
        return result
    return {"toolUseId": result["toolUseId"], "status": result["status"], "content": [{"text": cut}, *others]}


def truncate_text_block(
    block: Mapping[str, Any], config: Mapping[str, Any] | None, encoding: TokenCounter | None = None
) -> Any:
    """A text block cut to its preview, or ``block`` itself when the preview would not be shorter."""
    cut = build_preview(block["text"], 1, config, encoding)
    if cut == block["text"]:
        return block
    return {"text": cut}


def truncated_block(
    block: Mapping[str, Any], config: Mapping[str, Any] | None, encoding: TokenCounter | None, refs: str
) -> dict[str, Any] | None:
    """The truncated form of a tool-result or text block, with ``refs`` (already formatted) after it.

    The one place the truncation strategy and a restore (which makes the same previews again from
    the log's originals) build that block, so the two cannot drift. ``None`` when the block is of
    another kind or already within its preview.
    """
    if "toolResult" in block:
        result = block["toolResult"]
        cut = truncate_tool_result(result, config, encoding)
        if cut is result:
            return None
        if refs:
            first_text = next((item for item in cut["content"] if "text" in item), None)
            if first_text is not None:
                first_text["text"] += f"\n\n[Stashed]{refs}"
        return {"toolResult": cut}
    if "text" in block and "toolUse" not in block:  # plain text (types.is_text_block, the result ruled out)
        cut = truncate_text_block(block, config, encoding)
        if cut is block:
            return None
        return {"text": cut["text"] + f"\n\n[Stashed]{refs}"} if refs else cut
    return None
