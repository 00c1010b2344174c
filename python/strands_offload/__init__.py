"""strands-offload: a Rust-accelerated drop-in for the context offloading of Strands Agents.

Switch from the reference by replacing the import prefix, for example
``strands.vended_plugins.context_offloader`` becomes ``strands_offload.context_offloader``.
The native hot path (token counting, previews, grep, JSON text) is exposed here too.
"""

from importlib.metadata import PackageNotFoundError, version

from . import _native

try:
    __version__ = version("strands-offload")
except PackageNotFoundError:  # running from a source tree without metadata
    __version__ = _native.__version__

# -- storage area: unified storage backends and search strategies --
from .storage import InMemoryStorage, LocalFileStorage, S3Storage, Storage  # noqa: E402
from .storage.search import (  # noqa: E402
    Bm25SearchStrategy,
    Bm25SearchStrategyConfig,
    KeywordSearchStrategy,
    SearchStrategy,
    StorageSearchResult,
)

__all__ = [
    "__version__",
    # storage area
    "Bm25SearchStrategy",
    "Bm25SearchStrategyConfig",
    "InMemoryStorage",
    "KeywordSearchStrategy",
    "LocalFileStorage",
    "S3Storage",
    "SearchStrategy",
    "Storage",
    "StorageSearchResult",
]
