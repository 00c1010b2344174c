"""JSONPath queries on stored JSON, worded like this interpreter's ``json.loads``.

The native parser accepts and rejects what ``json.loads`` does and reports the same message and
position. The wording of one error changed in CPython 3.13 (a comma before ``]`` or ``}`` is an
"Illegal trailing comma" at the comma, where 3.10-3.12 report the missing value after it), so the
wording to mirror is read off the running interpreter's own ``json`` once, at import.
"""

from __future__ import annotations

import json

from . import _native

__all__ = ["TRAILING_COMMA_ERRORS", "json_query"]


def _json_names_trailing_commas() -> bool:
    """Whether this interpreter's ``json.loads`` words ``[1,]`` as an illegal trailing comma."""
    try:
        json.loads("[1,]")
    except json.JSONDecodeError as error:
        return error.msg.startswith("Illegal trailing comma")
    return False  # pragma: no cover - no CPython accepts it


#: True on CPython 3.13 and later, whose ``json`` reports trailing commas by name.
TRAILING_COMMA_ERRORS: bool = _json_names_trailing_commas()


def json_query(data: bytes, query: str, *, max_chars: int = 10000) -> str:
    """Evaluate a JSONPath ``query`` on the JSON document ``data``; the matches as indented JSON.

    Args:
        data: The stored JSON bytes (UTF-8, optionally with a BOM).
        query: The JSONPath query.
        max_chars: Characters of matches shown before the result is cut.

    Returns:
        A match-count header and the matches, or a "No matches" line.

    Raises:
        ValueError: When ``data`` is not JSON (with ``json.loads``'s text for this interpreter) or
            ``query`` does not parse.
    """
    return _native.json_query(data, query, max_chars=max_chars, trailing_comma_errors=TRAILING_COMMA_ERRORS)
