"""Grep and line-range pages over stored text, answered by the native core.

:func:`search_content` is a drop-in for the reference's ``_search_content``: the
same output, byte for byte, and the same ``ValueError`` texts, with the pattern
meaning what it means in Python's ``re`` (see :mod:`strands_offload._pattern` for
which syntax runs on which engine). Matching never takes long: regular syntax
runs in linear time, and backtracking-only syntax is bounded.

Text may be given as ``str``, as UTF-8 ``bytes`` (decoded strictly: invalid bytes
raise the ``UnicodeDecodeError`` that ``bytes.decode`` would), or as a
:class:`TextIndex` built once and reused, so that further greps and pages of the
same content skip decoding and line splitting. A ``str`` holding lone surrogates
is searched exactly: literal patterns see the surrogates themselves; a regular
expression is matched with each surrogate standing in for U+FFFD, which is exact
unless the pattern tells the two apart, in which case ``ValueError`` is raised.
"""

from __future__ import annotations

import operator
from typing import Any

from . import _native
from ._native import TextIndex
from ._pattern import compile_matcher, has_large_counts, line_cap_for

__all__ = ["TextIndex", "is_searchable_content", "search_content"]

_I64_MAX = 2**63 - 1
_I64_MIN = -(2**63)

_TEXT_APPLICATION_TYPES = frozenset(
    {
        "application/graphql",
        "application/javascript",
        "application/json",
        "application/sql",
        "application/toml",
        "application/typescript",
        "application/x-yaml",
        "application/xhtml+xml",
        "application/xml",
        "application/yaml",
    }
)


def is_searchable_content(content_type: str) -> bool:
    """Tell whether stored content of this MIME type can be grepped or paged as text.

    Args:
        content_type: The MIME type the content was stored with.

    Returns:
        True for every ``text/*`` type and for the textual ``application/*`` types
        (JSON, XML, JavaScript, TypeScript, YAML, TOML, SQL, GraphQL, XHTML).
    """
    return content_type.startswith("text/") or content_type in _TEXT_APPLICATION_TYPES


def _clamp(value: int) -> int:
    return max(_I64_MIN, min(_I64_MAX, value))


def _check_order(start: Any, end: Any, start_text: str, end_text: str) -> None:
    """The reference's first two range checks, on the bounds as given (any comparable values)."""
    if start < 1:
        raise ValueError(f"line_range.start ({start_text}) must be >= 1.")
    if start > end:
        raise ValueError(f"line_range.start ({start_text}) must be <= line_range.end ({end_text}).")


def _range_args(start: Any, end: Any) -> tuple[int, int, str, str]:
    """Line-range bounds as numbers that fit 64 bits, with their texts as Python prints them."""
    start_text, end_text = f"{start}", f"{end}"
    try:
        s, e = operator.index(start), operator.index(end)
    except TypeError:
        # Not integers: give the same answers the reference's comparisons give.
        _check_order(start, end, start_text, end_text)
        raise TypeError(f"line_range bounds must be integers, got {start!r} and {end!r}") from None
    if s > _I64_MAX:
        # Beyond any content: only whether start > end still changes the answer.
        return _I64_MAX, _I64_MAX - 1 if e < s else _I64_MAX, start_text, end_text
    return _clamp(s), _clamp(e), start_text, end_text


def _line_span(bounds: tuple[int, int, str, str] | None, index: TextIndex) -> tuple[int, int, str] | None:
    """The checked span of a range for the core: 0-based first and last line, and its label."""
    if bounds is None:
        return None
    start, end, start_text, end_text = bounds
    _check_order(start, end, start_text, end_text)
    total = index.line_count
    if start > total:
        raise ValueError(f"line_range.start ({start_text}) is beyond content length ({total} lines).")
    last = min(end, total)
    return start - 1, last - 1, f" in lines {start_text}-{last}"


def _search_whole_bytes(data: bytes, pattern: str, context_lines: Any, max_chars: Any) -> str | None:
    """A grep of all of ``data`` in one read (indexing and search together).

    None when the general path must answer instead: it makes its checks in the
    reference's order (decoding, range, argument types, pattern).
    """
    if type(context_lines) is not int or type(max_chars) is not int or has_large_counts(pattern):
        return None
    try:
        matcher = compile_matcher(pattern)
    except ValueError:
        return None
    shown = pattern.encode("utf-8", "surrogatepass")
    return _native.search_bytes(data, shown, matcher, _clamp(context_lines), _clamp(max_chars))


def search_content(
    text: str | bytes | TextIndex,
    *,
    pattern: str | None = None,
    line_range: tuple[int, int] | None = None,
    max_chars: int = 10_000,
    context_lines: int = 5,
) -> str:
    """Grep stored text for a pattern, or list a range of its lines.

    Args:
        text: The content: ``str``, UTF-8 ``bytes`` or a prebuilt :class:`TextIndex`.
        pattern: A Python regular expression (or plain keyword); empty or None lists lines.
        line_range: ``(start, end)``, 1-based and inclusive; the end is clamped to the text.
        context_lines: Lines shown before and after each matching line (negative means 0).
        max_chars: Budget of the body in characters (code points); longer bodies are cut.

    Returns:
        The header and numbered lines, or a message for empty content or no matches.

    Raises:
        ValueError: If the range is invalid, or the pattern cannot be matched with its
            Python meaning (or needs too much backtracking).
        UnicodeDecodeError: If ``text`` is bytes that are not UTF-8.
    """
    if isinstance(text, bytes) and line_range is None and isinstance(pattern, str) and pattern:
        found = _search_whole_bytes(text, pattern, context_lines, max_chars)
        if found is not None:
            return found
    index = text if isinstance(text, TextIndex) else TextIndex(text)
    if index.is_empty:
        return _native.search(index, None, None, None, 0, 0)
    bounds = None
    if line_range is not None:
        start, end = line_range
        bounds = _range_args(start, end)
    context = _clamp(operator.index(context_lines))
    budget = _clamp(operator.index(max_chars))
    if not pattern:
        return _native.search(index, None, None, _line_span(bounds, index), context, budget)
    if not isinstance(pattern, str):
        raise TypeError(f"pattern must be str, not {type(pattern).__name__}")
    # The reference checks the range before it looks at the pattern.
    span = _line_span(bounds, index)
    # Huge counted repeats are bounded by what the text's lines can hold.
    cap = line_cap_for(index.longest_line_bytes) if has_large_counts(pattern) else None
    matcher = compile_matcher(pattern, cap)
    shown = pattern.encode("utf-8", "surrogatepass")
    return _native.search(index, shown, matcher, span, context, budget)
