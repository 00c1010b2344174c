"""S3 object reads shared by the unified ``S3Storage`` and the legacy offloader ``S3Storage``."""

from __future__ import annotations

from typing import Any


def is_missing_key(error: BaseException) -> bool:
    """Whether a botocore error means "no such object"."""
    if type(error).__name__ == "NoSuchKey":
        return True
    response = getattr(error, "response", None)
    if isinstance(response, dict):
        return bool(response.get("Error", {}).get("Code") == "NoSuchKey")
    return False


def get_object(client: Any, bucket: str, object_key: str) -> tuple[bytes, dict[str, Any]]:
    """The body of an object and the rest of the ``GetObject`` response; the body is always closed."""
    response: dict[str, Any] = client.get_object(Bucket=bucket, Key=object_key)
    body = response["Body"]
    try:
        content: bytes = body.read()
    finally:
        body.close()
    return content, response
