"""Storage as objects in an Amazon S3 (or S3-compatible) bucket."""

from __future__ import annotations

import asyncio
import builtins
import copy
import threading
from typing import TYPE_CHECKING, Any

from strands.types.exceptions import StorageError

from ._keys import normalize_key, normalize_prefix, scope_prefix
from ._s3_objects import SseMode, encryption_arguments, get_object, is_missing_key
from .storage import _NAMESPACED, StorageSearchResult, index_written

if TYPE_CHECKING:
    from .search.types import SearchStrategy

__all__ = ["EncryptionSettingsError", "S3Storage"]

_PAGE_SIZE = 1000
_USER_AGENT = "strands-agents"


class EncryptionSettingsError(StorageError, ValueError):
    """Wrong ``sse`` / ``sse_kms_key_id`` given to :class:`S3Storage`.

    Both a ``StorageError`` (what this class raises for other constructor misuse) and a
    ``ValueError`` (what a wrong argument value is), so either ``except`` catches it.
    """


class S3Storage:
    """One object per key in ``bucket``, below an optional key prefix.

    boto3 is imported and the client built on first use; namespaced copies share the root
    instance's client. Every S3 call runs in a worker thread so the event loop keeps going.
    Object keys are ``prefix + "/" + key`` (the prefix normalised like a list prefix, so
    ``"agents/"`` gives objects under ``agents//`` exactly as the reference does).

    Args:
        bucket: Bucket name.
        prefix: Key prefix inside the bucket.
        region_name: Region for the boto3 session created when no ``boto_session`` is given.
        boto_session: A ready boto3 session (cannot be combined with ``region_name``).
        boto_client_config: A ``botocore.config.Config`` for the client; ``strands-agents`` is
            added as user agent extra unless the config already sets one.
        search_strategy: Strategy for indexing writes and answering ``search``.
        sse: Keyword-only extension: server-side encryption for every object written,
            ``"aws:kms"``, ``"aws:kms:dsse"`` or ``"AES256"`` (sent as ``ServerSideEncryption``
            on each ``put_object``); ``None`` (default) sends nothing, so the bucket's default
            encryption applies. Reads need no setting: S3 decrypts for a caller allowed to use
            the key.
        sse_kms_key_id: Keyword-only extension: the KMS key (ARN, id or alias) for a KMS mode,
            sent as ``SSEKMSKeyId``; ``None`` lets S3 use the account's AWS-managed key.

    Raises:
        StorageError: If both ``region_name`` and ``boto_session`` are given, or the prefix is
            invalid.
        EncryptionSettingsError: (a ``StorageError`` and a ``ValueError``) for an ``sse`` that
            is not one of the three modes, an ``sse_kms_key_id`` without a KMS mode or empty,
            or a value of either that is not a string.
    """

    def __init__(
        self,
        bucket: str,
        *,
        prefix: str = "",
        search_strategy: SearchStrategy[S3Storage] | None = None,
        boto_session: Any = None,
        boto_client_config: Any = None,
        region_name: str | None = None,
        sse: SseMode | None = None,
        sse_kms_key_id: str | None = None,
    ) -> None:
        if region_name is not None and boto_session is not None:
            raise StorageError("Cannot specify both region_name and boto_session")
        # Extra put_object parameters; namespaced copies share them with the rest of the state.
        self._put_settings = encryption_arguments(sse, sse_kms_key_id, EncryptionSettingsError)
        self._bucket = bucket
        canonical = normalize_prefix(prefix)
        self._prefix = f"{canonical}/" if canonical else ""
        self._search_strategy = search_strategy
        self._boto_client_config = boto_client_config
        self._boto_session = boto_session
        self._region_name = region_name
        self._client: Any = None
        self._client_lock = threading.Lock()
        # Namespaced copies point here so they reuse the root instance's client.
        self._root: S3Storage | None = None

    @property
    def search_strategy(self) -> SearchStrategy[S3Storage] | None:
        """The strategy given at construction (``None``: ``search`` scans with keyword overlap)."""
        return self._search_strategy

    # -- client -------------------------------------------------------------------------------

    def _get_client(self) -> Any:
        """Return the shared S3 client, creating it on first use."""
        if self._root is not None:
            return self._root._get_client()
        client = self._client
        if client is not None:
            return client
        with self._client_lock:
            if self._client is None:
                self._client = self._build_client()
            return self._client

    def _build_client(self) -> Any:
        import boto3  # type: ignore[import-untyped]
        from botocore.config import Config  # type: ignore[import-untyped]

        tagged = Config(user_agent_extra=_USER_AGENT)
        given = self._boto_client_config
        # A caller's own user agent extra wins; otherwise ours is merged into their settings.
        has_agent = given is not None and bool(getattr(given, "user_agent_extra", None))
        client_config = tagged if given is None else (given if has_agent else given.merge(tagged))
        session = self._boto_session
        if session is None:
            session = boto3.Session(region_name=self._region_name)
        return session.client("s3", config=client_config)

    # -- operations ---------------------------------------------------------------------------

    async def write(self, key: str, data: bytes) -> None:
        """Upload ``data`` as the object for ``key``, then index it.

        With ``sse`` set, the object is encrypted at rest as configured. ``put_object`` is all or
        nothing: a refused upload (a denied or disabled KMS key included) leaves no object and any
        previous value of the key as it was.

        Raises:
            StorageError: For an invalid key, a failed upload (``Failed to write '{key}' to S3``,
                the botocore error chained as ``__cause__``) or a failed indexing after the upload.
        """
        canonical = normalize_key(key)
        client = self._get_client()
        try:
            await asyncio.to_thread(
                client.put_object, Bucket=self._bucket, Key=self._prefix + canonical, Body=data, **self._put_settings
            )
        except Exception as error:
            raise StorageError(f"Failed to write '{key}' to S3") from error
        await index_written(self._search_strategy, self, key, canonical, data)

    async def read(self, key: str) -> bytes | None:
        """Download the object for ``key``; ``None`` when it does not exist.

        Raises:
            StorageError: For an invalid key or any other failure (``Failed to read '{key}' from S3``).
        """
        canonical = normalize_key(key)
        client = self._get_client()
        try:
            return await asyncio.to_thread(self._download, client, self._prefix + canonical)
        except Exception as error:
            if is_missing_key(error):
                return None
            raise StorageError(f"Failed to read '{key}' from S3") from error

    def _download(self, client: Any, object_key: str) -> bytes:
        return get_object(client, self._bucket, object_key)[0]

    async def delete(self, key: str) -> None:
        """Delete the object for ``key`` (S3 reports success for missing objects too).

        Raises:
            StorageError: For an invalid key or a failed call (``Failed to delete '{key}' from S3``).
        """
        canonical = normalize_key(key)
        client = self._get_client()
        try:
            await asyncio.to_thread(client.delete_object, Bucket=self._bucket, Key=self._prefix + canonical)
        except Exception as error:
            raise StorageError(f"Failed to delete '{key}' from S3") from error

    async def list(self, query: str = "") -> builtins.list[str]:
        """Return the keys starting with ``query`` (storage prefix removed), sorted, across all pages.

        Raises:
            StorageError: For an invalid prefix or a failed listing.
        """
        wanted = self._prefix + normalize_prefix(query)
        client = self._get_client()
        try:
            return await asyncio.to_thread(self._list_pages, client, wanted)
        except Exception as error:
            raise StorageError(f"Failed to list keys with prefix '{query}' from S3") from error

    def _list_pages(self, client: Any, wanted: str) -> builtins.list[str]:
        own = self._prefix
        cut = len(own)
        keys: builtins.list[str] = []
        request: dict[str, Any] = {"Bucket": self._bucket, "Prefix": wanted, "MaxKeys": _PAGE_SIZE}
        while True:
            page = client.list_objects_v2(**request)
            for item in page.get("Contents", ()):
                object_key: str = item["Key"]
                keys.append(object_key[cut:] if own and object_key.startswith(own) else object_key)
            token = page.get("NextContinuationToken")
            if not page.get("IsTruncated") or not token:
                break
            request["ContinuationToken"] = token
        keys.sort()
        return keys

    async def search(self, query: str) -> builtins.list[StorageSearchResult]:
        """Rank entries against ``query`` with the configured strategy, else keyword overlap."""
        strategy: Any = self._search_strategy
        if strategy is None:
            from .search.keyword import KeywordSearchStrategy

            strategy = KeywordSearchStrategy()
        results: builtins.list[StorageSearchResult] = await strategy.search(self, query)
        return results

    def namespace(self, prefix: str) -> S3Storage:
        """Return a copy scoped to ``prefix`` inside this storage's prefix, marked namespaced.

        The copy keeps the class and attributes, shares the client and the strategy, and lists,
        reads and searches only below its prefix.
        """
        scoped = copy.copy(self)
        scoped._prefix = scope_prefix(self._prefix, prefix)
        scoped._root = self._root or self
        scoped._namespaced = _NAMESPACED  # type: ignore[attr-defined]
        return scoped

    def _index_location(self) -> str:
        """Identify where this storage's entries live, for strategies that keep their own index."""
        return f"s3:{self._bucket}/{self._prefix}"
