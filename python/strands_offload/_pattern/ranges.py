"""Sets of code points as sorted, disjoint, non-adjacent inclusive ranges.

Pure arithmetic, no ``re``: the translator builds every character class from these
operations so that the classes it writes are exactly the sets Python matches.
"""

from __future__ import annotations

import bisect
from collections.abc import Iterable, Sequence

Ranges = list[tuple[int, int]]

MAXCODE = 0x10FFFF
NEWLINE = 0x0A
SURROGATES = (0xD800, 0xDFFF)
REPLACEMENT = 0xFFFD


def normalize(ranges: Iterable[tuple[int, int]]) -> Ranges:
    """Sort and merge ranges, so that equal sets always have equal spellings."""
    out: Ranges = []
    for lo, hi in sorted(ranges):
        if out and lo <= out[-1][1] + 1:
            if hi > out[-1][1]:
                out[-1] = (out[-1][0], hi)
        else:
            out.append((lo, hi))
    return out


def complement(ranges: Ranges) -> Ranges:
    """Every code point not in a normalized set."""
    out: Ranges = []
    nxt = 0
    for lo, hi in ranges:
        if lo > nxt:
            out.append((nxt, lo - 1))
        nxt = hi + 1
    if nxt <= MAXCODE:
        out.append((nxt, MAXCODE))
    return out


def subtract(a: Ranges, b: Ranges) -> Ranges:
    """The code points of ``a`` outside ``b`` (``b`` need not be normalized)."""
    return complement(normalize([*complement(a), *b]))


def contains(ranges: Ranges, cp: int) -> bool:
    """Whether a normalized set holds ``cp``, by binary search."""
    i = bisect.bisect_right(ranges, (cp, MAXCODE + 1)) - 1
    return i >= 0 and ranges[i][0] <= cp <= ranges[i][1]


def overlap(ranges: Ranges, lo: int, hi: int) -> int:
    """Number of code points of [lo, hi] in the set."""
    return sum(max(0, min(hi, h) - max(lo, l_) + 1) for l_, h in ranges)


def runs(indices: Sequence[int]) -> Ranges:
    """The set of the given code points, merged into ranges."""
    return normalize((i, i) for i in indices)


def searchable(ranges: Ranges) -> Ranges:
    """The part of a set the engines are given: no newline and no lone surrogate.

    A line never holds a newline, and the engines read lone surrogates as U+FFFD;
    dropping both lets one pass over the whole text never match across lines.
    """
    return subtract(ranges, [(NEWLINE, NEWLINE), SURROGATES])
