"""strands-offload: a Rust-accelerated drop-in for the context offloading of Strands Agents.

Switch from the reference by replacing the import prefix, for example
``strands.vended_plugins.context_offloader`` becomes ``strands_offload.context_offloader``.
The native hot path (token counting, previews, grep, JSON text) is exposed here too.
The plugin and storage names below are imported on first use, so the command line
and the native functions start without loading the Strands SDK.
"""

from __future__ import annotations

import importlib
from importlib.metadata import PackageNotFoundError, version
from typing import TYPE_CHECKING, Any

from . import _native

# json
from ._jsonpath import json_query
from ._native import (
    InvalidJsonDocument,
    InvalidJsonQuery,
    JsonQueryTooExpensive,
    PatternTooExpensive,
    UntranslatablePattern,
    json_dumps,
    json_dumps_len,
)

# grep
from ._search import TextIndex, is_searchable_content, search_content

# tokens
from ._tokens import Preview, count_tokens, count_tokens_batch, decode, encode, preview, preview_bounds

try:
    __version__ = version("strands-offload")
except PackageNotFoundError:  # running from a source tree without metadata
    __version__ = _native.__version__

# Name -> module of the names loaded lazily (they import the Strands SDK).
_LAZY = {
    "ContextOffloader": "strands_offload.context_offloader",
    "ShouldOffload": "strands_offload.context_offloader",
    "skip_offload": "strands_offload.context_offloader.plugin",
    "InMemoryStorage": "strands_offload.storage",
    "LocalFileStorage": "strands_offload.storage",
    "S3Storage": "strands_offload.storage",
    "Storage": "strands_offload.storage",
    "SearchStrategy": "strands_offload.storage.search",
    "StorageSearchResult": "strands_offload.storage.search",
    "KeywordSearchStrategy": "strands_offload.storage.search",
    "Bm25SearchStrategy": "strands_offload.storage.search",
    "Bm25SearchStrategyConfig": "strands_offload.storage.search",
    "accelerate": "strands_offload._accelerate",
    "accelerated": "strands_offload._accelerate",
    "deaccelerate": "strands_offload._accelerate",
}

if TYPE_CHECKING:
    from ._accelerate import accelerate, accelerated, deaccelerate
    from .context_offloader import ContextOffloader, ShouldOffload
    from .context_offloader.plugin import skip_offload
    from .storage import InMemoryStorage, LocalFileStorage, S3Storage, Storage
    from .storage.search import (
        Bm25SearchStrategy,
        Bm25SearchStrategyConfig,
        KeywordSearchStrategy,
        SearchStrategy,
        StorageSearchResult,
    )


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'strands_offload' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


__all__ = [
    "__version__",
    "InvalidJsonDocument",
    "InvalidJsonQuery",
    "JsonQueryTooExpensive",
    "PatternTooExpensive",
    "UntranslatablePattern",
    # plugin and storage (lazy)
    "ContextOffloader",
    "ShouldOffload",
    "skip_offload",
    "InMemoryStorage",
    "LocalFileStorage",
    "S3Storage",
    "Storage",
    "SearchStrategy",
    "StorageSearchResult",
    "KeywordSearchStrategy",
    "Bm25SearchStrategy",
    "Bm25SearchStrategyConfig",
    # strands-agents as it is, on the native core (lazy)
    "accelerate",
    "accelerated",
    "deaccelerate",
    # json
    "json_dumps",
    "json_dumps_len",
    "json_query",
    # grep
    "TextIndex",
    "is_searchable_content",
    "search_content",
    # tokens
    "Preview",
    "count_tokens",
    "count_tokens_batch",
    "decode",
    "encode",
    "preview",
    "preview_bounds",
]
