"""Turning stored bytes back into what the retrieval tool returns in full mode."""

from __future__ import annotations

import json
from typing import Any


def decode_full_content(data: bytes | str, content_type: str, reference: str) -> dict[str, Any] | str:
    """Rebuild the stored block in its own form, by content type.

    Text comes back as a string; JSON, images and ``application/*`` documents as a
    tool result envelope holding one block of that kind; anything else as text
    with undecodable bytes replaced. ``data`` is a ``str`` when a legacy backend kept the
    base64 text of an image or document source: the block gets that text back unchanged.

    Raises:
        AttributeError: For text kinds held as a ``str``, which the reference fails to decode alike.
    """
    subtype = content_type.rsplit("/", 1)[-1]
    if content_type.startswith("text/"):
        return _decoded(data)
    if content_type == "application/json":
        return {"status": "success", "content": [{"json": json.loads(data)}]}
    if content_type.startswith("image/"):
        return {"status": "success", "content": [{"image": {"format": subtype, "source": {"bytes": data}}}]}
    if content_type.startswith("application/"):
        document = {"format": subtype, "name": reference, "source": {"bytes": data}}
        return {"status": "success", "content": [{"document": document}]}
    return _decoded(data, errors="replace")


def _decoded(data: bytes | str, errors: str = "strict") -> str:
    if isinstance(data, str):
        raise AttributeError("'str' object has no attribute 'decode'")
    return data.decode("utf-8", errors=errors)
