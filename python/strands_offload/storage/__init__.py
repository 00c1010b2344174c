"""Unified storage: bytes under string keys, in memory, in local files or in S3.

Drop-in for ``strands.storage`` (strands-agents 1.62.0): same classes, signatures, key rules,
errors (the SDK's own ``StorageError``) and on-disk / in-bucket layout, so data written by either
package is read by the other and the SDK treats these backends as its own.
"""

from .in_memory_storage import InMemoryStorage
from .local_file_storage import LocalFileStorage
from .s3_storage import S3Storage
from .storage import Storage

__all__ = [
    "InMemoryStorage",
    "LocalFileStorage",
    "S3Storage",
    "Storage",
]
