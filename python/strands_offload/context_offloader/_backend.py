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
    text: str | None = None
    """The stored object when a legacy backend handed back a ``str`` (``raw`` is then empty).

    A legacy backend keeps what it was given: an image or document whose ``source.bytes`` was
    base64 text comes back as that text, and the full retrieval returns it unchanged.
    """

    @property
    def content(self) -> bytes:
        """The content bytes (a copy of ``raw`` past the frame header, when there is one)."""
        if self.text is not None:
            return self.text.encode("utf-8")
        return self.raw if self.offset == 0 else bytes(self.raw[self.offset :])

    @property
    def stored(self) -> bytes | str:
        """The content as the backend returned it: bytes, or the ``str`` a legacy backend kept."""
        return self.text if self.text is not None else self.content


async def retrieve_blob(storage: Any, reference: str) -> StoredBlob:
    """Fetch what is stored under ``reference``; KeyError when it is unknown."""
    if is_legacy_storage(storage):
        data, content_type = await storage.retrieve(reference)
        if isinstance(data, str):
            return StoredBlob(b"", 0, content_type, text=data)
        return StoredBlob(bytes(data), 0, content_type)
    raw, offset, content_type = await read_frame_raw(storage, reference)
    return StoredBlob(raw, offset, content_type)
