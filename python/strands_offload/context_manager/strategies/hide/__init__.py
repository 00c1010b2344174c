"""Hide strategies and the ``Hide`` builder: what a request carries besides the conversation."""

from __future__ import annotations

from typing import Any

from ._query import ACKNOWLEDGEMENTS, STOP_WORDS
from .tool_specs import NEVER_HIDDEN, HideToolSpecsConfig, HideToolSpecsStrategy

__all__ = ["ACKNOWLEDGEMENTS", "NEVER_HIDDEN", "STOP_WORDS", "Hide", "HideToolSpecsConfig", "HideToolSpecsStrategy"]


class _Hide:
    """Builds hide strategies: ``Hide.tool_specs(target, config).when(count=...)``."""

    def tool_specs(
        self, target: Any = "tool_specs", config: HideToolSpecsConfig | None = None
    ) -> HideToolSpecsStrategy:
        """Show each request only the tool specs its turn needs, ranked against the turn's query.

        Args:
            target: ``"tool_specs"`` (every spec is a candidate) or a list of ``"toolSpec::<name>"``,
                ``"toolSpec::*"`` (candidates) and ``"!toolSpec::<name>"`` (always shown, outside the
                budget); a list of exclusions alone makes every other spec a candidate.
            config: ``search`` (a ranker, default native BM25), ``keep`` (default 10),
                ``always_hide`` (names never shown), ``on_failure`` (``"all"`` or ``"none"``).

        Raises:
            ValueError: For an empty target list, a malformed entry, a name both candidate and
                always shown, a ``keep`` below 1 or an unknown ``on_failure``.
            TypeError: For a config key or value of the wrong kind.
        """
        return HideToolSpecsStrategy(target, config)


Hide = _Hide()
"""The builder of hide strategies (as the TypeScript SDK's ``Hide``)."""
