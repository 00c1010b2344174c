"""The rewrite of a parse tree into the native engines' syntax.

Each node is spelled three ways at once: for the linear engine, for the
backtracking engine, and as a linear prefilter that accepts every line the
pattern can match. A node only the backtracking engine can run marks the whole
pattern as needing it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from .atoms import Context, UntranslatablePattern, atom_set, global_context, python_set, scoped_context, word_ranges
from .budgets import EXPANSION_BUDGET, LARGE_COUNT, fit_repeat, within_budget
from .ranges import REPLACEMENT, SURROGATES, Ranges, contains, overlap, searchable
from .tree import (
    ATOMIC_GROUP,
    FAILURE,
    POSSESSIVE_REPEAT,
    C,
    Items,
    has_groups,
    is_repeat,
    refers_to_groups,
    zero_width,
)

# Python before 3.14 never matches \B inside an empty string.
_B_FAILS_ON_EMPTY = re.search(r"\B", "") is None

NEVER = r"[^\x{0}-\x{10FFFF}]"
_ANY_TEXT = r"[^\n]*"


def _rust_char(cp: int) -> str:
    if cp < 0x80 and chr(cp).isalnum():
        return chr(cp)
    return f"\\x{{{cp:X}}}"


def _rust_class(ranges: Ranges) -> str:
    if not ranges:
        return NEVER
    if len(ranges) == 1 and ranges[0][0] == ranges[0][1]:
        return _rust_char(ranges[0][0])
    body = "".join(_rust_char(lo) if lo == hi else f"{_rust_char(lo)}-{_rust_char(hi)}" for lo, hi in ranges)
    return f"[{body}]"


def _surrogates_follow_fffd(ranges: Ranges) -> bool:
    """Whether a set takes all lone surrogates when it takes U+FFFD and none otherwise.

    The engines read every lone surrogate as U+FFFD; only such a set means the
    same to them as to Python on text holding surrogates.
    """
    has_fffd = contains(ranges, REPLACEMENT)
    surrogates = overlap(ranges, *SURROGATES)
    total = SURROGATES[1] - SURROGATES[0] + 1
    return (has_fffd and surrogates == total) or (not has_fffd and surrogates == 0)


def _quantifier(lo: int, hi: int) -> str:
    unbounded = hi == C.MAXREPEAT
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


def _widened_quantifier(lo: int, size: int, sub: Any) -> str:
    """A small quantifier for the prefilter of a repeat too large to write out.

    ``X{lo,hi}`` only matches where ``X{k,}`` does for any ``k <= lo``; ``k`` stays
    small (and is 0 when an iteration may be empty, where ``X{k,}`` is ``X*``).
    """
    if sub.getwidth()[0] == 0:
        return "*"
    return _quantifier(min(lo, LARGE_COUNT, EXPANSION_BUDGET // max(size, 1)), C.MAXREPEAT)


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
        ranges = atom_set(op, av, flags, ctx)
        if not _surrogates_follow_fffd(ranges):
            self.surrogate_exact = False
        return _rust_class(searchable(ranges))

    @staticmethod
    def unicode_boundaries(ctx: Context) -> bool:
        """Whether word boundaries in this scope use Unicode word characters (asked of Python)."""
        return re.search(ctx[0] + r"\b" + ctx[1], "\u00e9") is not None

    def word_class(self, unicode: bool) -> str:
        return _rust_class(searchable(list(word_ranges() if unicode else python_set("(?a)", r"\w"))))

    def seq(self, items: Items, flags: int, ctx: Context) -> _Forms:
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
        if op in (C.LITERAL, C.NOT_LITERAL, C.ANY, C.IN):
            return _Forms.same(self.atom(op, av, flags, ctx))
        if op is C.BRANCH:
            alts = [self.seq(alt, flags, ctx) for alt in av[1]]
            return _Forms(
                "(?:" + "|".join(f.linear for f in alts) + ")",
                "(?:" + "|".join(f.backtracking for f in alts) + ")",
                "(?:" + "|".join(f.prefilter for f in alts) + ")",
                sum(f.size for f in alts),
                sum(f.steps for f in alts),
            )
        if op is C.SUBPATTERN:
            group, add, delete, sub = av
            if add & (re.ASCII | re.UNICODE):
                # CPython applies a scoped (?a:...) / (?u:...) to the group but plans its
                # search prefix with the outer flags, so which lines match depends on
                # where the group sits; that cannot be reproduced faithfully.
                raise UntranslatablePattern(
                    "scoped ASCII/Unicode flag groups such as (?a:...) are not supported by the native grep; "
                    "put the flag at the start of the pattern instead"
                )
            f = self.seq(sub, (flags | add) & ~delete, scoped_context(ctx, add, delete))
            opener = "(?:" if group is None else "("
            if group is not None:
                self.group_prefilter[group] = f.prefilter
            return _Forms(f"{opener}{f.linear})", f"{opener}{f.backtracking})", f"(?:{f.prefilter})", f.size, f.steps)
        if is_repeat(op):
            return self.repeat(op, av, flags, ctx)
        if op is C.AT:
            return self.anchor(av, ctx)
        if op is C.GROUPREF:
            if flags & re.IGNORECASE:
                raise UntranslatablePattern(
                    "case-insensitive back-references are not supported by the native grep; spell out the cases instead"
                )
            # The engines see every lone surrogate as U+FFFD, so a back-reference
            # would find two different surrogates equal: on text holding them the
            # search raises UntranslatablePattern instead.
            self.surrogate_exact = False
            return self.backtracking_only(f"(?:\\{av})", f"(?:{self.group_prefilter.get(av, _ANY_TEXT)})")
        if op is C.GROUPREF_EXISTS:
            group, yes, no = av
            y = self.seq(yes, flags, ctx)
            n = self.seq(no, flags, ctx) if no is not None else _Forms.same("")
            return self.backtracking_only(
                f"(?({group}){y.backtracking}|{n.backtracking})",
                f"(?:{y.prefilter}|{n.prefilter})",
                y.size + n.size,
                y.steps + n.steps,
            )
        if op in (C.ASSERT, C.ASSERT_NOT):
            direction, sub = av
            f = self.seq(sub, flags, ctx)
            kind = {(1, True): "=", (1, False): "!", (-1, True): "<=", (-1, False): "<!"}[(direction, op is C.ASSERT)]
            return self.backtracking_only(f"(?{kind}{f.backtracking})", "", f.size, f.steps)
        if op is ATOMIC_GROUP:
            f = self.seq(av, flags, ctx)
            return self.backtracking_only(f"(?>{f.backtracking})", f"(?:{f.prefilter})", f.size, f.steps)
        if op is FAILURE:  # CPython 3.13 parses an empty (?!) into FAILURE
            return _Forms.same(NEVER)
        raise UntranslatablePattern(f"regular expression construct {op} is not supported by the native grep")

    def repeat(self, op: Any, av: Any, flags: int, ctx: Context) -> _Forms:
        lo, hi, sub = av
        possessive = op is POSSESSIVE_REPEAT
        if zero_width(sub):
            # Repeating something that only matches "": once is as good as many, so
            # X* is "X or nothing" (tried in the repeat's order); engines reject
            # quantifiers on assertions.
            return self.zero_width_repeat(op, lo, self.seq(sub, flags, ctx))
        bounds = fit_repeat(lo, hi, sub, self.line_cap, self.captures_observable)
        if bounds is None:
            # Cannot match on this text. Its capturing groups keep their numbers
            # (spelled after a never-matching class); without groups the repeated
            # item is not even translated.
            if not has_groups(sub):
                return _Forms.same(NEVER)
            dead = self.seq(sub, flags, ctx)
            return _Forms(
                f"(?:{NEVER}{dead.linear})",
                f"(?:{NEVER}{dead.backtracking})",
                f"(?:{NEVER}{dead.prefilter})",
            )
        lo, hi = bounds
        f = self.seq(sub, flags, ctx)
        q = _quantifier(lo, hi)
        copies = lo if hi == C.MAXREPEAT else hi
        expanded, steps = copies * f.size, copies * f.steps
        written_out = within_budget(expanded, steps)
        widened = f"(?:{f.prefilter}){q if written_out else _widened_quantifier(lo, f.size, sub)}"
        if op is C.MIN_REPEAT:
            q += "?"
        if not written_out:
            # Written out, this repeat would take the engines long to compile (and
            # may pass their size limit), or give the lazy DFA so many states that
            # it falls back to a slow simulation, where Python's re counts
            # iterations. The backtracking engine counts too, once the body holds
            # something only it runs: an empty look-ahead, which matches everywhere.
            counted = f"(?:(?=){f.backtracking}){q}"
            if possessive:
                counted = f"(?>{counted})"
            return self.backtracking_only(counted, widened, f.size, f.steps)
        if possessive:
            return self.backtracking_only(f"(?>(?:{f.backtracking}){q})", widened, expanded, steps)
        return _Forms(f"(?:{f.linear}){q}", f"(?:{f.backtracking}){q}", widened, expanded, steps)

    def zero_width_repeat(self, op: Any, lo: int, f: _Forms) -> _Forms:
        possessive = op is POSSESSIVE_REPEAT

        def spell(x: str) -> str:
            if lo:
                return f"(?>{x})" if possessive else f"(?:{x})"
            if possessive:
                return f"(?>{x}|)"
            return f"(?:|{x})" if op is C.MIN_REPEAT else f"(?:{x}|)"

        if possessive:
            return self.backtracking_only(spell(f.backtracking), f"(?:{f.prefilter}|)")
        return _Forms(spell(f.linear), spell(f.backtracking), f"(?:{f.prefilter}|)")

    def anchor(self, at: Any, ctx: Context) -> _Forms:
        if at in (C.AT_BEGINNING, C.AT_BEGINNING_STRING, C.AT_BEGINNING_LINE):
            return _Forms.same("(?m:^)")
        if at in (C.AT_END, C.AT_END_STRING, C.AT_END_LINE):
            return _Forms.same("(?m:$)")
        unicode = self.unicode_boundaries(ctx)
        w = self.word_class(unicode)
        if at is C.AT_BOUNDARY:
            if unicode:
                self.needs_ascii_text = True
            return _Forms(r"(?-u:\b)", f"(?:(?<={w})(?!{w})|(?<!{w})(?={w}))", "")
        if at is C.AT_NON_BOUNDARY:
            inner = f"(?:(?<={w})(?={w})|(?<!{w})(?!{w}))"
            if _B_FAILS_ON_EMPTY:
                return self.backtracking_only(f"(?:{inner}(?:(?<=[^\\n])|(?=[^\\n])))", "")
            if unicode:
                self.needs_ascii_text = True
            return _Forms(r"(?-u:\B)", inner, "")
        raise UntranslatablePattern(f"anchor {at} is not supported by the native grep")


def translate_tree(tree: Any, line_cap: int | None) -> Translation:
    """The translation of an already parsed pattern (see ``translate``)."""
    tr = _Translator(line_cap, refers_to_groups(tree))
    flags = tree.state.flags
    ctx = global_context(flags)
    items = list(tree)
    parts = [tr.node(op, av, flags, ctx) for op, av in items]
    prefilter = [p.prefilter for p in parts]
    # A look-behind that opens the pattern ends where the rest begins, and a
    # look-ahead that closes it starts where the rest ends: the prefilter may
    # require their text in place (a positive assertion only; the rest is dropped).
    if items and items[0][0] is C.ASSERT and items[0][1][0] == -1:
        prefilter[0] = f"(?:{tr.seq(items[0][1][1], flags, ctx).prefilter})"
    if len(items) > 1 and items[-1][0] is C.ASSERT and items[-1][1][0] == 1:
        prefilter[-1] = f"(?:{tr.seq(items[-1][1][1], flags, ctx).prefilter})"
    return Translation(
        linear=None if tr.needs_backtracking else "".join(p.linear for p in parts),
        linear_needs_ascii_text=tr.needs_ascii_text,
        backtracking="".join(p.backtracking for p in parts),
        prefilter="".join(prefilter),
        surrogate_exact=tr.surrogate_exact,
        min_chars=tree.getwidth()[0],
    )


def run_spec(tree: Any) -> tuple[Ranges, int, bool] | None:
    r"""The character set and run length for a pattern that is one large counted repeat of one character.

    For ``\w{30000}``, a line must hold 30000 consecutive word characters; other patterns give None.

    Searching for such a repeat finds a match exactly where a line holds ``lo``
    consecutive characters of the set, whatever the maximum, greediness or
    possessiveness: the native core counts runs instead of compiling the count.
    """
    if len(tree) != 1:
        return None
    op, av = tree[0]
    if not is_repeat(op):
        return None
    lo, _hi, sub = av
    if lo <= LARGE_COUNT or len(sub) != 1 or sub[0][0] not in (C.LITERAL, C.NOT_LITERAL, C.ANY, C.IN):
        return None
    flags = tree.state.flags
    atom_op, atom_av = sub[0]
    ranges = atom_set(atom_op, atom_av, flags, global_context(flags))
    return searchable(ranges), lo, _surrogates_follow_fffd(ranges)
