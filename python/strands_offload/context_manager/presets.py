"""Presets: the manager presets of ``ContextManager.from_strategy`` and the strategy presets.

Manager presets (``"auto"``, ``"agentic"``, ``"cache-optimized"``, ``"tool_registry"``) are the
values ``ContextManager.from_strategy`` (and so ``Agent(context_manager=...)``) takes by name: the
table :data:`MANAGER_PRESETS` is the one place they are defined, read by the manager and by the
benches. Strategy presets are names usable inside ``strategies`` that expand to concrete strategies.

The names are the stable contract; what they expand to may be tuned between releases.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any

from strands.experimental.context_manager import STRATEGY_PRESET_NAMES, StrategyPresetName

from .strategies.hide import Hide
from .strategies.offload import Offload

__all__ = [
    "CONTEXT_MANAGER_PRESETS",
    "MANAGER_PRESETS",
    "STRATEGY_PRESET_NAMES",
    "ManagerPreset",
    "StrategyPresetName",
    "resolve_preset",
    "resolve_strategies",
]

# The manager presets the reference knows (its ``CONTEXT_MANAGER_PRESETS``): an unknown name's error
# lists these, as the reference's does.
CONTEXT_MANAGER_PRESETS: tuple[str, ...] = ("auto", "agentic")


@dataclass(frozen=True)
class ManagerPreset:
    """What one manager preset builds: a truncation of tool results, a summary, and its options."""

    truncate_above: int
    """Tool results above this many tokens are truncated..."""
    preview_tokens: int
    """...to previews of this many tokens."""
    summarize_at: float
    """The utilization at which older messages are summarized."""
    preserve_recent: int = 4
    """Messages a summary leaves as they are."""
    cache_aware_truncation: bool = False
    """Truncations of blocks already in the provider's cache wait (``cache_aware``)."""
    cache_aligned_summaries: bool = False
    """Summaries read the agent's cached prefix (``cache_aligned``) and wait as truncations do."""
    agentic: bool = False
    """The manager registers the agentic context tools and their middleware when bound."""
    hide_tool_specs: tuple[int, int] | None = None
    """``(keep, count)``: each request shows the ``keep`` tool specs its turn needs once ``count`` exist."""

    def strategies(self) -> list[Any]:
        """New strategy objects for this preset, in pipeline order."""
        built: list[Any] = [
            Offload.truncate("tool_results", {"preview_tokens": self.preview_tokens}).when(
                threshold=self.truncate_above, cache_aware=self.cache_aware_truncation
            ),
            Offload.summarize("*", cache_aligned=self.cache_aligned_summaries).when(
                utilization=self.summarize_at,
                preserve_recent=self.preserve_recent,
                cache_aware=self.cache_aligned_summaries,
            ),
        ]
        if self.hide_tool_specs is not None:
            keep, count = self.hide_tool_specs
            built.append(Hide.tool_specs(config={"keep": keep}).when(count=count))
        return built


_AUTO = ManagerPreset(truncate_above=1500, preview_tokens=750, summarize_at=0.85)

# Every manager preset by name ("cache-optimized" and "tool_registry" are ours: the reference's
# CONTEXT_MANAGER_PRESETS, and so ``Agent(context_manager=...)``, do not know them).
MANAGER_PRESETS: Mapping[str, ManagerPreset] = MappingProxyType(
    {
        "auto": _AUTO,
        "agentic": ManagerPreset(truncate_above=8000, preview_tokens=750, summarize_at=1, agentic=True),
        # "auto"'s previews; summaries read the agent's cached prefix and come at 70% of the window
        # (as the SDK's "proactive_summarization"): reads of a smaller prefix on every call cost less
        # than the extra summaries. Edits of blocks already cached wait for one that breaks the prefix.
        "cache-optimized": ManagerPreset(
            truncate_above=1500,
            preview_tokens=750,
            summarize_at=0.7,
            cache_aware_truncation=True,
            cache_aligned_summaries=True,
        ),
        # "auto"'s strategies, and each request shows the 10 tool specs its turn needs once 20 or more exist.
        "tool_registry": ManagerPreset(
            truncate_above=_AUTO.truncate_above,
            preview_tokens=_AUTO.preview_tokens,
            summarize_at=_AUTO.summarize_at,
            hide_tool_specs=(10, 20),
        ),
    }
)

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
