"""Token estimates for a tool result, as the offload decision needs them.

By default the plugin asks the agent's model, exactly like the reference. When
the model's ``count_tokens`` ends in the SDK's base heuristic (the chars/4 text
and chars/2 JSON rule; :func:`strands_offload._heuristic.uses_base_heuristic`,
the rule the context manager uses too), the same number is computed here without
building a message.
A JSON value's single-line length comes from the same native walk that writes
the indented bytes the offload stores (:class:`JsonDumps`), so a value that is
offloaded is walked once.
With an exact encoding the count is BPE tokens, stopping at the threshold.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .. import _native
from .._heuristic import json_tokens, text_tokens

if TYPE_CHECKING:
    from strands.types.tools import ToolResult

# Exact counts above this many code points come from a counted sample, scaled.
_EXACT_SAMPLE_CHARS = 262_144


class JsonDumps:
    """Stored form and single-line length of each JSON value of one tool result.

    The stored form is ``indent=2`` UTF-8 after ``prefix`` (a storage frame's
    header, so that the stored object is written once); both come from one walk.
    """

    def __init__(self, prefix: bytes = b"") -> None:
        self.prefix = prefix
        # id -> (the value itself, so a reused id is never mistaken, bytes, length)
        self._walked: dict[int, tuple[Any, bytes, int]] = {}

    def _walk(self, value: Any) -> tuple[Any, bytes, int]:
        entry = self._walked.get(id(value))
        if entry is None or entry[0] is not value:
            payload, compact = _native.json_dumps_utf8_with_len(value, indent=2, prefix=self.prefix)
            entry = (value, payload, compact)
            self._walked[id(value)] = entry
        return entry

    def compact_len(self, value: Any) -> int:
        """``len(json.dumps(value))``; raises what ``json.dumps`` raises."""
        return self._walk(value)[2]

    def indented(self, value: Any) -> bytes:
        """``prefix + json.dumps(value, indent=2).encode()``; the JSON is ASCII (ensure_ascii)."""
        return self._walk(value)[1]


def _json_chars(value: Any, dumps: JsonDumps | None) -> int:
    # The base heuristic counts a value it cannot serialise as 0 tokens.
    try:
        return _native.json_dumps_len(value) if dumps is None else dumps.compact_len(value)
    except (TypeError, ValueError):
        return 0


def heuristic_tokens(result: ToolResult, dumps: JsonDumps | None = None) -> int:
    """The base model's estimate of a one-message conversation holding ``result``."""
    total = 0
    for item in result.get("content", []):
        if "text" in item:
            total += text_tokens(len(item["text"]))
        if "json" in item:
            total += json_tokens(_json_chars(item["json"], dumps))
    return total


def _textual_parts(result: ToolResult) -> list[str]:
    parts: list[str] = []
    for item in result.get("content", []):
        if "text" in item:
            parts.append(item["text"])
        if "json" in item:
            try:
                parts.append(_native.json_dumps(item["json"]))
            except (TypeError, ValueError):
                continue
    return parts


def exceeds_exact(result: ToolResult, threshold: int, encoding: str) -> bool:
    """Whether the exact BPE count of the result's text and JSON is above ``threshold``.

    Costs time in proportion to the threshold, not to the result.
    """
    remaining = threshold
    for part in _textual_parts(result):
        remaining -= _native.count_tokens(part, encoding, limit=remaining)
        if remaining < 0:
            return True
    return False


def exact_tokens(result: ToolResult, encoding: str) -> int:
    """Exact BPE count of the result's text and JSON, sampled for very large parts.

    A part longer than the sample size is counted on its first and last halves of
    the sample and scaled to its full length, so the notice's ``~N tokens`` stays
    cheap on multi-megabyte results.
    """
    total = 0
    for part in _textual_parts(result):
        if len(part) <= _EXACT_SAMPLE_CHARS:
            total += _native.count_tokens(part, encoding)
            continue
        half = _EXACT_SAMPLE_CHARS // 2
        sampled = _native.count_tokens(part[:half], encoding) + _native.count_tokens(part[-half:], encoding)
        total += round(sampled * len(part) / (2 * half))
    return total
