"""Strategy presets: names usable inside ``strategies`` that expand to concrete strategies.

The names are the stable contract; what they expand to may be tuned between releases.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from strands.experimental.context_manager import STRATEGY_PRESET_NAMES, StrategyPresetName

from .strategies.offload import Offload

__all__ = ["STRATEGY_PRESET_NAMES", "StrategyPresetName", "resolve_preset", "resolve_strategies"]

_PRESETS: dict[str, Callable[[], list[Any]]] = {
    "proactive_summarization": lambda: [Offload.summarize("*").when(utilization=0.7, preserve_recent=0.7)],
    "large_tool_offloading": lambda: [Offload.truncate("tool_results", {"preview_tokens": 1000}).when(threshold=2500)],
    "overflow_protection": lambda: [Offload.truncate("*").when(utilization=1.0, preserve_recent=4)],
    "stale_tool_cleanup": lambda: [Offload.drop("tool_results").when(preserve_recent=5)],
}


def resolve_preset(name: str) -> list[Any]:
    """The strategies of preset ``name``.

    Raises:
        ValueError: For a name that is not a preset.
    """
    build = _PRESETS.get(name)
    if build is None:
        raise ValueError(f'Unknown strategy preset: "{name}". Valid presets: {", ".join(STRATEGY_PRESET_NAMES)}')
    return build()


def resolve_strategies(entries: Iterable[Any]) -> list[Any]:
    """Strategies and preset names, flattened to strategies in order."""
    resolved: list[Any] = []
    for entry in entries:
        resolved.extend(resolve_preset(entry) if isinstance(entry, str) else [entry])
    return resolved
