"""How large a counted repeat may get before the engines are spared writing it out.

The engines expand ``X{n}`` into ``n`` copies of ``X``. Huge counts would cost
seconds to compile and blow up the lazy DFA, so counts are bounded by the longest
line of the text at hand (a match never crosses a line), and what is still too
large is left for the backtracking engine to count.
"""

from __future__ import annotations

from typing import Any

from .tree import C, Items, is_repeat, walk

# Counted repeats up to this count are expanded as they are; beyond it the pattern
# is translated for the text at hand (see ``translate``'s ``line_cap``).
LARGE_COUNT = 16

# Largest program (in characters of pattern, counted repeats written out) a repeat may
# expand to: about 6 ms of compiling. Python's \w alone is 11,500 characters once
# spelled as code-point ranges, so \w{100} is beyond it.
EXPANSION_BUDGET = 200_000
# Largest count of single-character steps a repeat may expand to. Beyond it the lazy
# DFA's states (sets of steps) grow with the count and no longer fit its cache:
# (ab){2000} on lines of "abab..." takes seconds written out, milliseconds counted.
STEPS_BUDGET = 1_000


def within_budget(expanded: int, steps: int) -> bool:
    """Whether a repeat, written out, stays cheap for the engines to compile and run."""
    return expanded <= EXPANSION_BUDGET and steps <= STEPS_BUDGET


def large_counts(tree: Items) -> bool:
    """Whether a parse tree holds a counted repeat worth bounding by the text's lines."""
    for op, av in walk(tree):
        if is_repeat(op):
            lo, hi = av[0], av[1]
            if lo > LARGE_COUNT or (hi != C.MAXREPEAT and hi > LARGE_COUNT):
                return True
    return False


def line_cap_for(longest_line: int) -> int:
    """A bound on line length for ``translate``: the next power of two above the longest line.

    Rounding up lets texts of similar shape share one compiled matcher.
    """
    return 1 << max(longest_line, 1).bit_length()


def fit_repeat(lo: int, hi: int, sub: Any, line_cap: int | None, captures_observable: bool) -> tuple[int, int] | None:
    """The bounds of a counted repeat that mean the same on lines of at most ``line_cap`` characters.

    A match never crosses a line, so a repeat whose every iteration takes at least
    one character cannot make more than ``line_cap`` iterations: a minimum beyond
    that cannot match (None), a maximum beyond it is as good as unbounded. When an
    iteration may be empty, a huge maximum also makes the minimum irrelevant (the
    missing iterations match the empty string), but only when no back-reference
    or conditional can tell which iteration captured what (``captures_observable``).
    """
    cap = line_cap
    if cap is None:
        return lo, hi
    width = sub.getwidth()[0]
    if width >= 1:
        if lo > cap // width:
            return None
        if hi != C.MAXREPEAT and hi > cap:
            return lo, C.MAXREPEAT
        return lo, hi
    if not captures_observable and (lo > cap or (hi != C.MAXREPEAT and hi > cap)):
        return 0, C.MAXREPEAT
    return lo, hi
