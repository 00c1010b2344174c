"""The context manager's strategy pipeline, at ``strands.experimental.context_manager``'s names.

Switch by replacing the import prefix::

    from strands_offload.context_manager import ContextManager, Offload

    agent = Agent(context_manager=ContextManager(strategies=[Offload.truncate("tool_results").when(threshold=2000)]))

The submodules mirror the SDK's private ``strands._context_manager`` package.
"""

from strands.experimental.context_manager import OffloadConditions, OffloadTarget

# Beyond the reference (kept out of __all__, which lists the reference's names exactly).
from ._persist import ReductionRestoreError as ReductionRestoreError
from .context_manager import ContextManager
from .methods.summarize import SummarizeConfig
from .methods.truncate import TruncateConfig
from .presets import STRATEGY_PRESET_NAMES, StrategyPresetName
from .ranking import BM25Ranker as BM25Ranker
from .ranking import Ranker as Ranker
from .strategies.hide import Hide as Hide
from .strategies.offload import BedrockReranker as BedrockReranker
from .strategies.offload import Offload
from .strategies.offload import RelevanceConfig as RelevanceConfig
from .strategies.offload import Reranker as Reranker
from .strategies.offload import RerankerError as RerankerError
from .types import ContextManagerConfig, ContextState, ContextStrategy, StashConfig

__all__ = [
    # The manager, its settings and what it keeps per agent.
    "ContextManager",
    "ContextManagerConfig",
    "ContextState",
    "StashConfig",
    # Strategies: where they act, when, and how each method is set up.
    "ContextStrategy",
    "Offload",
    "OffloadTarget",
    "OffloadConditions",
    "TruncateConfig",
    "SummarizeConfig",
    # Ready-made pipelines.
    "StrategyPresetName",
    "STRATEGY_PRESET_NAMES",
]
