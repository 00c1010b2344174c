"""Shape previews: what a long structured text is made of, with where each part starts.

Instead of its first characters, a long result is shown as its shape:

* JSON: its skeleton, one node a line: the line number the node starts on, its JSONPath, and its
  type (objects with their key count, arrays with their length, short scalars with their value).
  Objects show their keys (the first 40); arrays their first item in full and, when longer, their
  last item shallowly, with the span of items in between named by its index range and lines.
* CSV / TSV: the header, row and column counts, the first and last rows, each with its line.
* Logs: the first and last lines and up to 20 warning or error lines, errors first (the first 10
  and the last 10 of them when there are more), warnings in the room left, each with its line.

Line numbers are 1-based, as ``line_range`` reads them; JSONPaths are the subset the offloader's
``json_queries=True`` evaluates. Everything is deterministic. The shape is cut from the bottom to
the budget; text of no known shape has none (``None``), and the caller falls back to its
positional preview.
"""

from __future__ import annotations

import csv
import json
import re
from collections.abc import Iterator

from . import _native
from ._native import TokenCounter

__all__ = ["shape_preview", "shape_within"]

_MAX_KEYS = 40
_MAX_DEPTH = 6
_SCALAR_CHARS = 60
_LINE_CHARS = 240
_LOG_EDGE_LINES = 5
_LOG_ISSUES = 20
_CSV_EDGE_ROWS = 3
_SAMPLE_LINES = 20

_DECODER = json.JSONDecoder()
_WS = re.compile(r"[ \t\n\r]*")
_IDENTIFIER = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*\Z")
_LOG_LINE = re.compile(
    r"^\s*(\[?\d{4}-\d{2}-\d{2}|\[?\d{2}:\d{2}:\d{2}|\w{3} +\d{1,2} \d{2}:\d{2}"
    r"|\[?(TRACE|DEBUG|INFO|WARN|WARNING|ERROR|FATAL)\b)"
)
_ERROR = re.compile(r"\b(error|err|fatal|critical|exception|traceback|panic|fail(ed|ure)?)\b", re.IGNORECASE)
_WARNING = re.compile(r"\b(warn(ing)?)\b", re.IGNORECASE)


def shape_preview(text: str, budget: int) -> str | None:
    """The shape of ``text`` in at most ``budget`` characters, or ``None`` when it has no known shape."""
    lines = _json_shape(text) or _csv_shape(text) or _log_shape(text)
    if lines is None:
        return None
    return _fit(lines, budget)


def shape_within(text: str, budget_tokens: int, budget_chars: int, encoding: TokenCounter | None = None) -> str | None:
    """The shape of ``text`` within a preview budget, or ``None`` when it has no known shape.

    At most ``budget_chars`` characters, and with an exact ``encoding`` at most ``budget_tokens``
    tokens (lines dropped from the bottom).
    """
    shape = shape_preview(text, budget_chars)
    if shape is None or encoding is None:
        return shape
    lines = shape.split("\n")
    while len(lines) > 1 and _native.count_tokens("\n".join(lines), encoding) > budget_tokens:
        lines.pop()
    return "\n".join(lines)


def _fit(lines: list[str], budget: int) -> str:
    """``lines`` joined by newlines, cut from the bottom (whole lines) to ``budget`` characters."""
    out: list[str] = []
    used = 0
    for line in lines:
        extra = len(line) + (1 if out else 0)
        if used + extra > budget:
            break
        out.append(line)
        used += extra
    return "\n".join(out)


def _clip(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 3] + "..."


# ----------------------------------------------------------------------------- JSON


def _child_path(path: str, key: str) -> str:
    if _IDENTIFIER.match(key):
        return f"{path}.{key}"
    quoted = json.dumps(key, ensure_ascii=False)
    if "'" not in key and "\\" not in quoted:
        quoted = f"'{key}'"
    return f"{path}[{quoted}]"


class _Lines:
    """Line numbers of increasing offsets of one text."""

    def __init__(self, text: str) -> None:
        self._text = text
        self._offset = 0
        self._line = 1

    def at(self, offset: int) -> int:
        if offset < self._offset:  # not expected (offsets only grow); counted afresh
            self._offset, self._line = 0, 1
        self._line += self._text.count("\n", self._offset, offset)
        self._offset = offset
        return self._line


def _skip_ws(text: str, index: int) -> int:
    match = _WS.match(text, index)
    return match.end() if match else index


def _describe(value: object) -> str:
    if isinstance(value, dict):
        return f"object{{{len(value)}}}"
    if isinstance(value, list):
        return f"array[{len(value)}]"
    return _clip(json.dumps(value, ensure_ascii=False), _SCALAR_CHARS)


class _JsonWalker:
    """Walks JSON text once, writing the skeleton's lines (positions from the C scanner's ends)."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.lines = _Lines(text)
        self.out: list[str] = []

    def node(self, index: int, path: str, what: str) -> None:
        self.out.append(f"L{self.lines.at(index)} {path}: {what}")

    def value(self, index: int, path: str, depth: int, *, shallow: bool = False) -> int:
        """Describe the value at ``index`` (and its parts); the offset just past it."""
        char = self.text[index]
        if char == "{" and not shallow and depth < _MAX_DEPTH:
            return self.obj(index, path, depth)
        if char == "[" and not shallow and depth < _MAX_DEPTH:
            return self.array(index, path, depth)
        value, end = _DECODER.raw_decode(self.text, index)
        if shallow and isinstance(value, dict):
            keys = list(value)[:_MAX_KEYS]
            more = f", +{len(value) - len(keys)} more" if len(value) > len(keys) else ""
            self.node(index, path, f"object{{{len(value)}}} keys: {', '.join(keys)}{more}")
        else:
            self.node(index, path, _describe(value))
        return end

    def obj(self, index: int, path: str, depth: int) -> int:
        position = len(self.out)
        self.node(index, path, "object")
        count = 0
        i = _skip_ws(self.text, index + 1)
        if self.text[i] == "}":
            self.out[position] = self.out[position] + "{0}"
            return i + 1
        while True:
            key, i = _DECODER.raw_decode(self.text, i)
            i = _skip_ws(self.text, i)
            i = _skip_ws(self.text, i + 1)  # past ':'
            count += 1
            if count <= _MAX_KEYS:
                i = self.value(i, _child_path(path, str(key)), depth + 1)
            else:
                _, i = _DECODER.raw_decode(self.text, i)
            i = _skip_ws(self.text, i)
            if self.text[i] == "}":
                break
            i = _skip_ws(self.text, i + 1)  # past ','
        self.out[position] += f"{{{count}}}"
        if count > _MAX_KEYS:
            self.out.insert(position + 1 + _MAX_KEYS, f"... {path}: {count - _MAX_KEYS} more keys")
        return i + 1

    def array(self, index: int, path: str, depth: int) -> int:
        position = len(self.out)
        self.node(index, path, "array")
        i = _skip_ws(self.text, index + 1)
        if self.text[i] == "]":
            self.out[position] += "[0]"
            return i + 1
        starts: list[int] = []
        count = 0
        while True:
            starts.append(i)
            if count == 0:
                i = self.value(i, f"{path}[0]", depth + 1)
            else:
                _, i = _DECODER.raw_decode(self.text, i)
            count += 1
            i = _skip_ws(self.text, i)
            if self.text[i] == "]":
                break
            i = _skip_ws(self.text, i + 1)
        self.out[position] += f"[{count}]"
        if count > 2:
            first_line, last_line = self.lines.at(starts[1]), self.lines.at(starts[-2])
            self.out.append(f"... {path}[1:{count - 1}]: {count - 2} more items, lines {first_line}-{last_line}")
        if count > 1:
            self.value(starts[-1], f"{path}[{count - 1}]", depth + 1, shallow=True)
        return i + 1


def _json_shape(text: str) -> list[str] | None:
    start = _skip_ws(text, 0)
    if start >= len(text) or text[start] not in "{[":
        return None
    walker = _JsonWalker(text)
    try:
        end = walker.value(start, "$", 0)
    except (ValueError, IndexError, RecursionError):
        return None
    if _skip_ws(text, end) != len(text):
        return None  # trailing text: not one JSON document
    total = text.count("\n") + 1
    return [f"[Shape: JSON, {total:,} {'line' if total == 1 else 'lines'}; L<line> <JSONPath>: <type>]", *walker.out]


# ----------------------------------------------------------------------------- CSV / TSV


def _sample(text: str, count: int) -> list[str]:
    return text[: 64 * 1024].splitlines()[:count]


def _csv_shape(text: str) -> list[str] | None:
    sample = _sample(text, _SAMPLE_LINES)
    if len(sample) < 3:
        return None
    for delimiter, kind in (("\t", "TSV"), (",", "CSV")):
        if delimiter not in sample[0]:
            continue
        widths = {len(row) for row in csv.reader(sample[:-1], delimiter=delimiter)}
        if len(widths) != 1 or widths.pop() < 2:
            continue
        return _table_shape(text, delimiter, kind)
    return None


def _table_shape(text: str, delimiter: str, kind: str) -> list[str] | None:
    reader = csv.reader(text.splitlines(), delimiter=delimiter)
    rows: list[tuple[int, list[str]]] = []
    last: list[tuple[int, list[str]]] = []
    count = 0
    header: list[str] | None = None
    try:
        for row in reader:
            if header is None:
                header = row
                continue
            count += 1
            entry = (reader.line_num, row)
            if len(rows) < _CSV_EDGE_ROWS:
                rows.append(entry)
            else:
                last.append(entry)
                if len(last) > _CSV_EDGE_ROWS:
                    last.pop(0)
    except csv.Error:
        return None
    if header is None:
        return None
    join = delimiter.join
    out = [
        f"[Shape: {kind}, {count:,} rows x {len(header)} columns; L<line>: <row>]",
        f"L1 header: {_clip(join(header), _LINE_CHARS)}",
    ]
    out += [f"L{line}: {_clip(join(row), _LINE_CHARS)}" for line, row in rows]
    if count > len(rows) + len(last):
        first, final = rows[-1][0] + 1, (last[0][0] - 1 if last else rows[-1][0])
        out.append(f"... {count - len(rows) - len(last):,} more rows, lines {first}-{final}")
    out += [f"L{line}: {_clip(join(row), _LINE_CHARS)}" for line, row in last]
    return out


# ----------------------------------------------------------------------------- logs


def _numbered(text: str) -> Iterator[tuple[int, str]]:
    return enumerate(text.splitlines(), start=1)


def _edges(numbers: list[int], count: int) -> list[int]:
    """At most ``count`` of ``numbers``: the first half and the last half when there are more."""
    if len(numbers) <= count:
        return numbers
    first = (count + 1) // 2
    return numbers[:first] + numbers[len(numbers) - (count - first) :]


def _issue_lines(text: str) -> list[int]:
    """Up to 20 warning/error lines, in line order, errors first.

    All errors when they fit (the first and last 10 when not), then warnings in the room left
    (their first and last halves likewise).
    """
    errors: list[int] = []
    warnings: list[int] = []
    for number, line in _numbered(text):
        if _ERROR.search(line):
            errors.append(number)
        elif _WARNING.search(line):
            warnings.append(number)
    chosen = _edges(errors, _LOG_ISSUES)
    chosen += _edges(warnings, _LOG_ISSUES - len(chosen))
    return sorted(chosen)


def _log_shape(text: str) -> list[str] | None:
    sample = _sample(text, _SAMPLE_LINES)
    if len(sample) < 3 or sum(1 for line in sample if _LOG_LINE.match(line)) * 2 < len(sample):
        return None
    lines = text.splitlines()
    total = len(lines)
    head = list(range(1, min(total, _LOG_EDGE_LINES) + 1))
    tail = list(range(max(head[-1] + 1, total - _LOG_EDGE_LINES + 1), total + 1))
    issues = _issue_lines(text)
    out = [f"[Shape: log, {total:,} lines, {len(issues)} warning/error lines shown; L<line>: <text>]"]
    out += [f"L{n}: {_clip(lines[n - 1], _LINE_CHARS)}" for n in head]
    shown_issues = [n for n in issues if n > head[-1] and (not tail or n < tail[0])]
    if shown_issues:
        out.append("warnings and errors:")
        out += [f"L{n}: {_clip(lines[n - 1], _LINE_CHARS)}" for n in shown_issues]
    if tail:
        out.append(f"... last lines ({tail[0]}-{tail[-1]}):")
        out += [f"L{n}: {_clip(lines[n - 1], _LINE_CHARS)}" for n in tail]
    return out
