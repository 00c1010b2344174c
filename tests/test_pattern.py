"""Tests of the Python-re to native-regex translation (strands_offload._pattern)."""

from __future__ import annotations

import re

import pytest
from strands_offload._pattern import (
    _P,
    UntranslatablePattern,
    _all_chars,
    _atom_set,
    _global_context,
    _scoped_context,
    compile_matcher,
    literal_text,
    plain_text,
    translate,
)


def oracle_set(source: str, flags: int) -> list[tuple[int, int]]:
    """Every code point Python's own re matches with a one-character pattern, as ranges.

    Python scans the string of all code points; each run of consecutive matched
    code points is one range.
    """
    everything = _all_chars()
    rx = re.compile(source, flags)
    out: list[tuple[int, int]] = []
    for m in rx.finditer(everything):
        cp = m.start()
        if out and out[-1][1] == cp - 1:
            out[-1] = (out[-1][0], cp)
        else:
            out.append((cp, cp))
    return out


ATOMS = [
    "k", "K", "s", "ß", "ẞ", "σ", "ς", "İ", "ı", "i", "µ", "ǅ", "\u1e9e", "[a-z]", "[^a-z]", r"[\w]", r"[^\W\d]",
    r"\s", r"\S", r"\d", r"\W", "[Σ-ω]", "[\u0100-\u017f]", "[^k]", ".", "[\ud800-\udfff]", "[^\ud800]", r"[^\s\d]",
]  # fmt: skip


@pytest.mark.parametrize("flags", [re.IGNORECASE, re.IGNORECASE | re.ASCII, 0, re.ASCII])
@pytest.mark.parametrize("source", ATOMS)
def test_atom_sets_equal_python_on_every_code_point(source: str, flags: int) -> None:
    [(op, av)] = list(_P.parse(source, flags))
    state_flags = _P.parse(source, flags).state.flags
    assert _atom_set(op, av, state_flags, _global_context(state_flags)) == oracle_set(source, flags)


SCOPED = [r"(?i:k)", r"(?i)(?-i:k)", r"(?i:(?-i:[k-m]))", r"(?i)(?-i:\w)", r"(?a)(?i:[^s])", r"(?i:(?i:ß))"]


@pytest.mark.parametrize("source", SCOPED)
def test_atom_sets_in_flag_scopes_equal_python(source: str) -> None:
    tree = _P.parse(source, 0)
    flags = tree.state.flags
    ctx = _global_context(flags)
    node = list(tree)[0]
    while node[0] is _P.SUBPATTERN:
        _, add, delete, sub = node[1]
        ctx = _scoped_context(ctx, add, delete)
        flags = (flags | add) & ~delete
        node = list(sub)[0]
    assert _atom_set(node[0], node[1], flags, ctx) == oracle_set(source, 0)


def test_vetting_follows_the_reference() -> None:
    assert literal_text("(a+)+") == "(a+)+"
    assert literal_text("x" * 150 + "(a+ ) *" + "y" * 100) == "x" * 150 + "(a+ ) *" + "y" * 43
    assert literal_text(r"\p{L}") == r"\p{L}"
    assert literal_text("(?<n>x)") == "(?<n>x)"
    assert literal_text("a+b") is None
    # The nested-quantifier check only sees the first 200 characters.
    assert literal_text("x" * 198 + "ab(a+)+") is None


def test_plain_patterns_become_substring_searches() -> None:
    assert plain_text(r"foo\.bar") == "foo.bar"
    assert plain_text("(?m)abc") == "abc"
    assert plain_text("(?i)abc") is None
    assert plain_text("a.c") is None


def test_linear_and_backtracking_forms() -> None:
    t = translate(r"^a[^b]\d*?$")
    assert t.linear is not None and not t.linear_needs_ascii_text
    assert "\\x{A}" not in t.linear  # no atom may match a newline
    t = translate(r"\bword\b")
    assert t.linear is not None and t.linear_needs_ascii_text
    t = translate(r"(?a)\bword\b")
    assert t.linear is not None and not t.linear_needs_ascii_text
    assert translate(r"a(?=b)").linear is None
    assert translate(r"(a)\1").linear is None
    assert translate(r"(a)?(?(1)b|c)").linear is None


def test_newline_literal_never_matches() -> None:
    t = translate(r"a\nb|c")
    assert t.linear is not None
    assert r"[^\x{0}-\x{10FFFF}]" in t.linear


def test_case_insensitive_backreference_is_refused() -> None:
    with pytest.raises(UntranslatablePattern):
        translate(r"(?i)(a)\1")


def test_matchers_are_cached_per_pattern() -> None:
    assert compile_matcher("abc+") is compile_matcher("abc+")


def test_surrogate_sensitivity_is_tracked() -> None:
    assert translate("a.").surrogate_exact
    assert translate(r"[^a]\W").surrogate_exact
    assert not translate("\ufffd+").surrogate_exact
    assert not translate("[\ud800-\udbff]x").surrogate_exact
