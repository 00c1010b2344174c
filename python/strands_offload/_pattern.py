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
"""

from __future__ import annotations

import bisect
import functools
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from . import _native, _seam

_seam.require("re-parser")
_C: Any = _seam.re_constants()
_P: Any = _seam.re_parser()

MAX_PATTERN_LENGTH = 200
_NESTED_QUANTIFIER = re.compile(r"[+*]\s*\)\s*[+*]")

_MAXCODE = 0x10FFFF
_NEWLINE = 0x0A
_SURROGATES = (0xD800, 0xDFFF)
_REPLACEMENT = 0xFFFD

# Python before 3.14 never matches \B inside an empty string.
_B_FAILS_ON_EMPTY = re.search(r"\B", "") is None

Ranges = list[tuple[int, int]]


# Raised by the translation here and by the native matcher alike (a ValueError).
UntranslatablePattern = _native.UntranslatablePattern


# ---------------------------------------------------------------------------
# code point sets as sorted, disjoint, non-adjacent inclusive ranges


def _normalize(ranges: Iterable[tuple[int, int]]) -> Ranges:
    out: Ranges = []
    for lo, hi in sorted(ranges):
        if out and lo <= out[-1][1] + 1:
            if hi > out[-1][1]:
                out[-1] = (out[-1][0], hi)
        else:
            out.append((lo, hi))
    return out


def _complement(ranges: Ranges) -> Ranges:
    out: Ranges = []
    nxt = 0
    for lo, hi in ranges:
        if lo > nxt:
            out.append((nxt, lo - 1))
        nxt = hi + 1
    if nxt <= _MAXCODE:
        out.append((nxt, _MAXCODE))
    return out


def _subtract(a: Ranges, b: Ranges) -> Ranges:
    return _complement(_normalize([*_complement(a), *b]))


def _contains(ranges: Ranges, cp: int) -> bool:
    i = bisect.bisect_right(ranges, (cp, _MAXCODE + 1)) - 1
    return i >= 0 and ranges[i][0] <= cp <= ranges[i][1]


def _overlap(ranges: Ranges, lo: int, hi: int) -> int:
    """Number of code points of [lo, hi] in the set."""
    return sum(max(0, min(hi, h) - max(lo, l_) + 1) for l_, h in ranges)


def _runs(indices: Sequence[int]) -> Ranges:
    return _normalize((i, i) for i in indices)


@functools.cache
def _all_chars() -> str:
    """Every code point, in order (surrogates included)."""
    return "".join(map(chr, range(_MAXCODE + 1)))


@functools.cache
def _python_set(prefix: str, atom: str, suffix: str = "") -> tuple[tuple[int, int], ...]:
    """The code points a one-character Python pattern matches, found by Python itself.

    ``prefix`` and ``suffix`` are the inline-flag groups the atom sits in.
    """
    rx = re.compile(f"{prefix}(?:{atom})+{suffix}")
    return tuple((m.start(), m.end() - 1) for m in rx.finditer(_all_chars()))


@functools.cache
def _case_universe() -> tuple[tuple[int, ...], str, tuple[tuple[int, int], ...]]:
    """Code points that ``(?i)`` can relate to another code point.

    Outside this set a character only ever matches itself, with or without
    ``(?i)``; inside it, membership is asked of Python's ``re`` directly.
    """
    everything = _all_chars()
    cps: set[int] = set()
    for base in range(0, _MAXCODE + 1, 256):
        block = everything[base : base + 256]
        if block.lower() == block and block.upper() == block and block.casefold() == block:
            continue
        for cp in range(base, min(base + 256, _MAXCODE + 1)):
            ch = chr(cp)
            variants = (ch.lower(), ch.upper(), ch.casefold(), ch.title())
            if any(v != ch for v in variants):
                cps.add(cp)
                for v in variants:
                    cps.update(map(ord, v))
    extra = _seam.re_extra_cases()
    for key, values in extra.items():
        cps.add(key)
        cps.update(values)
    ordered = tuple(sorted(cps))
    return ordered, "".join(map(chr, ordered)), tuple(_runs(ordered))


_CATEGORY_SOURCE = {
    _C.CATEGORY_DIGIT: r"\d",
    _C.CATEGORY_NOT_DIGIT: r"\D",
    _C.CATEGORY_SPACE: r"\s",
    _C.CATEGORY_NOT_SPACE: r"\S",
    _C.CATEGORY_WORD: r"\w",
    _C.CATEGORY_NOT_WORD: r"\W",
}


def _esc(cp: int) -> str:
    return f"\\U{cp:08x}"


def _atom_source(op: Any, av: Any) -> str:
    """A one-character Python pattern with the same meaning as the atom."""
    if op is _C.LITERAL:
        return f"[{_esc(av)}]"
    if op is _C.NOT_LITERAL:
        return f"[^{_esc(av)}]"
    if op is _C.ANY:
        return "."
    parts: list[str] = []
    for iop, iav in av:
        if iop is _C.NEGATE:
            parts.insert(0, "^")
        elif iop is _C.LITERAL:
            parts.append(_esc(iav))
        elif iop is _C.RANGE:
            parts.append(f"{_esc(iav[0])}-{_esc(iav[1])}")
        elif iop is _C.CATEGORY:
            parts.append(_CATEGORY_SOURCE[iav])
        else:
            raise UntranslatablePattern(f"character class item {iop} is not supported")
    return "[" + "".join(parts) + "]"


Context = tuple[str, str]
"""Inline-flag groups around an atom, rebuilding the scopes it sits in (opening, closing)."""


def _flag_letters(flags: int) -> str:
    return "".join(
        letter for flag, letter in ((re.ASCII, "a"), (re.UNICODE, "u"), (re.IGNORECASE, "i")) if flags & flag
    )


def _global_context(flags: int) -> Context:
    letters = _flag_letters(flags & (re.ASCII | re.IGNORECASE))
    return (f"(?{letters})" if letters else "", "")


def _scoped_context(ctx: Context, add: int, delete: int) -> Context:
    plus, minus = _flag_letters(add), _flag_letters(delete & re.IGNORECASE)
    if not plus and not minus:
        return ctx
    opener = f"(?{plus}-{minus}:" if minus else f"(?{plus}:"
    return ctx[0] + opener, ")" + ctx[1]


def _atom_set(op: Any, av: Any, flags: int, ctx: Context = ("", "")) -> Ranges:
    """The code points one atom matches (Python semantics).

    ``flags`` are the flags in force and ``ctx`` the inline-flag groups the atom
    sits in: Python applies a scoped ``(?a:...)`` or ``(?u:...)`` differently to
    classes and to word boundaries, so class semantics are asked of Python in the
    same nesting rather than derived from the flags.
    """
    if op is _C.ANY:
        return [(0, _MAXCODE)] if flags & re.DOTALL else _complement([(_NEWLINE, _NEWLINE)])
    if op is _C.LITERAL:
        base: Ranges = [(av, av)]
    elif op is _C.NOT_LITERAL:
        base = _complement([(av, av)])
    else:
        negate = False
        acc: list[tuple[int, int]] = []
        for iop, iav in av:
            if iop is _C.NEGATE:
                negate = True
            elif iop is _C.LITERAL:
                acc.append((iav, iav))
            elif iop is _C.RANGE:
                acc.append((iav[0], iav[1]))
            elif iop is _C.CATEGORY:
                acc.extend(_python_set(ctx[0], f"[{_CATEGORY_SOURCE[iav]}]", ctx[1]))
            else:
                raise UntranslatablePattern(f"character class item {iop} is not supported")
        base = _normalize(acc)
        if negate:
            base = _complement(base)
    if flags & re.IGNORECASE:
        ordered, text, universe = _case_universe()
        rx = re.compile(ctx[0] + _atom_source(op, av) + ctx[1])
        hits = [ordered[m.start()] for m in rx.finditer(text)]
        base = _normalize([*_subtract(base, list(universe)), *_runs(hits)])
    return base


def _rust_char(cp: int) -> str:
    if cp < 0x80 and chr(cp).isalnum():
        return chr(cp)
    return f"\\x{{{cp:X}}}"


_NEVER = r"[^\x{0}-\x{10FFFF}]"


def _rust_class(ranges: Ranges) -> str:
    if not ranges:
        return _NEVER
    if len(ranges) == 1 and ranges[0][0] == ranges[0][1]:
        return _rust_char(ranges[0][0])
    body = "".join(_rust_char(lo) if lo == hi else f"{_rust_char(lo)}-{_rust_char(hi)}" for lo, hi in ranges)
    return f"[{body}]"


@dataclass(frozen=True)
class Translation:
    """A Python pattern rewritten for the native engines.

    Attributes:
        linear: Pattern for the linear engine, or None when backtracking-only syntax is used.
        linear_needs_ascii_text: The linear pattern is exact only on ASCII text.
        backtracking: Pattern for the backtracking engine (exact on any text).
        prefilter: A linear pattern that matches every line the pattern matches (and
            maybe more): look-around and word boundaries dropped, back-references
            widened to any text. Lines it rejects skip the backtracking engine.
        surrogate_exact: Every atom treats lone surrogates like U+FFFD.
        min_chars: Fewest characters a match takes, as Python's parser works it out
            (its ``re`` skips shorter text the same way).
    """

    linear: str | None
    linear_needs_ascii_text: bool
    backtracking: str
    prefilter: str
    surrogate_exact: bool
    min_chars: int


@dataclass(frozen=True)
class _Forms:
    """One node in the three spellings (linear, backtracking, prefilter)."""

    linear: str
    backtracking: str
    prefilter: str
    # What the engines make of the node once they have written out its counted repeats
    # (they expand them): the program's length in characters of pattern (-1: the
    # spelling's own, nothing inside is repeated), and its count of single-character
    # steps (the automata's states grow with it).
    expanded: int = -1
    steps: int = 1

    @property
    def size(self) -> int:
        return self.expanded if self.expanded >= 0 else max(len(self.linear), len(self.backtracking))

    @staticmethod
    def same(text: str) -> _Forms:
        return _Forms(text, text, text)


_ANY_TEXT = r"[^\n]*"


class _Translator:
    def __init__(self, line_cap: int | None = None, captures_observable: bool = True) -> None:
        # Upper bound on the length of any line of the text at hand (None: unknown), and
        # whether the pattern can observe what its groups captured (back-references,
        # conditionals): together they decide how far a counted repeat can be simplified.
        self.line_cap = line_cap
        self.captures_observable = captures_observable
        self.needs_backtracking = False
        self.needs_ascii_text = False
        self.surrogate_exact = True
        # Prefilter spelling of each closed capturing group: a back-reference repeats
        # text that group matched, so the group's own prefilter covers it.
        self.group_prefilter: dict[int, str] = {}

    def atom(self, op: Any, av: Any, flags: int, ctx: Context) -> str:
        ranges = _atom_set(op, av, flags, ctx)
        has_fffd = _contains(ranges, _REPLACEMENT)
        surrogates = _overlap(ranges, *_SURROGATES)
        total = _SURROGATES[1] - _SURROGATES[0] + 1
        if not ((has_fffd and surrogates == total) or (not has_fffd and surrogates == 0)):
            self.surrogate_exact = False
        usable = _subtract(ranges, [(_NEWLINE, _NEWLINE), _SURROGATES])
        return _rust_class(usable)

    @staticmethod
    def unicode_boundaries(ctx: Context) -> bool:
        """Whether word boundaries in this scope use Unicode word characters (asked of Python)."""
        return re.search(ctx[0] + r"\b" + ctx[1], "\u00e9") is not None

    def word_class(self, unicode: bool) -> str:
        ranges = list(_python_set("" if unicode else "(?a)", r"\w"))
        return _rust_class(_subtract(ranges, [(_NEWLINE, _NEWLINE), _SURROGATES]))

    def seq(self, items: Iterable[tuple[Any, Any]], flags: int, ctx: Context) -> _Forms:
        parts = [self.node(op, av, flags, ctx) for op, av in items]
        return _Forms(
            "".join(p.linear for p in parts),
            "".join(p.backtracking for p in parts),
            "".join(p.prefilter for p in parts),
            sum(p.size for p in parts),
            sum(p.steps for p in parts),
        )

    def backtracking_only(self, backtracking: str, prefilter: str, expanded: int = -1, steps: int = 1) -> _Forms:
        self.needs_backtracking = True
        return _Forms("", backtracking, prefilter, expanded, steps)

    def node(self, op: Any, av: Any, flags: int, ctx: Context) -> _Forms:
        if op in (_C.LITERAL, _C.NOT_LITERAL, _C.ANY, _C.IN):
            return _Forms.same(self.atom(op, av, flags, ctx))
        if op is _C.BRANCH:
            alts = [self.seq(alt, flags, ctx) for alt in av[1]]
            return _Forms(
                "(?:" + "|".join(f.linear for f in alts) + ")",
                "(?:" + "|".join(f.backtracking for f in alts) + ")",
                "(?:" + "|".join(f.prefilter for f in alts) + ")",
                sum(f.size for f in alts),
                sum(f.steps for f in alts),
            )
        if op is _C.SUBPATTERN:
            group, add, delete, sub = av
            if add & (re.ASCII | re.UNICODE):
                # CPython applies a scoped (?a:...) / (?u:...) to the group but plans its
                # search prefix with the outer flags, so which lines match depends on
                # where the group sits; that cannot be reproduced faithfully.
                raise UntranslatablePattern(
                    "scoped ASCII/Unicode flag groups such as (?a:...) are not supported by the native grep; "
                    "put the flag at the start of the pattern instead"
                )
            f = self.seq(sub, (flags | add) & ~delete, _scoped_context(ctx, add, delete))
            opener = "(?:" if group is None else "("
            if group is not None:
                self.group_prefilter[group] = f.prefilter
            return _Forms(f"{opener}{f.linear})", f"{opener}{f.backtracking})", f"(?:{f.prefilter})", f.size, f.steps)
        if op in (_C.MAX_REPEAT, _C.MIN_REPEAT) or op is getattr(_C, "POSSESSIVE_REPEAT", None):
            lo, hi, sub = av
            if _zero_width(sub):
                # Repeating something that only matches "": once is as good as many, so
                # X* is "X or nothing" (tried in the repeat's order); engines reject
                # quantifiers on assertions.
                return self.zero_width_repeat(op, lo, self.seq(sub, flags, ctx))
            bounds = self.fit_repeat(lo, hi, sub)
            if bounds is None:
                # Cannot match on this text. Its capturing groups keep their numbers
                # (spelled after a never-matching class); without groups the repeated
                # item is not even translated.
                if not _has_groups(sub):
                    return _Forms.same(_NEVER)
                dead = self.seq(sub, flags, ctx)
                return _Forms(
                    f"(?:{_NEVER}{dead.linear})",
                    f"(?:{_NEVER}{dead.backtracking})",
                    f"(?:{_NEVER}{dead.prefilter})",
                )
            lo, hi = bounds
            f = self.seq(sub, flags, ctx)
            q = _quantifier(lo, hi)
            copies = lo if hi == _C.MAXREPEAT else hi
            expanded, steps = copies * f.size, copies * f.steps
            written_out = expanded <= _EXPANSION_BUDGET and steps <= _STEPS_BUDGET
            widened = f"(?:{f.prefilter}){q if written_out else _widened_quantifier(lo, f.size, sub)}"
            if op is _C.MIN_REPEAT:
                q += "?"
            if not written_out:
                # Written out, this repeat would take the engines long to compile (and
                # may pass their size limit), or give the lazy DFA so many states that
                # it falls back to a slow simulation, where Python's re counts
                # iterations. The backtracking engine counts too, once the body holds
                # something only it runs: an empty look-ahead, which matches everywhere.
                counted = f"(?:(?=){f.backtracking}){q}"
                if op is not _C.MAX_REPEAT and op is not _C.MIN_REPEAT:
                    counted = f"(?>{counted})"
                return self.backtracking_only(counted, widened, f.size, f.steps)
            if op is _C.MAX_REPEAT or op is _C.MIN_REPEAT:
                return _Forms(f"(?:{f.linear}){q}", f"(?:{f.backtracking}){q}", widened, expanded, steps)
            return self.backtracking_only(f"(?>(?:{f.backtracking}){q})", widened, expanded, steps)
        if op is _C.AT:
            return self.anchor(av, ctx)
        if op is _C.GROUPREF:
            if flags & re.IGNORECASE:
                raise UntranslatablePattern(
                    "case-insensitive back-references are not supported by the native grep; spell out the cases instead"
                )
            # The engines see every lone surrogate as U+FFFD, so a back-reference
            # would find two different surrogates equal: on text holding them the
            # search raises UntranslatablePattern instead.
            self.surrogate_exact = False
            return self.backtracking_only(f"(?:\\{av})", f"(?:{self.group_prefilter.get(av, _ANY_TEXT)})")
        if op is _C.GROUPREF_EXISTS:
            group, yes, no = av
            y = self.seq(yes, flags, ctx)
            n = self.seq(no, flags, ctx) if no is not None else _Forms.same("")
            return self.backtracking_only(
                f"(?({group}){y.backtracking}|{n.backtracking})",
                f"(?:{y.prefilter}|{n.prefilter})",
                y.size + n.size,
                y.steps + n.steps,
            )
        if op in (_C.ASSERT, _C.ASSERT_NOT):
            direction, sub = av
            f = self.seq(sub, flags, ctx)
            kind = {(1, True): "=", (1, False): "!", (-1, True): "<=", (-1, False): "<!"}[(direction, op is _C.ASSERT)]
            return self.backtracking_only(f"(?{kind}{f.backtracking})", "", f.size, f.steps)
        if op is getattr(_C, "ATOMIC_GROUP", None):
            f = self.seq(av, flags, ctx)
            return self.backtracking_only(f"(?>{f.backtracking})", f"(?:{f.prefilter})", f.size, f.steps)
        if op is getattr(_C, "FAILURE", None):  # CPython 3.13 parses an empty (?!) into FAILURE
            return _Forms.same(_NEVER)
        raise UntranslatablePattern(f"regular expression construct {op} is not supported by the native grep")

    def fit_repeat(self, lo: int, hi: int, sub: Any) -> tuple[int, int] | None:
        """The bounds of a counted repeat that mean the same on lines of at most ``line_cap`` characters.

        A match never crosses a line, so a repeat whose every iteration takes at least
        one character cannot make more than ``line_cap`` iterations: a minimum beyond
        that cannot match (None), a maximum beyond it is as good as unbounded. When an
        iteration may be empty, a huge maximum also makes the minimum irrelevant (the
        missing iterations match the empty string), but only when no back-reference
        or conditional can tell which iteration captured what.
        """
        cap = self.line_cap
        if cap is None:
            return lo, hi
        width = sub.getwidth()[0]
        if width >= 1:
            if lo > cap // width:
                return None
            if hi != _C.MAXREPEAT and hi > cap:
                return lo, _C.MAXREPEAT
            return lo, hi
        if not self.captures_observable and (lo > cap or (hi != _C.MAXREPEAT and hi > cap)):
            return 0, _C.MAXREPEAT
        return lo, hi

    def zero_width_repeat(self, op: Any, lo: int, f: _Forms) -> _Forms:
        possessive = op is getattr(_C, "POSSESSIVE_REPEAT", None)

        def spell(x: str) -> str:
            if lo:
                return f"(?>{x})" if possessive else f"(?:{x})"
            if possessive:
                return f"(?>{x}|)"
            return f"(?:|{x})" if op is _C.MIN_REPEAT else f"(?:{x}|)"

        if possessive:
            return self.backtracking_only(spell(f.backtracking), f"(?:{f.prefilter}|)")
        return _Forms(spell(f.linear), spell(f.backtracking), f"(?:{f.prefilter}|)")

    def anchor(self, at: Any, ctx: Context) -> _Forms:
        if at in (_C.AT_BEGINNING, _C.AT_BEGINNING_STRING, _C.AT_BEGINNING_LINE):
            return _Forms.same("(?m:^)")
        if at in (_C.AT_END, _C.AT_END_STRING, _C.AT_END_LINE):
            return _Forms.same("(?m:$)")
        unicode = self.unicode_boundaries(ctx)
        w = self.word_class(unicode)
        if at is _C.AT_BOUNDARY:
            if unicode:
                self.needs_ascii_text = True
            return _Forms(r"(?-u:\b)", f"(?:(?<={w})(?!{w})|(?<!{w})(?={w}))", "")
        if at is _C.AT_NON_BOUNDARY:
            inner = f"(?:(?<={w})(?={w})|(?<!{w})(?!{w}))"
            if _B_FAILS_ON_EMPTY:
                return self.backtracking_only(f"(?:{inner}(?:(?<=[^\\n])|(?=[^\\n])))", "")
            if unicode:
                self.needs_ascii_text = True
            return _Forms(r"(?-u:\B)", inner, "")
        raise UntranslatablePattern(f"anchor {at} is not supported by the native grep")


def _zero_width(items: Iterable[tuple[Any, Any]]) -> bool:
    """Whether a sequence can only match the empty string (assertions, empty groups)."""
    for op, av in items:
        if op in (_C.AT, _C.ASSERT, _C.ASSERT_NOT):
            continue
        if op in (_C.MAX_REPEAT, _C.MIN_REPEAT) or op is getattr(_C, "POSSESSIVE_REPEAT", None):
            if _zero_width(av[2]):
                continue
        elif op is _C.SUBPATTERN:
            if _zero_width(av[3]):
                continue
        elif op is _C.BRANCH:
            if all(_zero_width(alt) for alt in av[1]):
                continue
        elif op is getattr(_C, "ATOMIC_GROUP", None) and _zero_width(av):
            continue
        return False
    return True


def _walk(items: Iterable[tuple[Any, Any]]) -> Iterable[tuple[Any, Any]]:
    """Every node of a parse tree, depth first."""
    for op, av in items:
        yield op, av
        if op is _C.BRANCH:
            for alt in av[1]:
                yield from _walk(alt)
        elif op is _C.SUBPATTERN:
            yield from _walk(av[3])
        elif op in (_C.MAX_REPEAT, _C.MIN_REPEAT) or op is getattr(_C, "POSSESSIVE_REPEAT", None):
            yield from _walk(av[2])
        elif op in (_C.ASSERT, _C.ASSERT_NOT):
            yield from _walk(av[1])
        elif op is _C.GROUPREF_EXISTS:
            yield from _walk(av[1])
            if av[2] is not None:
                yield from _walk(av[2])
        elif op is getattr(_C, "ATOMIC_GROUP", None):
            yield from _walk(av)


def _has_groups(items: Iterable[tuple[Any, Any]]) -> bool:
    return any(op is _C.SUBPATTERN and av[0] is not None for op, av in _walk(items))


def _refers_to_groups(items: Iterable[tuple[Any, Any]]) -> bool:
    return any(op in (_C.GROUPREF, _C.GROUPREF_EXISTS) for op, _ in _walk(items))


# Counted repeats up to this count are expanded as they are; beyond it the pattern
# is translated for the text at hand (see ``translate``'s ``line_cap``).
_LARGE_COUNT = 16

# Largest program (in characters of pattern, counted repeats written out) a repeat may
# expand to: about 6 ms of compiling. Python's \w alone is 11,500 characters once
# spelled as code-point ranges, so \w{100} is beyond it.
_EXPANSION_BUDGET = 200_000
# Largest count of single-character steps a repeat may expand to. Beyond it the lazy
# DFA's states (sets of steps) grow with the count and no longer fit its cache:
# (ab){2000} on lines of "abab..." takes seconds written out, milliseconds counted.
_STEPS_BUDGET = 1_000


def _widened_quantifier(lo: int, size: int, sub: Any) -> str:
    """A small quantifier for the prefilter of a repeat too large to write out.

    ``X{lo,hi}`` only matches where ``X{k,}`` does for any ``k <= lo``; ``k`` stays
    small (and is 0 when an iteration may be empty, where ``X{k,}`` is ``X*``).
    """
    if sub.getwidth()[0] == 0:
        return "*"
    return _quantifier(min(lo, _LARGE_COUNT, _EXPANSION_BUDGET // max(size, 1)), _C.MAXREPEAT)


@functools.lru_cache(maxsize=256)
def has_large_counts(pattern: str) -> bool:
    """Whether a valid regex pattern holds a counted repeat worth bounding by the text's lines."""
    if literal_text(pattern) is not None:
        return False
    tree = _P.parse(pattern[:MAX_PATTERN_LENGTH], 0)
    for op, av in _walk(tree):
        if op in (_C.MAX_REPEAT, _C.MIN_REPEAT) or op is getattr(_C, "POSSESSIVE_REPEAT", None):
            lo, hi = av[0], av[1]
            if lo > _LARGE_COUNT or (hi != _C.MAXREPEAT and hi > _LARGE_COUNT):
                return True
    return False


def _run_spec(pattern: str) -> tuple[list[tuple[int, int]], int, bool] | None:
    r"""The character set and run length for a pattern that is one large counted repeat of one character.

    For ``\w{30000}``, a line must hold 30000 consecutive word characters; other patterns give None.

    Searching for such a repeat finds a match exactly where a line holds ``lo``
    consecutive characters of the set, whatever the maximum, greediness or
    possessiveness: the native core counts runs instead of compiling the count.
    """
    tree = _P.parse(pattern, 0)
    if len(tree) != 1:
        return None
    op, av = tree[0]
    if not (op in (_C.MAX_REPEAT, _C.MIN_REPEAT) or op is getattr(_C, "POSSESSIVE_REPEAT", None)):
        return None
    lo, _hi, sub = av
    if lo <= _LARGE_COUNT or len(sub) != 1 or sub[0][0] not in (_C.LITERAL, _C.NOT_LITERAL, _C.ANY, _C.IN):
        return None
    tr = _Translator()
    flags = tree.state.flags
    atom_op, atom_av = sub[0]
    ranges = _atom_set(atom_op, atom_av, flags, _global_context(flags))
    tr.atom(atom_op, atom_av, flags, _global_context(flags))
    usable = _subtract(ranges, [(_NEWLINE, _NEWLINE), _SURROGATES])
    return usable, lo, tr.surrogate_exact


def line_cap_for(longest_line: int) -> int:
    """A bound on line length for ``translate``: the next power of two above the longest line.

    Rounding up lets texts of similar shape share one compiled matcher.
    """
    return 1 << max(longest_line, 1).bit_length()


def _quantifier(lo: int, hi: int) -> str:
    unbounded = hi == _C.MAXREPEAT
    if lo == 0 and unbounded:
        return "*"
    if lo == 1 and unbounded:
        return "+"
    if lo == 0 and hi == 1:
        return "?"
    if unbounded:
        return f"{{{lo},}}"
    if lo == hi:
        return f"{{{lo}}}"
    return f"{{{lo},{hi}}}"


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
    tree = _P.parse(pattern, 0)
    tr = _Translator(line_cap, _refers_to_groups(tree))
    flags = tree.state.flags
    ctx = _global_context(flags)
    items = list(tree)
    parts = [tr.node(op, av, flags, ctx) for op, av in items]
    prefilter = [p.prefilter for p in parts]
    # A look-behind that opens the pattern ends where the rest begins, and a
    # look-ahead that closes it starts where the rest ends: the prefilter may
    # require their text in place (a positive assertion only; the rest is dropped).
    if items and items[0][0] is _C.ASSERT and items[0][1][0] == -1:
        prefilter[0] = f"(?:{tr.seq(items[0][1][1], flags, ctx).prefilter})"
    if len(items) > 1 and items[-1][0] is _C.ASSERT and items[-1][1][0] == 1:
        prefilter[-1] = f"(?:{tr.seq(items[-1][1][1], flags, ctx).prefilter})"
    return Translation(
        linear=None if tr.needs_backtracking else "".join(p.linear for p in parts),
        linear_needs_ascii_text=tr.needs_ascii_text,
        backtracking="".join(p.backtracking for p in parts),
        prefilter="".join(prefilter),
        surrogate_exact=tr.surrogate_exact,
        min_chars=tree.getwidth()[0],
    )


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


def plain_text(pattern: str) -> str | None:
    """The text a valid pattern stands for when it is only literal characters, else None.

    Such patterns are searched with a plain substring search, which is exact even
    for lone surrogates.
    """
    tree = _P.parse(pattern, 0)
    flags = tree.state.flags
    if flags & re.IGNORECASE or not all(op is _C.LITERAL for op, _ in tree):
        return None
    return "".join(chr(av) for _, av in tree)


@functools.lru_cache(maxsize=64)
def compile_matcher(pattern: str, line_cap: int | None = None) -> _native.Matcher:
    """The native matcher for a (non-empty) grep pattern, cached per pattern.

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
    if literal is None:
        literal = plain_text(pattern[:MAX_PATTERN_LENGTH])
    if literal is not None:
        return _native.Matcher.literal(literal.encode("utf-8", "surrogatepass"))
    run = _run_spec(pattern[:MAX_PATTERN_LENGTH])
    if run is not None:
        return _native.Matcher.run(*run)
    return _native.Matcher.regex(translate(pattern[:MAX_PATTERN_LENGTH], line_cap))
