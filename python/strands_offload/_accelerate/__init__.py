"""accelerate(): strands-agents' own hot paths, answered by the native core, with nothing else changed.

For users who keep ``strands-agents`` as it is (``ContextOffloader``, ``Agent(context_manager=...)``):
one call swaps, in place, the SDK functions that do the heavy lifting on every tool call and model
call for replacements built around them (see :data:`strands_offload._seam.ACCELERATE_TARGETS`):

* the offloader's grep and line pages (``_search_content``, also where the plugin and the context
  manager's retrieval tool copied it at import);
* ``json.dumps`` in the offloader plugin, the stash, the retrieval tool and the truncate and summarize
  methods, through a stand-in for those modules' ``json`` global (never ``json.dumps`` process-wide);
* the stash's encoder and the base model's heuristic token estimate (``Model.count_tokens``);
* the turn itself (seam feature ``accelerate-turn``): the deep copies of the conversation the event
  loop makes on every model call, through a stand-in for the ``copy`` global of
  ``strands.event_loop.event_loop`` and ``strands.event_loop.streaming`` (see :mod:`._copy`), and the
  tracer's message events, ``Tracer._add_event_messages`` (see :mod:`._spans`).

Results are byte for byte the SDK's: every replacement hands the inputs it cannot answer
identically back to the original. Before anything is swapped, the seam checks that every name is
there with the expected shape; when one is not, it warns once and nothing is swapped (when only the
turn's names fail their check, the rest is swapped). A replacement whose native code fails on its own
(never expected) is put back to the SDK's object at once, with a warning: the breaker.

The previews (``_build_preview`` of the truncate method, ``ContextOffloader._slice_preview``) are
left alone: they are a few slices of the text whose size is the preview's, already as fast in
Python as natively. What feeds them (the JSON dumps) is swapped.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from types import ModuleType
from typing import Any

from .. import _seam
from . import _copy
from ._json import stand_in

__all__ = ["accelerate", "accelerated", "deaccelerate", "is_accelerated"]

logger = logging.getLogger(__name__)

_LOCK = threading.RLock()
# target -> (the SDK's object, the object we put there), while accelerated.
_SWAPPED: dict[_seam.SwapTarget, tuple[Any, Any]] = {}


def is_accelerated() -> bool:
    """Whether :func:`accelerate` is in effect."""
    return bool(_SWAPPED)


def _plan() -> dict[_seam.SwapTarget, Any]:
    """What to put in place of each target (built around the current originals)."""
    # Imported here: it loads the context manager measures, which import the Strands SDK.
    from ._replacements import make_encode, make_estimate, make_search
    from ._spans import make_add_event_messages

    json_stand_in: ModuleType = stand_in()
    copy_stand_in: ModuleType = _copy.stand_in()
    made: dict[int, Any] = {}  # one replacement per distinct original (the copies of _search_content)
    plan: dict[_seam.SwapTarget, Any] = {}
    turn = [t for t in _seam.ACCELERATE_TARGETS if t.feature == "accelerate-turn"]
    copies = [t for t in turn if t.kind == "copy"]
    _copy.on_surprise(lambda error: _trip(copies, error))
    for target in _seam.ACCELERATE_TARGETS:
        if not _seam.available(target.feature):
            continue
        original = _seam.swap_get(target)
        if target.kind == "json":
            plan[target] = json_stand_in
            continue
        if target.kind == "copy":
            plan[target] = copy_stand_in
            continue
        if id(original) not in made:
            build: Callable[[Any], Any]
            if target.name == "_search_content":
                build = make_search
            elif target.name == "_encode":
                build = make_encode
            elif target.name == "Tracer._add_event_messages":
                build = _span_builder(target, make_add_event_messages)
            else:

                def build(estimate: Any) -> Any:
                    return make_estimate(
                        estimate,
                        _seam.accelerate_fallback("_count_content_block_tokens"),
                        _seam.accelerate_fallback("_heuristic_estimate_text"),
                        _seam.accelerate_fallback("_heuristic_estimate_json"),
                    )

            made[id(original)] = build(original)
        plan[target] = made[id(original)]
    return plan


def _span_builder(target: _seam.SwapTarget, make: Callable[..., Any]) -> Callable[[Any], Any]:
    def build(method: Any) -> Any:
        return make(method, lambda error: _trip([target], error))

    return build


def _trip(targets: list[_seam.SwapTarget], error: BaseException) -> None:
    """The breaker: put the SDK's own objects back at ``targets`` after a native failure."""
    restored: list[str] = []
    with _LOCK:
        for target in targets:
            swapped = _SWAPPED.pop(target, None)
            if swapped is None:
                continue
            original, replacement = swapped
            if _seam.swap_get(target) is replacement:
                _seam.swap_set(target, original)
                restored.append(target.dotted)
    if restored:
        logger.warning(
            "restored=<%s>, error=<%r> | native replacement failed, strands-agents' own code restored",
            ", ".join(restored),
            error,
        )


def accelerate() -> bool:
    """Swap strands-agents' pure-Python hot paths for native ones, in place; idempotent.

    Returns:
        True when the hot paths are accelerated (now or already), False when the installed
        strands-agents failed the seam's check (one warning is given) and nothing was swapped.
    """
    with _LOCK:
        if _SWAPPED:
            logger.debug("targets=<%d> | already accelerated", len(_SWAPPED))
            return True
        if not _seam.available("accelerate"):
            return False
        plan = _plan()
        for target, replacement in plan.items():
            original = _seam.swap_get(target)
            _seam.swap_set(target, replacement)
            _SWAPPED[target] = (original, replacement)
        logger.info(
            "replaced=<%s> | strands-agents hot paths accelerated",
            ", ".join(target.dotted for target in plan),
        )
        return True


def deaccelerate() -> None:
    """Put back every object :func:`accelerate` replaced (the very same objects); idempotent.

    A target that someone else replaced after :func:`accelerate` is left as they set it.
    """
    with _LOCK:
        if not _SWAPPED:
            return
        restored: list[str] = []
        for target, (original, replacement) in list(_SWAPPED.items()):
            if _seam.swap_get(target) is replacement:
                _seam.swap_set(target, original)
                restored.append(target.dotted)
            else:
                logger.warning(
                    "target=<%s> | replaced by someone else since accelerate(), left as it is", target.dotted
                )
            del _SWAPPED[target]
        logger.info("restored=<%s> | strands-agents hot paths restored", ", ".join(restored))


@contextmanager
def accelerated() -> Iterator[bool]:
    """:func:`accelerate` for the duration of a ``with`` block.

    Yields:
        What :func:`accelerate` returned. On exit the swap is undone, unless the hot paths were
        already accelerated on entry (then they stay so).
    """
    with _LOCK:
        was_accelerated = is_accelerated()
        active = accelerate()
    try:
        yield active
    finally:
        if not was_accelerated:
            deaccelerate()
