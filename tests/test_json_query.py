"""``_native.json_query`` against an independent evaluator over ``json.loads`` output.

The oracle below works on the Python objects ``json.loads`` builds and on a
query syntax tree; hypothesis renders the same tree as query text (dot names,
bracket names in either quote style with escapes, whitespace, unions) and the
document as JSON text with random whitespace, escapes and duplicate keys.
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass
from typing import Any

import pytest
from hypothesis import HealthCheck, assume, event, given, settings
from hypothesis import strategies as st
from strands_offload import json_query

BIG = 10**9
NOTE = "\n\n[output truncated, narrow your query]"

# ---------------------------------------------------------------------------
# Query syntax tree and its Python evaluation (the oracle)
# ---------------------------------------------------------------------------

MISSING = object()


@dataclass(frozen=True)
class Name:
    name: str


@dataclass(frozen=True)
class Index:
    index: int


@dataclass(frozen=True)
class Slice:
    start: int | None
    stop: int | None
    step: int | None


@dataclass(frozen=True)
class Wild:
    pass


@dataclass(frozen=True)
class Filter:
    path: tuple[str | int, ...]
    op: str | None  # None: existence test
    literal: Any = None


@dataclass(frozen=True)
class Logic:
    kind: str  # "and", "or", "not"
    parts: tuple[Any, ...]


@dataclass(frozen=True)
class Segment:
    descendant: bool
    selectors: tuple[Any, ...]


def _children(value: Any) -> list[Any]:
    if isinstance(value, list):
        return list(value)
    if isinstance(value, dict):
        return list(value.values())
    return []


def _preorder(value: Any) -> list[Any]:
    out = [value]
    for child in _children(value):
        out.extend(_preorder(child))
    return out


def _resolve(value: Any, path: tuple[str | int, ...]) -> Any:
    for step in path:
        if isinstance(step, str):
            if not isinstance(value, dict) or step not in value:
                return MISSING
            value = value[step]
        else:
            if not isinstance(value, list) or not -len(value) <= step < len(value):
                return MISSING
            value = value[step]
    return value


def _is_num(x: Any) -> bool:
    return isinstance(x, (int, float)) and not isinstance(x, bool)


def _equal(x: Any, lit: Any) -> bool:
    if _is_num(x) and _is_num(lit):
        return bool(x == lit)
    if isinstance(x, str) and isinstance(lit, str):
        return x == lit
    if isinstance(x, bool) and isinstance(lit, bool):
        return x is lit
    return x is None and lit is None


def _ordered(x: Any, lit: Any, op: str) -> bool:
    if not ((_is_num(x) and _is_num(lit)) or (isinstance(x, str) and isinstance(lit, str))):
        return False
    return {"<": x < lit, "<=": x <= lit, ">": x > lit, ">=": x >= lit}[op]


def _accepts(value: Any, f: Filter | Logic) -> bool:
    if isinstance(f, Logic):
        results = [_accepts(value, part) for part in f.parts]
        return all(results) if f.kind == "and" else any(results) if f.kind == "or" else not results[0]
    target = _resolve(value, f.path)
    if f.op is None:
        return target is not MISSING
    if target is MISSING:
        return f.op == "!="
    if f.op == "==":
        return _equal(target, f.literal)
    if f.op == "!=":
        return not _equal(target, f.literal)
    return _ordered(target, f.literal, f.op)


def _select(value: Any, sel: Any) -> list[Any]:
    if isinstance(sel, Name):
        return [value[sel.name]] if isinstance(value, dict) and sel.name in value else []
    if isinstance(sel, Index):
        if isinstance(value, list) and -len(value) <= sel.index < len(value):
            return [value[sel.index]]
        return []
    if isinstance(sel, Slice):
        return list(value[sel.start : sel.stop : sel.step]) if isinstance(value, list) else []
    if isinstance(sel, Wild):
        return _children(value)
    return [c for c in _children(value) if _accepts(c, sel)]


def evaluate(doc: Any, segments: list[Segment]) -> list[Any]:
    nodes = [doc]
    for seg in segments:
        out: list[Any] = []
        for node in nodes:
            for visited in _preorder(node) if seg.descendant else [node]:
                for sel in seg.selectors:
                    out.extend(_select(visited, sel))
        nodes = out
    return nodes


# ---------------------------------------------------------------------------
# Rendering trees as query text
# ---------------------------------------------------------------------------

_IDENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


def _quote(draw: Any, text: str) -> str:
    if draw(st.booleans()):
        # A query is a Python str handed to Rust: lone surrogates can only appear escaped.
        has_surrogate = any(0xD800 <= ord(ch) < 0xE000 for ch in text)
        return json.dumps(text, ensure_ascii=has_surrogate or draw(st.booleans()))
    out = []
    for ch in text:
        if ch in "'\\":
            out.append("\\" + ch)
        elif ord(ch) < 0x20 or 0xD800 <= ord(ch) < 0xE000 or draw(st.integers(0, 9)) == 0:
            out.append(json.dumps(ch)[1:-1] if ord(ch) >= 0x20 or ch in "\b\f\n\r\t" else f"\\u{ord(ch):04x}")
        else:
            out.append(ch)
    return "'" + "".join(out) + "'"


def _literal_text(draw: Any, lit: Any) -> str:
    if lit is None or isinstance(lit, bool):
        return json.dumps(lit)
    if isinstance(lit, (int, float)):
        return repr(lit)
    return _quote(draw, lit)


def _ws(draw: Any) -> str:
    return draw(st.sampled_from(["", "", " ", "  "]))


def _selector_text(draw: Any, sel: Any) -> str:
    if isinstance(sel, Name):
        return _quote(draw, sel.name)
    if isinstance(sel, Index):
        return str(sel.index)
    if isinstance(sel, Slice):
        parts = ["" if v is None else str(v) for v in (sel.start, sel.stop)]
        text = ":".join(parts)
        if sel.step is not None or draw(st.booleans()):
            text += ":" + ("" if sel.step is None else str(sel.step))
        return text
    if isinstance(sel, Wild):
        return "*"
    test = _test_text(draw, sel)
    return f"?({test})" if draw(st.booleans()) else f"?{test}"


def _test_text(draw: Any, sel: Filter | Logic) -> str:
    if isinstance(sel, Logic):
        if sel.kind == "not":
            (inner,) = sel.parts
            bare = isinstance(inner, Filter) and inner.op is None and draw(st.booleans())
            return "!" + (_test_text(draw, inner) if bare else f"({_test_text(draw, inner)})")
        texts = []
        for part in sel.parts:
            text = _test_text(draw, part)
            # An || inside && needs parentheses; anything may have them.
            needs = sel.kind == "and" and isinstance(part, Logic) and part.kind == "or"
            texts.append(f"({text})" if needs or draw(st.booleans()) else text)
        return (_ws(draw) + ("&&" if sel.kind == "and" else "||") + _ws(draw)).join(texts)
    path = "@"
    for step in sel.path:
        if isinstance(step, str) and _IDENT.match(step) and draw(st.booleans()):
            path += "." + step
        elif isinstance(step, str):
            path += "[" + _quote(draw, step) + "]"
        else:
            path += f"[{step}]"
    return path if sel.op is None else f"{path}{_ws(draw)}{sel.op}{_ws(draw)}{_literal_text(draw, sel.literal)}"


def render(draw: Any, segments: list[Segment]) -> str:
    text = "$"
    for seg in segments:
        prefix = ".." if seg.descendant else ""
        only = seg.selectors[0] if len(seg.selectors) == 1 else None
        if isinstance(only, Name) and _IDENT.match(only.name) and draw(st.booleans()):
            text += (prefix or ".") + only.name
        elif isinstance(only, Wild) and draw(st.booleans()):
            text += (prefix or ".") + "*"
        else:
            inner = ("," + _ws(draw)).join(_selector_text(draw, s) for s in seg.selectors)
            text += prefix + "[" + _ws(draw) + inner + _ws(draw) + "]"
    return text


# ---------------------------------------------------------------------------
# Documents, written as JSON text with random whitespace, escapes, duplicates
# ---------------------------------------------------------------------------

# Numbers where int/float comparison must be exact, as Python's is.
TRICKY = [2**53, 2**53 + 1, 9007199254740992.0, 10**23, 1e23, -0.0, 0, 0.5, -(10**30), 1e300]
KEYS = ["a", "b", "id", "name", "x y", "it's", 'q"', "\u00e9", "\U0001f680", "\\", "", "0", "\ud800"]
scalars = (
    st.none()
    | st.booleans()
    | st.integers(-(10**30), 10**30)
    | st.integers(-5, 5)
    | st.floats(allow_nan=True, allow_infinity=True)
    | st.sampled_from(KEYS)
    | st.text(max_size=6)
    | st.sampled_from(TRICKY)
)
values = st.recursive(
    scalars,
    lambda inner: (
        st.lists(inner, max_size=5) | st.dictionaries(st.sampled_from(KEYS) | st.text(max_size=3), inner, max_size=5)
    ),
    max_leaves=30,
)
keys = st.sampled_from(KEYS) | st.text(max_size=3)
# Mostly containers at the top, where queries have something to walk.
documents = st.lists(values, max_size=6) | st.dictionaries(keys, values, max_size=6) | values


def _write(draw: Any, value: Any, out: list[str]) -> None:
    ws = lambda: draw(st.sampled_from(["", "", " ", "\n", "\t", "\r\n  "]))  # noqa: E731
    if isinstance(value, str):
        chars = []
        for ch in value:
            if ch in '"\\' or ord(ch) < 0x20 or 0xD800 <= ord(ch) < 0xE000 or draw(st.integers(0, 5)) == 0:
                chars.append(json.dumps(ch, ensure_ascii=True)[1:-1] if ch not in "/" else "\\/")
            else:
                chars.append(ch)
        out.append('"' + "".join(chars) + '"')
    elif isinstance(value, list):
        out.append("[" + ws())
        for i, item in enumerate(value):
            if i:
                out.append(ws() + "," + ws())
            _write(draw, item, out)
        out.append(ws() + "]")
    elif isinstance(value, dict):
        out.append("{" + ws())
        items = list(value.items())
        if items and draw(st.booleans()):
            # A shadowed duplicate: json.loads keeps the later value at the first position.
            k = draw(st.sampled_from([k for k, _ in items]))
            items.insert(draw(st.integers(0, items.index((k, value[k])))), (k, draw(scalars)))
        for i, (k, v) in enumerate(items):
            if i:
                out.append(ws() + "," + ws())
            _write(draw, k, out)
            out.append(ws() + ":" + ws())
            _write(draw, v, out)
        out.append(ws() + "}")
    else:
        out.append(json.dumps(value))


@st.composite
def document_texts(draw: Any) -> tuple[bytes, Any]:
    doc = draw(documents)
    out: list[str] = [draw(st.sampled_from(["", " ", "\n"]))]
    _write(draw, doc, out)
    out.append(draw(st.sampled_from(["", " ", "\n"])))
    text = "".join(out).encode("utf-8")
    return text, json.loads(text)


def _paths() -> Any:
    return st.lists(st.sampled_from(KEYS) | st.integers(-3, 3), max_size=2).map(tuple)


literals = (
    st.none()
    | st.booleans()
    | st.integers(-5, 5)
    | st.floats(-10, 10)
    | st.sampled_from(KEYS + ["1", "abc"])
    | st.sampled_from(TRICKY)
    | st.floats(allow_nan=False, allow_infinity=False)
)
selectors = (
    st.sampled_from(KEYS).map(Name)
    | st.integers(-4, 4).map(Index)
    | st.builds(
        Slice,
        st.none() | st.integers(-5, 5),
        st.none() | st.integers(-5, 5),
        st.none() | st.integers(-3, 3).filter(bool),
    )
    | st.just(Wild())
    | st.recursive(
        st.builds(Filter, _paths(), st.sampled_from(["==", "!=", "<", "<=", ">", ">="]), literals)
        | st.builds(Filter, _paths(), st.none()),
        lambda inner: (
            st.builds(Logic, st.sampled_from(["and", "or"]), st.lists(inner, min_size=2, max_size=3).map(tuple))
            | st.builds(Logic, st.just("not"), st.tuples(inner))
        ),
        max_leaves=4,
    )
)
segments = st.lists(
    st.builds(Segment, st.booleans(), st.lists(selectors, min_size=1, max_size=3).map(tuple)),
    min_size=1,
    max_size=3,
)


def expected_text(query: str, matches: list[Any], max_chars: int = BIG) -> str:
    if not matches:
        return f"No matches for query '{query}'."
    noun = "match" if len(matches) == 1 else "matches"
    body = json.dumps(matches, indent=2)
    if len(body) > max_chars:
        cut = body[:max_chars].rfind("\n")
        body = body[: cut if cut >= 0 else max_chars] + NOTE
    return f"[{len(matches)} {noun} for {query}]\n\n{body}"


# ---------------------------------------------------------------------------
# Tests
# ---------------------------------------------------------------------------


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data(), document_texts(), segments)
def test_matches_oracle(data: Any, document: tuple[bytes, Any], tree: list[Segment]) -> None:
    text, doc = document
    query = render(data.draw, tree)
    matches = evaluate(doc, tree)
    assume(len(matches) < 2_000)
    event(f"matches: {min(len(matches), 3)}")
    assert json_query(text, query, max_chars=BIG) == expected_text(query, matches)


@settings(max_examples=150, deadline=None)
@given(document_texts(), st.integers(0, 400))
def test_truncation_cuts_at_last_line_break(document: tuple[bytes, Any], max_chars: int) -> None:
    text, doc = document
    got = json_query(text, "$..*", max_chars=max_chars)
    assert got == expected_text("$..*", evaluate(doc, [Segment(True, (Wild(),))]), max_chars)


@settings(max_examples=300, deadline=None)
@given(st.data(), document_texts())
def test_invalid_documents_fail_like_json_loads(data: Any, document: tuple[bytes, Any]) -> None:
    text, _ = document
    pos = data.draw(st.integers(0, len(text)))
    edit = data.draw(st.sampled_from(["cut", "insert", "drop"]))
    if edit == "cut":
        broken = text[:pos]
    elif edit == "insert":
        broken = (
            text[:pos] + data.draw(st.sampled_from(list(b'{}[]",:\\x0-1eE.tnN \x01\t'))).to_bytes(1, "big") + text[pos:]
        )
    else:
        broken = text[:pos] + text[pos + 1 :]
    try:
        broken.decode("utf-8")
    except UnicodeDecodeError:
        assume(False)
    try:
        loaded = json.loads(broken)
    except json.JSONDecodeError as error:
        with pytest.raises(ValueError) as info:
            json_query(broken, "$")
        assert str(info.value) == f"stored content is not valid JSON: {error}"
    else:
        header, body = json_query(broken, "$", max_chars=BIG).split("\n\n", 1)
        assert header == "[1 match for $]"
        # An edit may turn a number into one Python prints differently; values must agree.
        assert json.dumps(json.loads(body), indent=2) == json.dumps([loaded], indent=2)


def test_python_acceptance_edges() -> None:
    text = b'\xef\xbb\xbf {"n": [NaN, Infinity, -Infinity, 123456789012345678901234567890, -0, 1.5e300, 2E-3]} '
    doc = json.loads(text)
    got = json_query(text, "$.n[*]", max_chars=BIG)
    header, body = got.split("\n\n", 1)
    assert header == "[7 matches for $.n[*]]"
    # Numbers keep their stored text; the values equal json.loads's.
    assert body.split("\n")[1:-1] == [
        "  NaN,",
        "  Infinity,",
        "  -Infinity,",
        "  123456789012345678901234567890,",
        "  -0,",
        "  1.5e300,",
        "  2E-3",
    ]
    assert [repr(v) for v in json.loads(body)] == [repr(v) for v in doc["n"]]
    assert math.isnan(json.loads(body)[0])


@pytest.mark.parametrize(
    ("query", "position", "expected"),
    [
        ("$.items[3", 9, "expected ',' or ']', found end of query"),
        ("items[0]", 0, "expected '$'"),
        ("$.", 2, "expected a name or '*' after '.', found end of query"),
        ("$..", 3, "expected a name, '*' or '[' after '..'"),
        ("$[]", 2, "expected a selector"),
        ("$[1:2:0]", 6, "slice step cannot be zero"),
        ("$['a]", 2, "unterminated string"),
        ("$[?(@.a = 1)]", 8, "expected a comparison operator"),
        ("$[?(@.a == maybe)]", 11, "expected a literal"),
        ("$[?(@.a == 1]", 12, "expected '&&', '||' or ')' to close the filter"),
        ("$[?(@.a == 1 & @.b)]", 13, "expected '&&', '||' or ')'"),
        ("$[?" + "!" * 70 + "@.a]", 67, "filter nested deeper than 64 levels"),
        ("$[?(x)]", 4, "expected '@'"),
        ("$.a b", 4, "expected '.', '..', '[' or the end of the query, found 'b'"),
        ("$['\\q']", 4, "expected an escape"),
        ("$[99999999999999999999]", 2, "integer out of range"),
        ("$.caf\u00e9[x]", 7, "expected a selector"),
    ],
)
def test_query_errors_name_position_and_expectation(query: str, position: int, expected: str) -> None:
    with pytest.raises(ValueError) as info:
        json_query(b'{"items": [1]}', query)
    message = str(info.value)
    assert message.startswith(f"invalid query at position {position}: ")
    assert expected in message


def test_and_binds_tighter_than_or() -> None:
    doc = [{"a": 1, "b": 0, "c": 0}, {"a": 0, "b": 2, "c": 3}, {"a": 0, "b": 2, "c": 0}]
    query = "$[?@.a == 1 || @.b == 2 && @.c == 3]"
    want = [d for d in doc if d["a"] == 1 or (d["b"] == 2 and d["c"] == 3)]
    assert json_query(json.dumps(doc).encode(), query, max_chars=BIG) == expected_text(query, want)
    grouped = "$[?(@.a == 1 || @.b == 2) && !(@.c == 3)]"
    want = [d for d in doc if (d["a"] == 1 or d["b"] == 2) and d["c"] != 3]
    assert json_query(json.dumps(doc).encode(), grouped, max_chars=BIG) == expected_text(grouped, want)


def test_jq_style_queries_start_at_the_root() -> None:
    data = json.dumps({"items": [{"name": "a"}, {"name": "b"}]}).encode()
    for short in (".items[1].name", "[\"items\"][1]['name']"):
        got = json_query(data, short)
        assert got == expected_text(short, ["b"])


def test_negative_budget_is_refused() -> None:
    with pytest.raises(ValueError, match="max_chars"):
        json_query(b"[1]", "$", max_chars=-1)


def test_deep_nesting_is_an_error_not_a_crash() -> None:
    too_deep = b"[" * 10_001 + b"]" * 10_001
    with pytest.raises(ValueError, match=r"^stored content is not valid JSON: Nesting too deep"):
        json_query(too_deep, "$")
    deepest = b"[" * 10_000 + b"1" + b"]" * 10_000
    # Python's own json gives up far earlier; ours answers, bounded by the budget.
    got = json_query(deepest, "$..*", max_chars=2_000)
    assert got.startswith("[10000 matches for $..*]\n\n[\n  [\n    [")
    assert got.endswith(NOTE)
    assert json_query(deepest, "$" + "[0]" * 10_000) == "[1 match for $" + "[0]" * 10_000 + "]\n\n[\n  1\n]"


def test_runaway_selection_stops_with_a_clear_error() -> None:
    nested = b"[" * 5_000 + b"]" * 5_000
    # Each of the 4,999 nested arrays has all its descendants selected again: ~12.5 million values.
    with pytest.raises(ValueError, match=r"^query selects more than 10000000 values; narrow it$"):
        json_query(nested, "$..*..*")


def test_quadratic_query_with_huge_filter_hits_the_work_budget() -> None:
    # Every descendant of every descendant, each tested by a 1,001-term filter: billions
    # of comparisons on a 4 KB document. The work budget ends it with a clear error.
    nested = b"[" * 2000 + b"1" + b"]" * 2000
    query = "$..*..*[?(@[0] == 5" + " || @[0] == 5" * 1000 + ")]"
    with pytest.raises(ValueError, match=r"^query needs more than 200000000 steps on this content .*; narrow it$"):
        json_query(nested, query)
    assert json_query(nested, "$..*..*[?(@[0] == 5)]") == "No matches for query '$..*..*[?(@[0] == 5)]'."


def test_json_query_errors_are_named_value_errors() -> None:
    import strands_offload

    for name in ("InvalidJsonDocument", "InvalidJsonQuery", "JsonQueryTooExpensive"):
        assert issubclass(getattr(strands_offload, name), ValueError)
    with pytest.raises(strands_offload.InvalidJsonDocument, match="^stored content is not valid JSON: "):
        json_query(b"[1", "$")
    with pytest.raises(strands_offload.InvalidJsonQuery, match="^invalid query at position 2: "):
        json_query(b"[1]", "$[")
    with pytest.raises(strands_offload.JsonQueryTooExpensive, match="^query selects more than"):
        json_query(b"[" * 5_000 + b"]" * 5_000, "$..*..*")


def test_ten_megabyte_document() -> None:
    records = [
        {
            "id": i,
            "name": f"record {i} caf\u00e9",
            "score": i * 0.5,
            "tags": ["a", "b"][: i % 3],
            "nested": {"k": [i, None, True]},
        }
        for i in range(100_000)
    ]
    text = json.dumps({"items": records}).encode()
    assert len(text) > 10_000_000
    # Its speed is measured in benches/bench_json.py (json_query_10mb_compact).
    got = json_query(text, "$.items[73123].name")
    assert got == expected_text("$.items[73123].name", [records[73123]["name"]])
    filtered = json_query(text, "$.items[?(@.score >= 49998.5)].id", max_chars=BIG)
    assert filtered == expected_text("$.items[?(@.score >= 49998.5)].id", [99997, 99998, 99999])


query_alphabet = st.sampled_from(list("$.[]*?@()'\"\\,:-0123456789 abnu=!<>&|") + ["..", "==", "&&", "\u00e9"])


@settings(max_examples=400, deadline=None)
@given(
    st.lists(query_alphabet, max_size=20).map("".join), st.binary(max_size=40) | document_texts().map(lambda d: d[0])
)
def test_any_input_gives_text_or_value_error(query: str, data: bytes) -> None:
    try:
        result = json_query(data, query, max_chars=500)
    except ValueError as error:
        assert str(error).startswith(("invalid query at position ", "stored content is not valid JSON: "))
    else:
        assert result.startswith((f"No matches for query '{query}'.", "["))


@pytest.mark.parametrize("text", [b"[1,]", b'{"a": 1 , }', b"[1,\n]", b"[[],\t]"])
def test_trailing_comma_errors_are_worded_as_this_pythons_json(text: bytes) -> None:
    """CPython 3.13 names trailing commas ("Illegal trailing comma ..."); 3.10-3.12 do not."""
    with pytest.raises(json.JSONDecodeError) as expected:
        json.loads(text)
    with pytest.raises(ValueError) as info:
        json_query(text, "$")
    assert str(info.value) == f"stored content is not valid JSON: {expected.value}"
