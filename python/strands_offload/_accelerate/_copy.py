"""``copy.deepcopy`` for the event loop's per-call copies of the conversation, made natively.

On every model call the SDK deep-copies ``agent.messages`` and the tool specs for the model
middleware's context, and ``_normalize_messages`` copies the messages once more. accelerate() puts a
stand-in where those two modules keep their ``copy`` global: its ``deepcopy`` walks exact dicts,
lists and tuples natively with ``copy.deepcopy``'s semantics (see ``rust/bindings/src/deepcopy.rs``):
one memo per call (shared sub-objects stay shared, a list holding itself is copied once), exact
``str``, ``bytes``, ``int``, ``float``, ``bool`` and ``None`` shared, a tuple whose items all come
back unchanged returned itself, and every other value (a subclass, a custom object, a container
nested deeper than 128 levels) handed to ``copy.deepcopy`` with the memo of the copy in progress.
Every call makes a new copy: nothing is cached across calls, so a guardrail, a strategy or a
middleware that changes a message in place between calls is copied as it is then.

Known difference: a structure nested deeper than Python's recursion limit allows ``copy.deepcopy``
raises ``RecursionError``; here its first 128 levels are copied natively, so nesting up to about 128
levels beyond that limit is copied instead of raising.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from types import ModuleType
from typing import Any

from .. import _native, _seam

__all__ = ["deepcopy", "stand_in"]

# copy.deepcopy as imported: a later replacement (process-wide) is followed by handing it every call.
_DEEPCOPY: Callable[..., Any] = copy.deepcopy
_NIL: list[Any] = []
_SURPRISE: list[Callable[[BaseException], None]] = []


def deepcopy(x: Any, memo: dict[int, Any] | None = None, _nil: list[Any] = _NIL) -> Any:
    """``copy.deepcopy(x)``; the usual one-argument call is answered natively.

    Args:
        x: The value to copy.
        memo: A memo given by the caller: the call goes to ``copy.deepcopy``.
        _nil: ``copy.deepcopy``'s private sentinel, passed on when given.

    Returns:
        The deep copy, as ``copy.deepcopy`` makes it.
    """
    if memo is not None or _nil is not _NIL or copy.deepcopy is not _DEEPCOPY:
        return copy.deepcopy(x, memo) if _nil is _NIL else copy.deepcopy(x, memo, _nil)
    try:
        result = _native._deep_copy(x, _DEEPCOPY)
    except SystemError as error:  # the native walk's own failure, not one of Python's code it ran
        for trip in _SURPRISE:
            trip(error)
        return _DEEPCOPY(x)
    return result


def on_surprise(trip: Callable[[BaseException], None]) -> None:
    """Call ``trip(error)`` when the native copy fails on its own (the breaker of accelerate())."""
    _SURPRISE[:] = [trip]


class _CopyStandIn(ModuleType):
    """The ``copy`` module as seen by one SDK module: its own ``deepcopy``, the real module's everything else."""

    def __getattr__(self, name: str) -> Any:
        return getattr(copy, name)

    def __dir__(self) -> list[str]:
        return sorted({*dir(copy), "deepcopy"})

    def __repr__(self) -> str:
        return "<module 'copy' (strands_offload stand-in: deepcopy of plain data made natively)>"


def stand_in() -> ModuleType:
    """A module to put where a module's ``copy`` global was (``deepcopy`` native, the rest ``copy``'s)."""
    module = _CopyStandIn("copy", copy.__doc__)
    for inherited in ("__package__", "__loader__", "__spec__"):
        del module.__dict__[inherited]
    module.__dict__.update({"deepcopy": deepcopy, _seam.STAND_IN_MARK: True})
    return module
