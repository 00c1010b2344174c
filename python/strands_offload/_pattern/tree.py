"""Python's own parse trees of a pattern, and the questions asked of them.

The parser and its opcodes are private to ``re``; they come through the seam,
which checks that this interpreter still has them.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from .. import _seam

_seam.require("re-parser")
C: Any = _seam.re_constants()
P: Any = _seam.re_parser()

# Opcodes that only some Python versions have (None where the parser never emits them).
POSSESSIVE_REPEAT: Any = getattr(C, "POSSESSIVE_REPEAT", None)
ATOMIC_GROUP: Any = getattr(C, "ATOMIC_GROUP", None)
FAILURE: Any = getattr(C, "FAILURE", None)

Items = Iterable[tuple[Any, Any]]


def parse(pattern: str) -> Any:
    """The parse tree ``re`` builds for a pattern, with no flags given from outside."""
    return P.parse(pattern, 0)


def is_repeat(op: Any) -> bool:
    """Whether an opcode is a repeat (greedy, lazy or possessive); its argument is (min, max, body)."""
    return op in (C.MAX_REPEAT, C.MIN_REPEAT) or op is POSSESSIVE_REPEAT


def walk(items: Items) -> Iterable[tuple[Any, Any]]:
    """Every node of a parse tree, depth first."""
    for op, av in items:
        yield op, av
        if op is C.BRANCH:
            for alt in av[1]:
                yield from walk(alt)
        elif op is C.SUBPATTERN:
            yield from walk(av[3])
        elif is_repeat(op):
            yield from walk(av[2])
        elif op in (C.ASSERT, C.ASSERT_NOT):
            yield from walk(av[1])
        elif op is C.GROUPREF_EXISTS:
            yield from walk(av[1])
            if av[2] is not None:
                yield from walk(av[2])
        elif op is ATOMIC_GROUP:
            yield from walk(av)


def zero_width(items: Items) -> bool:
    """Whether a sequence can only match the empty string (assertions, empty groups)."""
    for op, av in items:
        if op in (C.AT, C.ASSERT, C.ASSERT_NOT):
            continue
        if is_repeat(op):
            if zero_width(av[2]):
                continue
        elif op is C.SUBPATTERN:
            if zero_width(av[3]):
                continue
        elif op is C.BRANCH:
            if all(zero_width(alt) for alt in av[1]):
                continue
        elif op is ATOMIC_GROUP and zero_width(av):
            continue
        return False
    return True


def has_groups(items: Items) -> bool:
    """Whether a capturing group sits anywhere inside (its number must be kept)."""
    return any(op is C.SUBPATTERN and av[0] is not None for op, av in walk(items))


def refers_to_groups(items: Items) -> bool:
    """Whether a back-reference or conditional can observe what a group captured."""
    return any(op in (C.GROUPREF, C.GROUPREF_EXISTS) for op, _ in walk(items))
