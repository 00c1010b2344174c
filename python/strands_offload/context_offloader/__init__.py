"""Context offloading: keep oversized tool results out of the model's context.

This package currently exports the legacy storage backends (drop-ins for those of
``strands.vended_plugins.context_offloader``); the plugin is wired in beside them.
"""

# -- storage area: legacy backends --
from .storage import FileStorage, InMemoryStorage, S3Storage, Storage

__all__ = [
    "FileStorage",
    "InMemoryStorage",
    "S3Storage",
    "Storage",
]
