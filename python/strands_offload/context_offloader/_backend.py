"""One way to store and fetch a blob, whichever storage API the backend speaks.

Legacy offloader backends (``store`` / ``retrieve``) keep the content type
themselves and return their own reference. Unified backends (``write`` /
``read``) get the content type framed in front of the bytes (see ``_frame``),
and the key is the reference.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ._frame import read_frame_raw, write_framed


def is_legacy_storage(storage: object) -> bool:
    """Whether ``storage`` speaks the legacy offloader API (duck-typed like the reference)."""
    return hasattr(storage, "store") and hasattr(storage, "retrieve")


async def store_blob(storage: Any, key: str, data: bytes, content_type: str) -> str:
    """Store ``data`` under ``key`` and return the reference to show for it."""
    if is_legacy_storage(storage):
        reference: str = await storage.store(key, data, content_type)
        return reference
    return await write_framed(storage, key, data, content_type)


@dataclass(frozen=True)
class StoredBlob:
    """What a backend returned for a reference: the stored object, where the content starts in it.

    ``raw`` is the object as the backend handed it over (a whole frame for unified storage),
    so a cache can recognise the same stored object again without copying or comparing it.
    """

    raw: bytes
    offset: int
    content_type: str

    @property
    def content(self) -> bytes:
        """The content bytes (a copy of ``raw`` past the frame header, when there is one)."""
        return self.raw if self.offset == 0 else bytes(self.raw[self.offset :])


async def retrieve_blob(storage: Any, reference: str) -> StoredBlob:
    """Fetch what is stored under ``reference``; KeyError when it is unknown."""
    if is_legacy_storage(storage):
        data, content_type = await storage.retrieve(reference)
        return StoredBlob(bytes(data), 0, content_type)
    raw, offset, content_type = await read_frame_raw(storage, reference)
    return StoredBlob(raw, offset, content_type)
