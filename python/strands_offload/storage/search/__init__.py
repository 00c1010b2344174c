"""Search strategies for the unified storage backends (keyword scan, SQLite FTS5 BM25)."""

from ..storage import StorageSearchResult
from .bm25 import Bm25SearchStrategy, Bm25SearchStrategyConfig
from .keyword import KeywordSearchStrategy
from .types import SearchStrategy

__all__ = [
    "SearchStrategy",
    "StorageSearchResult",
    "KeywordSearchStrategy",
    "Bm25SearchStrategy",
    "Bm25SearchStrategyConfig",
]
