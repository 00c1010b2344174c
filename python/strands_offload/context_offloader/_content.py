"""Turning stored bytes back into what the retrieval tool returns in full mode."""

from __future__ import annotations

import json
from typing import Any


def decode_full_content(data: bytes, content_type: str, reference: str) -> dict[str, Any] | str:
    """Rebuild the stored block in its own form, by content type.

    Text comes back as a string; JSON, images and ``application/*`` documents as a
    tool result envelope holding one block of that kind; anything else as text
    with undecodable bytes replaced.
    """
    if content_type.startswith("text/"):
        return data.decode("utf-8")
    if content_type == "application/json":
        return {"status": "success", "content": [{"json": json.loads(data)}]}
    subtype = content_type.rsplit("/", 1)[-1]
    if content_type.startswith("image/"):
        return {"status": "success", "content": [{"image": {"format": subtype, "source": {"bytes": data}}}]}
    if content_type.startswith("application/"):
        document = {"format": subtype, "name": reference, "source": {"bytes": data}}
        return {"status": "success", "content": [{"document": document}]}
    return data.decode("utf-8", errors="replace")
