"""The truncate method: a head, tail or head-and-tail preview in place of long text.

The marker text is machine-read and equals the reference's. By default the cuts are the
reference's chars/4 positions; with an exact encoding they fall on BPE token boundaries and
``~N tokens`` is the exact count.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from strands.experimental.context_manager import TruncateConfig

from ... import _heuristic, _native
from ..._native import TokenCounter
from ..._tokens import preview as cut_preview

__all__ = ["CHARS_PER_TOKEN", "DEFAULT_PREVIEW_TOKENS", "TruncateConfig", "build_preview", "preview_tokens_of"]

DEFAULT_PREVIEW_TOKENS = 1000
CHARS_PER_TOKEN = _heuristic.CHARS_PER_TOKEN
_HEAD_SHARE = {"head": 1.0, "tail": 0.0, "head_tail": 0.6}


def preview_tokens_of(config: Mapping[str, Any] | None) -> int:
    """The preview budget a config asks for: a finite number floored at 0, else the default."""
    raw = (config or {}).get("preview_tokens", DEFAULT_PREVIEW_TOKENS)
    if isinstance(raw, (int, float)) and math.isfinite(raw):
        return max(0, int(raw))
    return DEFAULT_PREVIEW_TOKENS


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
    share = _HEAD_SHARE.get((config or {}).get("preview", "head_tail"), 0.6)
    total = len(text)
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
