"""One way to store and fetch a blob, whichever storage API the backend speaks.

Legacy offloader backends (``store`` / ``retrieve``) keep the content type
themselves and return their own reference. Unified backends (``write`` /
``read``) get the content type framed in front of the bytes (see ``_frame``),
and the key is the reference.
"""

from __future__ import annotations

from typing import Any

from ._frame import read_framed, write_framed


def is_legacy_storage(storage: object) -> bool:
    """Whether ``storage`` speaks the legacy offloader API (duck-typed like the reference)."""
    return hasattr(storage, "store") and hasattr(storage, "retrieve")


async def store_blob(storage: Any, key: str, data: bytes, content_type: str) -> str:
    """Store ``data`` under ``key`` and return the reference to show for it."""
    if is_legacy_storage(storage):
        reference: str = await storage.store(key, data, content_type)
        return reference
    return await write_framed(storage, key, data, content_type)


async def retrieve_blob(storage: Any, reference: str) -> tuple[bytes, str]:
    """Fetch ``(bytes, content_type)`` for ``reference``; KeyError when it is unknown."""
    if is_legacy_storage(storage):
        data, content_type = await storage.retrieve(reference)
        return data, content_type
    return await read_framed(storage, reference)
