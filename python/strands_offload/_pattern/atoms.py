"""The code points a one-character atom matches, as Python's ``re`` decides them.

Classes, case folding and flag scopes are never derived from tables of our own:
each set is found by running the interpreter's ``re`` over every code point, so
the answer follows that Python's Unicode version.
"""

from __future__ import annotations

import functools
import re
from typing import Any

from .. import _native, _seam
from .ranges import MAXCODE, NEWLINE, Ranges, complement, normalize, runs, subtract
from .tree import C

# Raised by the translation here and by the native matcher alike (a ValueError).
UntranslatablePattern = _native.UntranslatablePattern

Context = tuple[str, str]
"""Inline-flag groups around an atom, rebuilding the scopes it sits in (opening, closing)."""


@functools.cache
def all_chars() -> str:
    """Every code point, in order (surrogates included)."""
    return "".join(map(chr, range(MAXCODE + 1)))


@functools.cache
def python_set(prefix: str, atom: str, suffix: str = "") -> tuple[tuple[int, int], ...]:
    """The code points a one-character Python pattern matches, found by Python itself.

    ``prefix`` and ``suffix`` are the inline-flag groups the atom sits in.
    """
    rx = re.compile(f"{prefix}(?:{atom})+{suffix}")
    return tuple((m.start(), m.end() - 1) for m in rx.finditer(all_chars()))


def word_ranges() -> tuple[tuple[int, int], ...]:
    r"""The code points ``\w`` matches in a Unicode ``str`` pattern, as this interpreter's ``re`` says.

    The one definition of a word character in the package: the grep translator's ``\w`` and
    ``\b``, and the keyword scorer's words (whose native tables for CPython 3.10-3.13 are this
    answer computed ahead of time, pinned by a test on every Python).
    """
    return python_set("", r"\w")


@functools.cache
def _case_universe() -> tuple[tuple[int, ...], str, tuple[tuple[int, int], ...]]:
    """Code points that ``(?i)`` can relate to another code point.

    Outside this set a character only ever matches itself, with or without
    ``(?i)``; inside it, membership is asked of Python's ``re`` directly.
    """
    everything = all_chars()
    cps: set[int] = set()
    for base in range(0, MAXCODE + 1, 256):
        block = everything[base : base + 256]
        if block.lower() == block and block.upper() == block and block.casefold() == block:
            continue
        for cp in range(base, min(base + 256, MAXCODE + 1)):
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
    return ordered, "".join(map(chr, ordered)), tuple(runs(ordered))


_CATEGORY_SOURCE = {
    C.CATEGORY_DIGIT: r"\d",
    C.CATEGORY_NOT_DIGIT: r"\D",
    C.CATEGORY_SPACE: r"\s",
    C.CATEGORY_NOT_SPACE: r"\S",
    C.CATEGORY_WORD: r"\w",
    C.CATEGORY_NOT_WORD: r"\W",
}


def _esc(cp: int) -> str:
    return f"\\U{cp:08x}"


def _atom_source(op: Any, av: Any) -> str:
    """A one-character Python pattern with the same meaning as the atom."""
    if op is C.LITERAL:
        return f"[{_esc(av)}]"
    if op is C.NOT_LITERAL:
        return f"[^{_esc(av)}]"
    if op is C.ANY:
        return "."
    parts: list[str] = []
    for iop, iav in av:
        if iop is C.NEGATE:
            parts.insert(0, "^")
        elif iop is C.LITERAL:
            parts.append(_esc(iav))
        elif iop is C.RANGE:
            parts.append(f"{_esc(iav[0])}-{_esc(iav[1])}")
        elif iop is C.CATEGORY:
            parts.append(_CATEGORY_SOURCE[iav])
        else:
            raise UntranslatablePattern(f"character class item {iop} is not supported")
    return "[" + "".join(parts) + "]"


def _flag_letters(flags: int) -> str:
    return "".join(
        letter for flag, letter in ((re.ASCII, "a"), (re.UNICODE, "u"), (re.IGNORECASE, "i")) if flags & flag
    )


def global_context(flags: int) -> Context:
    """The context of an atom at the top of a pattern whose global flags are ``flags``."""
    letters = _flag_letters(flags & (re.ASCII | re.IGNORECASE))
    return (f"(?{letters})" if letters else "", "")


def scoped_context(ctx: Context, add: int, delete: int) -> Context:
    """The context inside a ``(?flags-flags:...)`` group opened in ``ctx``."""
    plus, minus = _flag_letters(add), _flag_letters(delete & re.IGNORECASE)
    if not plus and not minus:
        return ctx
    opener = f"(?{plus}-{minus}:" if minus else f"(?{plus}:"
    return ctx[0] + opener, ")" + ctx[1]


def atom_set(op: Any, av: Any, flags: int, ctx: Context = ("", "")) -> Ranges:
    """The code points one atom matches (Python semantics).

    ``flags`` are the flags in force and ``ctx`` the inline-flag groups the atom
    sits in: Python applies a scoped ``(?a:...)`` or ``(?u:...)`` differently to
    classes and to word boundaries, so class semantics are asked of Python in the
    same nesting rather than derived from the flags.
    """
    if op is C.ANY:
        return [(0, MAXCODE)] if flags & re.DOTALL else complement([(NEWLINE, NEWLINE)])
    if op is C.LITERAL:
        base: Ranges = [(av, av)]
    elif op is C.NOT_LITERAL:
        base = complement([(av, av)])
    else:
        negate = False
        acc: list[tuple[int, int]] = []
        for iop, iav in av:
            if iop is C.NEGATE:
                negate = True
            elif iop is C.LITERAL:
                acc.append((iav, iav))
            elif iop is C.RANGE:
                acc.append((iav[0], iav[1]))
            elif iop is C.CATEGORY:
                acc.extend(python_set(ctx[0], f"[{_CATEGORY_SOURCE[iav]}]", ctx[1]))
            else:
                raise UntranslatablePattern(f"character class item {iop} is not supported")
        base = normalize(acc)
        if negate:
            base = complement(base)
    if flags & re.IGNORECASE:
        ordered, text, universe = _case_universe()
        rx = re.compile(ctx[0] + _atom_source(op, av) + ctx[1])
        hits = [ordered[m.start()] for m in rx.finditer(text)]
        base = normalize([*subtract(base, list(universe)), *runs(hits)])
    return base
