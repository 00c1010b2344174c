"""S3 object reads and write settings shared by the unified and the legacy offloader ``S3Storage``."""

from __future__ import annotations

from typing import Any, Literal

#: The server-side encryption modes ``put_object`` accepts as ``ServerSideEncryption``.
SseMode = Literal["aws:kms", "aws:kms:dsse", "AES256"]
SSE_MODES: tuple[str, ...] = ("aws:kms", "aws:kms:dsse", "AES256")
# The modes that encrypt under a KMS key, so the only ones a key id goes with.
_KMS_MODES = frozenset({"aws:kms", "aws:kms:dsse"})


def encryption_arguments(sse: object, sse_kms_key_id: object, error: type[Exception]) -> dict[str, str]:
    """The ``put_object`` parameters that ask S3 to encrypt an object, after checking the settings.

    ``sse`` becomes ``ServerSideEncryption`` and ``sse_kms_key_id`` (a key ARN, id or alias)
    ``SSEKMSKeyId``; with neither, no parameter is added and the bucket's default applies.

    Args:
        sse: ``None`` or one of :data:`SSE_MODES`.
        sse_kms_key_id: ``None`` or a non-empty string, only with a KMS mode.
        error: The exception class raised for a wrong setting (a ``ValueError`` subclass).

    Raises:
        error: For a non-string value, an unknown mode, an empty key id, or a key id without a
            KMS mode; the message names the parameter and what is wrong.
    """
    if sse is not None and not isinstance(sse, str):
        raise error(f"sse must be a string or None, not {type(sse).__name__}")
    if sse_kms_key_id is not None and not isinstance(sse_kms_key_id, str):
        raise error(f"sse_kms_key_id must be a string or None, not {type(sse_kms_key_id).__name__}")
    if sse is not None and sse not in SSE_MODES:
        raise error(f"Unknown sse {sse!r}: expected one of 'aws:kms', 'aws:kms:dsse', 'AES256' or None")
    arguments: dict[str, str] = {}
    if sse is not None:
        arguments["ServerSideEncryption"] = str(sse)
    if sse_kms_key_id is not None:
        if sse not in _KMS_MODES:
            raise error(f"sse_kms_key_id needs sse='aws:kms' or sse='aws:kms:dsse', not sse={sse!r}")
        if not sse_kms_key_id.strip():
            raise error("sse_kms_key_id must not be empty")
        arguments["SSEKMSKeyId"] = str(sse_kms_key_id)
    return arguments


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
