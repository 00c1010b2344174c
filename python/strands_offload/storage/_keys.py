"""Validation of storage keys and list prefixes shared by the shipped backends.

The rules follow strands-agents 1.62.0 (same normalisation, same error texts) and add a few
refusals that only matter for hostile input: NUL characters and percent-encoded separators or
``..`` segments. A key that passes these checks can never name a location outside the backend's
directory, bucket prefix or namespace.
"""

from __future__ import annotations

import re
from urllib.parse import unquote

from strands.types.exceptions import StorageError

_SLASH_RUNS = re.compile(r"/{2,}")
_PERCENT = "%"


def _encoded_escape(text: str) -> bool:
    """Tell whether percent-decoding ``text`` reveals a separator, NUL or a ``..`` segment.

    Decoding is repeated until the text stops changing so double encodings (``%252e``) are caught.
    """
    current = text
    for _ in range(8):
        decoded = unquote(current)
        if decoded == current:
            break
        current = decoded
    else:
        return True
    if current == text:
        return False
    if "\\" in current or "\x00" in current:
        return True
    return ".." in current.split("/") or current.startswith("/")


def normalize_key(key: str) -> str:
    """Validate ``key`` and return its canonical form.

    Runs of ``/`` collapse to one and leading or trailing ``/`` are removed, so ``"/a//b/"`` becomes
    ``"a/b"``.

    Args:
        key: The key as the caller passed it.

    Returns:
        The canonical key.

    Raises:
        StorageError: For a backslash, a NUL character, an empty result, a ``..`` segment, or a
            percent-encoded form of any of those.
    """
    if "\\" in key:
        raise StorageError(f"Invalid storage key '{key}': backslashes are not allowed")
    if "\x00" in key:
        raise StorageError(f"Invalid storage key '{key}': NUL characters are not allowed")
    canonical = _SLASH_RUNS.sub("/", key).strip("/")
    if not canonical:
        raise StorageError("Storage key must not be empty")
    if ".." in canonical.split("/"):
        raise StorageError(f"Invalid storage key '{key}': '..' path segments are not allowed")
    if _PERCENT in canonical and _encoded_escape(canonical):
        raise StorageError(f"Invalid storage key '{key}': percent-encoded path escapes are not allowed")
    return canonical


def normalize_prefix(prefix: str) -> str:
    """Validate a list or namespace prefix and return its canonical form.

    Unlike keys, the empty prefix is valid (it matches everything) and a trailing ``/`` is kept,
    because ``"a/"`` and ``"a"`` select different keys.

    Args:
        prefix: The prefix as the caller passed it.

    Returns:
        The canonical prefix.

    Raises:
        StorageError: For a backslash, a NUL character, a ``..`` segment, or a percent-encoded
            form of any of those.
    """
    if "\\" in prefix:
        raise StorageError(f"Invalid storage prefix '{prefix}': backslashes are not allowed")
    if "\x00" in prefix:
        raise StorageError(f"Invalid storage prefix '{prefix}': NUL characters are not allowed")
    canonical = _SLASH_RUNS.sub("/", prefix).lstrip("/")
    if ".." in canonical.split("/"):
        raise StorageError(f"Invalid storage prefix '{prefix}': '..' path segments are not allowed")
    if _PERCENT in canonical and _encoded_escape(canonical):
        raise StorageError(f"Invalid storage prefix '{prefix}': percent-encoded path escapes are not allowed")
    return canonical


def scope_prefix(parent: str, prefix: str) -> str:
    """Return the storage-level prefix of a namespace ``prefix`` nested under ``parent``.

    ``parent`` is either empty or ends with ``/``; the result has the same shape. An empty
    ``prefix`` keeps ``parent``.
    """
    inner = normalize_prefix(prefix).rstrip("/")
    return f"{parent}{inner}/" if inner else parent
