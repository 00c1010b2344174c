"""``json.dumps`` answered by the native writer only where the answer is provably ``json.dumps``'s.

The native writer matches ``json.dumps`` for the built-in types with the default options and
``indent``. Three things could still tell the two apart, and each is handed to ``json``:

* Subclasses: ``json`` iterates a list or tuple subclass through its ``__iter__`` and reads a dict
  subclass through its ``items()`` (and, in the indented encoder of Python 3.12 and older, its
  ``__len__``). The native walk runs in its exact-types mode here: the first value or key whose
  type is not exactly a built-in one stops it, and ``json`` answers the whole call.
* Nesting depth: ``json`` gives up with ``RecursionError`` at a depth that depends on the
  interpreter (Python frames per level in the indented encoder before 3.13, the C recursion
  budget elsewhere). The native walk runs a few Python frames and two interpreter entries deeper
  than ``json`` would (see :func:`_deeper`), so it gives up first and ``json`` then answers; an
  indented dump nested :data:`INDENT_DEPTH` levels or more is handed to ``json`` too.
* Options: anything but ``indent`` (and options given at their default values) goes to ``json``,
  as does any call while ``json.dumps`` itself has been replaced by someone else.

Whenever the native writer raises, ``json`` is asked instead, so errors are ``json``'s own.
"""

from __future__ import annotations

import json
import json.encoder
from collections.abc import Callable
from types import ModuleType
from typing import Any

from .. import _native, _seam

__all__ = ["INDENT_DEPTH", "dumps", "dumps_len", "json_is_stdlib", "native_dumps", "stand_in"]

#: Indented dumps nested this deep or deeper are left to ``json`` (its budget there is Python frames).
INDENT_DEPTH = 32
# Extra Python frames around the native walk: compact dumps need a few (json.dumps itself runs
# three frames before its C encoder starts), indented ones enough to cover INDENT_DEPTH levels of
# the pure-Python encoder.
_FRAMES_COMPACT = 8
_FRAMES_INDENT = INDENT_DEPTH + 16
_MAX_INDENT = 1024

# Options of json.dumps and the value that leaves the output as the native writer's.
_MISSING = object()
_DEFAULTS: dict[str, object] = {
    "skipkeys": False,
    "ensure_ascii": True,
    "check_circular": True,
    "allow_nan": True,
    "cls": None,
    "separators": None,
    "default": None,
    "sort_keys": False,
}

# The json.dumps of the standard library, if that is what json.dumps is at import.
# Without the C encoder json.dumps recurses in Python frames even when compact: leave it alone then.
_JSON_DUMPS: Callable[..., str] | None = (
    json.dumps
    if getattr(json.dumps, "__module__", None) == "json" and getattr(json.encoder, "c_make_encoder", None)
    else None
)


def _descend(job: tuple[int, Callable[..., Any], tuple[Any, ...]]) -> Any:
    frames, function, args = job
    if frames:
        return _descend((frames - 1, function, args))
    return function(*args)


def _enter(job: tuple[int, Callable[..., Any], tuple[Any, ...]]) -> Any:
    # Called by map() from C: one more interpreter entry (C recursion budget on 3.12+).
    return next(map(_descend, (job,)))


def _deeper(frames: int, function: Callable[..., Any], *args: Any) -> Any:
    """``function(*args)`` run ``frames`` Python frames and two interpreter entries below the caller.

    The native walk counts against the same recursion budget as ``json``; starting it deeper than
    ``json`` would start means it runs out first, never ``json`` alone.
    """
    return next(map(_enter, ((frames, function, args),)))


def _dump_indented(value: Any, indent: Any) -> str | None:
    return _native._json_dumps_exact(value, indent=indent)


def native_dumps(value: Any, indent: Any = None) -> str | None:
    """``json.dumps(value, indent=indent)`` from the native writer, or ``None`` when ``json`` must answer."""
    if not json_is_stdlib():
        return None
    if indent is None:
        step = None
    elif type(indent) is int and 0 < indent <= _MAX_INDENT:
        step = " " * indent
    elif type(indent) is str and indent:
        step = indent
    else:
        return None  # indent 0, "" or an unusual type: json's own rules
    try:
        if step is None:
            text: str | None = _deeper(_FRAMES_COMPACT, _native._json_dumps_exact, value)
        else:
            text = _deeper(_FRAMES_INDENT, _dump_indented, value, indent)
    except Exception:  # json raises its own error (or, past our budget, answers)
        return None
    if text is None:  # a subclass somewhere: json answers
        return None
    if step is not None and "\n" + step * INDENT_DEPTH in text:
        # Every newline is structural (ensure_ascii escapes them inside strings), so this finds
        # exactly the dumps nested INDENT_DEPTH levels or more.
        return None
    return text


def json_is_stdlib() -> bool:
    """Whether ``json.dumps`` is still the standard library's with its C encoder (nobody replaced it)."""
    return _JSON_DUMPS is not None and json.dumps is _JSON_DUMPS


def dumps_len(value: Any) -> int | None:
    """``len(json.dumps(value))`` without building the text, or ``None`` when ``json`` must answer."""
    if not json_is_stdlib():
        return None
    try:
        length: int | None = _deeper(_FRAMES_COMPACT, _native._json_dumps_len_exact, value)
    except Exception:
        return None
    return length


def dumps(obj: Any, *args: Any, **kwargs: Any) -> str:
    """``json.dumps`` with the same arguments and result; plain values with default options go native.

    Args:
        obj: The value to serialize.
        *args: Passed to ``json.dumps`` (which takes none positionally: it raises its own error).
        **kwargs: ``json.dumps`` options; only ``indent`` and options at their default values are
            answered natively.

    Returns:
        The JSON text, exactly as ``json.dumps`` returns it.
    """
    if not args:
        indent = None
        for key, value in kwargs.items():
            if key == "indent":
                indent = value
            elif _DEFAULTS.get(key, _MISSING) is not value:
                break
        else:
            text = native_dumps(obj, indent)
            if text is not None:
                return text
    return json.dumps(obj, *args, **kwargs)


class _JsonStandIn(ModuleType):
    """The ``json`` module as seen by one SDK module: its own ``dumps``, the real module's everything else."""

    def __getattr__(self, name: str) -> Any:
        # Looked up at the time of use, so later changes to json (a patched loads) are seen.
        return getattr(json, name)

    def __dir__(self) -> list[str]:
        return sorted({*dir(json), "dumps"})

    def __repr__(self) -> str:
        return "<module 'json' (strands_offload stand-in: dumps answered natively where identical)>"


def stand_in() -> ModuleType:
    """A module to put where a module's ``json`` global was.

    Its ``dumps`` is :func:`dumps`; every other name is looked up on the real ``json`` module at the
    time of use.
    """
    module = _JsonStandIn("json", json.__doc__)
    for inherited in ("__package__", "__loader__", "__spec__"):
        del module.__dict__[inherited]  # forwarded to json like any other name
    module.__dict__.update({"dumps": dumps, _seam.STAND_IN_MARK: True})
    return module
