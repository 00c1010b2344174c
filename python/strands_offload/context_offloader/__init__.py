"""Context offloading: keep oversized tool results out of the model's context.

Drop-in for ``strands.vended_plugins.context_offloader``: the ``ContextOffloader``
plugin and the legacy storage backends, under the same names.
"""

from .plugin import ContextOffloader, ShouldOffload
from .storage import FileStorage, InMemoryStorage, S3Storage, Storage

__all__ = ["ContextOffloader", "ShouldOffload", "Storage", "InMemoryStorage", "FileStorage", "S3Storage"]
