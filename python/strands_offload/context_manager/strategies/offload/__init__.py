"""Offload strategies and the ``Offload`` builder."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, cast

from ._bedrock import BedrockReranker
from .dedupe import DedupeConfig, DedupeStrategy
from .drop import DropStrategy
from .relevance import RelevanceConfig, RelevanceStrategy, Reranker, RerankerError
from .summarize import SummarizeStrategy
from .truncate import EmergencyTruncateStrategy, TruncateStrategy

if TYPE_CHECKING:
    from strands.experimental.context_manager import OffloadTarget, SummarizeConfig

    from ...methods.truncate import TruncateConfig

__all__ = [
    "BedrockReranker",
    "DedupeConfig",
    "DedupeStrategy",
    "DropStrategy",
    "EmergencyTruncateStrategy",
    "Offload",
    "RelevanceConfig",
    "RelevanceStrategy",
    "Reranker",
    "RerankerError",
    "SummarizeStrategy",
    "TruncateStrategy",
]


class _Offload:
    """Builds offload strategies: ``Offload.truncate(target, config).when(...)`` and the like."""

    def truncate(self, target: OffloadTarget, config: TruncateConfig | None = None) -> TruncateStrategy:
        """Previews in place of long content (``preview_tokens``, ``preview`` mode in ``config``).

        Beyond the reference: ``preview="shape"`` (see ``methods.truncate.TruncateConfig``).
        """
        return TruncateStrategy(target, cast(Any, config))

    def summarize(
        self,
        target: OffloadTarget,
        config: SummarizeConfig | None = None,
        *,
        ahead: bool = False,
        cache_aligned: bool = False,
    ) -> SummarizeStrategy:
        """Model-written summaries in place of content (``model``, ``system_prompt`` in ``config``).

        Beyond the reference: ``ahead``: a message-level summary starts while the tools of the turn
        that will need it run, instead of holding up the next model call. ``cache_aligned``: the
        summary request reads the agent's cached prefix (same system prompt, tools and opening
        messages) instead of sending the span afresh.
        """
        return SummarizeStrategy(target, config, ahead=ahead, cache_aligned=cache_aligned)

    def drop(self, target: OffloadTarget) -> DropStrategy:
        """A ``[Dropped]`` marker (with stash references) in place of content."""
        return DropStrategy(target)

    def relevance(self, target: OffloadTarget, config: RelevanceConfig | None = None) -> RelevanceStrategy:
        """Beyond the reference: a long tool result cut to the chunks relevant to the question.

        The upstream proposal's shape (``reranker``, ``relevance_threshold``, ``chunk_tokens``,
        ``preview_tokens`` in ``config``), with the native BM25 reranker, on this host, by default.
        """
        return RelevanceStrategy(target, config)

    def dedupe(self, target: OffloadTarget = "tool_results", config: DedupeConfig | None = None) -> DedupeStrategy:
        """Beyond the reference: a tool result equal to an earlier one still in the conversation is kept once.

        Acts as each result arrives, with no condition needed; ``keep`` in ``config`` says which copy
        stays (``"first"`` by default when the model has prompt caching, else ``"last"``).
        """
        return DedupeStrategy(target, config)


Offload = _Offload()
"""The strategy builder, as ``strands.experimental.context_manager.Offload``."""
