r"""Translation of Python ``re`` patterns into the native engines' syntax.

The reference greps with Python's ``re``. The native core matches with the Rust
``regex`` crate (linear time) or, for syntax that only a backtracking engine has,
with ``fancy-regex`` under a step limit. Meaning is decided by Python itself:
a pattern is first vetted exactly as the reference vets it (first 200 characters,
the nested-quantifier rule, ``re.compile`` failure means "search literally"), then
the parse tree Python's own parser builds is rewritten node by node.

How each construct is carried over:

* Every single-character atom (literal, class, ``.``, ``\d \w \s`` and their
  negations, with ``(?i)`` and ``(?a)`` applied) becomes an explicit set of code
  points computed from Python's own ``re`` on the running interpreter, so Unicode
  tables, case folding and ``str.isalnum``-style classes are Python's, not Rust's.
  ``"\n"`` is removed from every set: a line never holds one, and this lets the
  linear engine scan the whole text at once without a match crossing lines.
* Alternation, groups (capturing groups keep Python's numbering), greedy and lazy
  repeats run on the linear engine over the whole buffer. ``^ $ \A \Z`` become
  multi-line anchors, which per line mean the same as Python's.
* ``\b`` runs on the linear engine as an ASCII word boundary when the text is
  ASCII (or under ``(?a)``); on other text it is spelled with look-around over
  Python's word class and runs on the backtracking engine.
* ``\B`` (which Python before 3.14 never matches in an empty line), look-ahead,
  look-behind, back-references, conditionals ``(?(1)a|b)``, atomic groups and
  possessive repeats run on the backtracking engine, line by line, with a step
  limit per line and a time limit per search; hitting either raises ``ValueError``.
* Back-references under ``(?i)``, and scoped ``(?a:...)`` / ``(?u:...)`` groups
  (which CPython itself applies inconsistently: the group uses the scoped flag,
  the search-prefix planner the outer one), cannot be carried over exactly and
  raise :class:`UntranslatablePattern` (a ``ValueError``), as does any other
  construct the engines cannot express with the same meaning. Nothing is
  silently changed.

Lines handed to the backtracking engine are first narrowed by a linear
"prefilter" (the pattern with assertions dropped and back-references widened to
their group's pattern), and ASCII lines of a pattern whose only backtracking need
is a Unicode ``\b`` are answered by the linear engine with an ASCII ``\b``; both
are exact, only faster. The backtracking engine remains slower per line than
Python's own ``re`` (about 0.5x to 1x on look-around or back-reference patterns
that every line could match).

Because every class is computed by the running interpreter's ``re``, results follow
that Python's Unicode tables (Python 3.10 to 3.13 differ for characters added in
newer Unicode versions); the Rust crates' own Unicode tables are never consulted.
The first ``(?i)`` pattern in a process pays about 0.2 s to map Python's case
folding; translations are cached per pattern.

Patterns Python rejects (``\p{L}``, ``(?<name>x)`` on 3.11, ...) are searched
literally, as the reference does.

This module is the API; the work is split by concern: ``ranges`` (code-point set
arithmetic), ``atoms`` (the sets Python's ``re`` matches), ``tree`` (the parse tree,
reached through the seam), ``budgets`` (how far counted repeats are written out) and
``translator`` (the rewrite itself). A pattern is parsed once per compile and the
tree is handed along.
"""

from __future__ import annotations

import functools
import re
from typing import Any

from .. import _native
from . import atoms as _atoms
from .atoms import UntranslatablePattern
from .budgets import large_counts, line_cap_for
from .translator import Translation, run_spec, translate_tree
from .tree import C, P, parse

__all__ = [
    "MAX_PATTERN_LENGTH",
    "Translation",
    "UntranslatablePattern",
    "compile_matcher",
    "has_large_counts",
    "line_cap_for",
    "literal_text",
    "plain_text",
    "translate",
]

MAX_PATTERN_LENGTH = 200
_NESTED_QUANTIFIER = re.compile(r"[+*]\s*\)\s*[+*]")

# The parser and the set helpers under the names the tests know them by.
_P = P
_all_chars = _atoms.all_chars
_atom_set = _atoms.atom_set
_global_context = _atoms.global_context
_scoped_context = _atoms.scoped_context


def literal_text(pattern: str) -> str | None:
    """The text to search literally, or None when the pattern is used as a regex.

    Mirrors the reference's vetting: only the first 200 characters count; a
    quantified group that is quantified again, or a pattern ``re`` rejects, is
    searched as plain text.
    """
    head = pattern[:MAX_PATTERN_LENGTH]
    if _NESTED_QUANTIFIER.search(head):
        return head
    try:
        re.compile(head)
    except re.error:
        return head
    return None


def _plain(tree: Any) -> str | None:
    """The text a parse tree stands for when it holds only literal characters, else None."""
    if tree.state.flags & re.IGNORECASE or not all(op is C.LITERAL for op, _ in tree):
        return None
    return "".join(chr(av) for _, av in tree)


def plain_text(pattern: str) -> str | None:
    """The text a valid pattern stands for when it is only literal characters, else None.

    Such patterns are searched with a plain substring search, which is exact even
    for lone surrogates.
    """
    return _plain(parse(pattern))


@functools.lru_cache(maxsize=256)
def has_large_counts(pattern: str) -> bool:
    """Whether a valid regex pattern holds a counted repeat worth bounding by the text's lines."""
    if literal_text(pattern) is not None:
        return False
    return large_counts(parse(pattern[:MAX_PATTERN_LENGTH]))


def translate(pattern: str, line_cap: int | None = None) -> Translation:
    r"""Rewrite a pattern Python's ``re`` accepts for the native engines.

    Args:
        pattern: A pattern that ``re.compile`` accepts.
        line_cap: An upper bound on the length of every line of the text to search
            (None when unknown). Counted repeats are then bounded by what such lines can
            hold, which keeps the meaning on that text and keeps huge counts
            (``\w{30000}``, ``a{0,4294967294}``) from being expanded by the engines.

    Returns:
        The linear and backtracking forms and what they need from the text.

    Raises:
        UntranslatablePattern: If the pattern cannot be matched with the same meaning.
    """
    return translate_tree(parse(pattern), line_cap)


@functools.lru_cache(maxsize=64)
def compile_matcher(pattern: str, line_cap: int | None = None) -> _native.Matcher:
    """The native matcher for a (non-empty) grep pattern, cached per pattern.

    The pattern is parsed once; the tree serves the plain-text test, the run test
    and the translation alike.

    Args:
        pattern: The pattern as the caller gave it (only the first 200 characters are used).
        line_cap: A bound on the length of the text's lines (see ``translate``), given
            for patterns with large counted repeats (``has_large_counts``).

    Returns:
        A compiled native matcher.

    Raises:
        ValueError: If the pattern cannot be matched with Python's meaning natively.
    """
    literal = literal_text(pattern)
    if literal is not None:
        return _native.Matcher.literal(literal.encode("utf-8", "surrogatepass"))
    tree = parse(pattern[:MAX_PATTERN_LENGTH])
    plain = _plain(tree)
    if plain is not None:
        return _native.Matcher.literal(plain.encode("utf-8", "surrogatepass"))
    run = run_spec(tree)
    if run is not None:
        return _native.Matcher.run(*run)
    return _native.Matcher.regex(translate_tree(tree, line_cap))
