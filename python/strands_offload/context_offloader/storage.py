"""The offloader's own (legacy) storage backends: ``store`` / ``retrieve`` with content types.

Deprecated in strands in favour of :mod:`strands_offload.storage`, kept for drop-in use. The
references and files are those of strands-agents 1.62.0, so content stored by either package is
retrieved by the other:

* ``InMemoryStorage`` returns ``mem_{n}_{key}``;
* ``FileStorage`` writes ``{timestamp_ms}_{n}_{sanitized_key}{ext}`` files plus a
  ``.metadata.json`` sidecar mapping file names to content types, and returns the bare file name;
* ``S3Storage`` writes ``{prefix}{timestamp_ms}_{n}_{sanitized_key}`` objects with their
  ``ContentType`` and returns ``s3://{bucket}/{object_key}``.

Differences from the reference, all in failure or race situations:

* ``FileStorage`` writes the content before the sidecar, both atomically (temp file, ``fsync``,
  rename), so a crash never leaves a partial file or a sidecar entry without its file. A name taken
  by another instance in the same millisecond is never overwritten: the counter moves on. The
  sidecar is merged with the one on disk before each rewrite, under an inter-process file lock
  (``.__strands_metadata.lock``), so instances and processes sharing a directory keep each other's
  entries.
* A sidecar that is not a valid UTF-8 JSON object (including one nested too deeply to parse) or
  that is a symlink is logged and treated as empty (the reference raised ``UnicodeDecodeError``,
  ``RecursionError`` or failed later with ``TypeError``); the files stay retrievable by name. A
  sidecar entry whose content type is not a string raises ``ValueError`` naming the file.
* On the host every file is opened relative to one descriptor of the directory without following
  symlinks, so a symlink in the directory is never read through (the reference follows those that
  stay inside), even while another process swaps it. Opening the storage removes temp files that
  writers killed mid-write left behind (our naming only, untouched for an hour).
* ``S3Storage`` runs its calls in a worker thread instead of blocking the event loop.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import re
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from ..storage import _hostfs
from ..storage._atomic import atomic_create, atomic_write, interprocess_lock, is_within, sweep_stale_temps
from ..storage._s3_objects import SseMode, encryption_arguments, get_object, is_missing_key

if TYPE_CHECKING:
    from strands.sandbox.base import Sandbox

__all__ = ["FileStorage", "InMemoryStorage", "S3Storage", "Storage"]

logger = logging.getLogger(__name__)

_UNSAFE_NAME_CHARS = re.compile(r"[^\w\-.]")
_DEFAULT_CONTENT_TYPE = "application/octet-stream"
# Lock file serialising sidecar updates between processes sharing an artifact directory.
_SIDECAR_LOCK = ".__strands_metadata.lock"


def _sanitize_id(raw_id: str) -> str:
    r"""Make ``raw_id`` safe as part of a file name or object key.

    ``..`` pairs, ``/`` and ``\`` become ``_`` first, then anything other than a word character,
    ``-`` or ``.`` does.
    """
    flattened = raw_id.replace("..", "_").replace("/", "_").replace("\\", "_")
    return _UNSAFE_NAME_CHARS.sub("_", flattened)


def _not_found(reference: str) -> KeyError:
    return KeyError(f"Reference not found: {reference}")


_SHARED_ACROSS_AGENTS = (
    "InMemoryStorage cannot be shared across multiple agents. Use a separate InMemoryStorage instance per agent."
)


class _Counter:
    """Hands out 1, 2, 3, ... (callers hold their own lock)."""

    def __init__(self) -> None:
        self._last = 0

    def take(self) -> int:
        self._last += 1
        return self._last


class _Block:
    """One in-memory block and the cycle in which it was last stored or retrieved."""

    __slots__ = ("content", "content_type", "last_used")

    def __init__(self, content: bytes, content_type: str, last_used: int) -> None:
        self.content = content
        self.content_type = content_type
        self.last_used = last_used


@runtime_checkable
class Storage(Protocol):
    """What the offloader needs from a legacy backend: store a block, get it back by reference.

    There is no deletion or eviction in the protocol; content accumulates for the life of the
    backend (``InMemoryStorage`` evicts on its own when the offloader tells it the cycle).
    """

    async def store(self, key: str, content: bytes, content_type: str = "text/plain") -> str:
        """Keep ``content`` with its MIME type and return a reference for :meth:`retrieve`."""
        ...

    async def retrieve(self, reference: str) -> tuple[bytes, str]:
        """Return ``(content, content_type)`` for ``reference``; raise ``KeyError`` when unknown."""
        ...


class InMemoryStorage:
    """Blocks kept in this process, with optional eviction by agent-loop cycles.

    Thread-safe. An entry not stored or retrieved during the last ``evict_after_turns`` cycles is
    dropped when the offloader reports a new cycle. One instance serves one agent.

    Args:
        evict_after_turns: Cycles of inactivity before an entry is dropped (default 20);
            ``None`` keeps everything.

    Raises:
        ValueError: If ``evict_after_turns`` is below 1.
    """

    _DEFAULT_EVICT_AFTER_TURNS = 20

    def __init__(self, evict_after_turns: int | None = _DEFAULT_EVICT_AFTER_TURNS) -> None:
        if evict_after_turns is not None and evict_after_turns < 1:
            raise ValueError("evict_after_turns must be a positive integer")
        self._idle_limit = evict_after_turns
        self._entries: dict[str, _Block] = {}
        self._numbers = _Counter()
        self._cycle = 0
        self._owner: int | None = None
        self._lock = threading.Lock()

    async def store(self, key: str, content: bytes, content_type: str = "text/plain") -> str:
        """Keep the block and return ``mem_{n}_{key}`` (``n`` counts stores from 1)."""
        with self._lock:
            reference = f"mem_{self._numbers.take()}_{key}"
            self._entries[reference] = _Block(content, content_type, self._cycle)
        return reference

    async def retrieve(self, reference: str) -> tuple[bytes, str]:
        """Return the block and mark it used in the current cycle.

        Raises:
            KeyError: ``Reference not found: {reference}`` for unknown or evicted references.
        """
        with self._lock:
            block = self._entries.get(reference)
            if block is not None:
                block.last_used = self._cycle
        if block is None:
            raise _not_found(reference)
        return block.content, block.content_type

    def clear(self) -> None:
        """Drop every block (the reference counter keeps counting)."""
        with self._lock:
            self._entries = {}

    # The two methods below are the offloader plugin's hooks into this store: package-internal
    # (the reference keeps them private), named without an underscore because another module calls them.

    def bind_agent(self, agent_id: int) -> None:
        """Claim the storage for one agent; the offloader calls this when it attaches to an agent.

        Args:
            agent_id: The agent's ``id()``; claiming again for the same agent does nothing.

        Raises:
            ValueError: If another agent already claimed it.
        """
        with self._lock:
            owner = self._owner if self._owner is not None else agent_id
            self._owner = owner
        if owner != agent_id:
            raise ValueError(_SHARED_ACROSS_AGENTS)

    def advance_cycle(self, cycle: int) -> None:
        """Record the agent's current loop cycle and drop blocks idle for too long.

        The offloader calls this before every model call. A block is kept while it was stored or
        retrieved within the last ``evict_after_turns`` cycles (all are kept when that is ``None``).

        Args:
            cycle: The agent's event-loop cycle count.
        """
        dropped = 0
        with self._lock:
            self._cycle = cycle
            if self._idle_limit is not None:
                horizon = cycle - self._idle_limit
                kept = {ref: block for ref, block in self._entries.items() if block.last_used >= horizon}
                dropped = len(self._entries) - len(kept)
                self._entries = kept
        if dropped:
            logger.debug("evicted=<%d>, cycle=<%d> | dropped idle offloaded blocks", dropped, cycle)


def _suffix_for(content_type: str) -> str:
    """File extension for a content type: ``.txt`` for plain text, else the subtype (``.json``)."""
    return ".txt" if content_type == "text/plain" else "." + content_type.rpartition("/")[2]


class FileStorage:
    """Blocks as files in a directory, on the host or through a strands sandbox.

    File names are ``{timestamp_ms}_{n}_{sanitized_key}{ext}``; ``ext`` is ``.txt`` for
    ``text/plain`` and otherwise the part of the content type after its last ``/``. Content types
    are kept in ``.metadata.json`` beside the files. ``store`` returns the bare file name;
    ``retrieve`` also accepts a path inside the directory or a unique name without extension.

    On the host (and through the SDK's default host sandbox) files and sidecar are replaced
    atomically, content first. Through other sandboxes each is one whole-file write, content first.

    Args:
        artifact_dir: Directory for the files (created on first store).
        sandbox: Route file operations through this sandbox.
        durable: Keyword-only extension; ``False`` skips the ``fsync`` calls on the host (writes
            stay atomic against process crashes but a power loss may lose the latest stores).
    """

    _METADATA_FILE = ".metadata.json"

    def __init__(
        self, artifact_dir: str = "./artifacts", *, sandbox: Sandbox | None = None, durable: bool = True
    ) -> None:
        self._artifact_dir = Path(artifact_dir)
        self._durable = durable
        self._sandbox = sandbox
        self._host = _hostfs.on_host(sandbox)
        self._numbers = _Counter()
        self._lock = threading.Lock()
        # Sidecar writes are serialised separately so a slow write never blocks naming.
        self._sidecar_lock = threading.Lock()
        self._content_types: dict[str, Any] = {}
        self._metadata_loaded = False
        self._sidecar_damaged = False
        if self._host:
            self._sweep_abandoned_temps()
        if sandbox is None:
            self._content_types = self._parse_sidecar(self._read_host_sidecar())
            self._metadata_loaded = True

    def for_sandbox(self, sandbox: Sandbox) -> FileStorage:
        """Return a storage on the same directory bound to ``sandbox``.

        An instance built with a sandbox keeps it and returns itself.
        """
        if self._sandbox is not None:
            return self
        return FileStorage(str(self._artifact_dir), sandbox=sandbox, durable=self._durable)

    # -- names and paths ----------------------------------------------------------------------

    def _artifact_path(self, filename: str) -> str:
        """The path string used with the sandbox: the directory as pathlib prints it, then the name."""
        return f"{str(self._artifact_dir).rstrip('/')}/{filename}"

    def _host_path(self, filename: str) -> str:
        path = self._artifact_path(filename)
        return path if self._sandbox is None else os.path.abspath(path)

    def _next_name(self, stem: str, ext: str) -> str:
        with self._lock:
            number = self._numbers.take()
        return f"{int(time.time() * 1000)}_{number}_{stem}{ext}"

    def _open_host_dir(self, *, create: bool) -> int:
        """A descriptor of the artifact directory: every host file operation goes through one."""
        return _hostfs.open_base(self._host_path(""), create=create)

    def _sweep_abandoned_temps(self) -> None:
        try:
            if not _hostfs.WALK_SUPPORTED:
                sweep_stale_temps(self._host_path(""))
                return
            directory = self._open_host_dir(create=False)
        except OSError:
            return  # no directory yet: nothing to sweep
        try:
            sweep_stale_temps(directory)
        finally:
            os.close(directory)

    # -- sidecar ------------------------------------------------------------------------------

    def _read_host_sidecar(self, directory: int | None = None) -> str | None:
        """Return the sidecar's text read from the host (through ``directory`` when given)."""
        path = self._host_path(self._METADATA_FILE)
        try:
            if not _hostfs.WALK_SUPPORTED:
                with open(path, "rb") as handle:
                    raw = handle.read()
            elif directory is not None:
                raw = _hostfs.read_in(directory, self._METADATA_FILE)
            else:
                directory = self._open_host_dir(create=False)
                try:
                    raw = _hostfs.read_in(directory, self._METADATA_FILE)
                finally:
                    os.close(directory)
        except OSError as error:
            if _hostfs.WALK_SUPPORTED and not isinstance(error, FileNotFoundError) and self._sidecar_is_link():
                logger.warning("path=<%s> | content-type sidecar is a symlink, ignoring it", path)
                self._sidecar_damaged = True
            return None
        try:
            return raw.decode("utf-8")
        except UnicodeDecodeError:
            logger.warning("path=<%s> | content-type sidecar is not UTF-8, ignoring it", path)
            self._sidecar_damaged = True
            return None

    def _sidecar_is_link(self) -> bool:
        try:
            return os.path.islink(self._host_path(self._METADATA_FILE))
        except OSError:
            return False

    def _parse_sidecar(self, text: str | None) -> dict[str, Any]:
        if text is None:
            return {}
        try:
            loaded = json.loads(text)
        except (ValueError, RecursionError):
            # RecursionError: nesting deeper than the decoder's recursion limit ("[" * 100000).
            logger.warning("dir=<%s> | content-type sidecar is not valid JSON, ignoring it", self._artifact_dir)
            self._sidecar_damaged = True
            return {}
        if not isinstance(loaded, dict):
            logger.warning("dir=<%s> | content-type sidecar is not a JSON object, ignoring it", self._artifact_dir)
            self._sidecar_damaged = True
            return {}
        return loaded

    async def _load_sandbox_sidecar(self) -> None:
        """Load the sidecar once, on first use, when bound to a sandbox."""
        if self._metadata_loaded:
            return
        if self._host:
            parsed = self._parse_sidecar(await asyncio.to_thread(self._read_host_sidecar))
        else:
            assert self._sandbox is not None
            try:
                parsed = self._parse_sidecar(await self._sandbox.read_text(self._artifact_path(self._METADATA_FILE)))
            except Exception:
                parsed = {}
        with self._lock:
            if not self._metadata_loaded:
                parsed.update(self._content_types)
                self._content_types = parsed
                self._metadata_loaded = True

    def _save_host_sidecar(self, filename: str, content_type: str, directory: int | None) -> None:
        """Record one entry, merging with the sidecar on disk, and replace the sidecar atomically.

        With ``directory`` (a descriptor of the artifact directory) every file is opened through it.
        """
        if directory is None:
            lock = interprocess_lock(self._host_path(_SIDECAR_LOCK))
        else:
            lock = interprocess_lock(_SIDECAR_LOCK, dir_fd=directory)
        with self._sidecar_lock, lock:
            on_disk = self._parse_sidecar(self._read_host_sidecar(directory))
            with self._lock:
                self._content_types[filename] = content_type
                for name, value in on_disk.items():
                    self._content_types.setdefault(name, value)
                data = json.dumps(self._content_types).encode("utf-8")
            if directory is None:
                atomic_write(self._host_path(self._METADATA_FILE), data, durable=self._durable)
            else:
                _hostfs.replace_in(directory, self._METADATA_FILE, data, durable=self._durable)

    # -- store --------------------------------------------------------------------------------

    async def store(self, key: str, content: bytes, content_type: str = "text/plain") -> str:
        """Write the block as a new file and return its bare file name.

        Raises:
            OSError: If the directory or a file cannot be written (nothing is recorded then).
        """
        stem = _sanitize_id(key)
        ext = _suffix_for(content_type)
        if self._sandbox is not None:
            await self._load_sandbox_sidecar()
        if self._host:
            return await asyncio.to_thread(self._store_on_host, stem, ext, bytes(content), content_type)
        assert self._sandbox is not None
        filename = self._next_name(stem, ext)
        await self._sandbox.write_file(self._artifact_path(filename), bytes(content))
        with self._lock:
            self._content_types[filename] = content_type
            sidecar = json.dumps(self._content_types)
        await self._sandbox.write_text(self._artifact_path(self._METADATA_FILE), sidecar)
        return filename

    def _store_on_host(self, stem: str, ext: str, content: bytes, content_type: str) -> str:
        if not _hostfs.WALK_SUPPORTED:
            os.makedirs(self._host_path(""), exist_ok=True)
            filename = self._create_unique(
                stem, ext, lambda name: atomic_create(self._host_path(name), content, durable=self._durable)
            )
            self._save_host_sidecar(filename, content_type, None)
            return filename
        directory = self._open_host_dir(create=True)
        try:
            filename = self._create_unique(
                stem, ext, lambda name: _hostfs.create_in(directory, name, content, durable=self._durable)
            )
            self._save_host_sidecar(filename, content_type, directory)
        finally:
            os.close(directory)
        return filename

    def _create_unique(self, stem: str, ext: str, create: Callable[[str], bool]) -> str:
        """Create the next free name with ``create`` (``False`` = taken) and return it."""
        while True:
            filename = self._next_name(stem, ext)
            if create(filename):
                return filename
            logger.debug("filename=<%s> | name already taken, trying the next counter", filename)

    # -- retrieve -----------------------------------------------------------------------------

    def _within_dir(self, reference: str) -> str:
        """Reject ``..`` and paths whose parent is not the artifact directory; return the base name."""
        if ".." in reference or "\x00" in reference:
            raise _not_found(reference)
        location = Path(reference)
        if len(location.parts) < 2:
            return reference
        # A path is only accepted when its directory is the artifact directory itself.
        inside = location.parent.resolve() == self._artifact_dir.resolve()
        if not inside:
            raise _not_found(reference)
        return location.name

    def _resolve_reference(self, reference: str) -> str:
        candidate = self._within_dir(reference)
        with self._lock:
            known = self._content_types
            if candidate in known:
                return candidate
            same_stem = [name for name in known if Path(name).stem == candidate]
        if len(same_stem) == 1:
            return same_stem[0]
        return candidate

    def _content_type_of(self, filename: str, reference: str) -> str:
        with self._lock:
            value = self._content_types.get(filename)
        if value is None:
            if self._sidecar_damaged:
                logger.warning(
                    "reference=<%s> | content type unknown because the sidecar was damaged, using %s",
                    reference,
                    _DEFAULT_CONTENT_TYPE,
                )
            return _DEFAULT_CONTENT_TYPE
        if not isinstance(value, str):
            raise ValueError(
                f"Content type of '{reference}' in {self._METADATA_FILE} is corrupt: expected a string, got {value!r}"
            )
        return value

    async def retrieve(self, reference: str) -> tuple[bytes, str]:
        """Return ``(content, content_type)`` of a stored file.

        ``reference`` may be the bare file name, a path whose directory is the artifact directory,
        or a name without extension that matches exactly one stored file. The content type comes
        from the sidecar, ``application/octet-stream`` when it has no entry.

        Raises:
            KeyError: ``Reference not found: {reference}`` for unknown references and anything
                resolving outside the directory (``..``, other directories, escaping symlinks).
            ValueError: If the sidecar's entry for this file is not a string.
        """
        if self._sandbox is not None:
            await self._load_sandbox_sidecar()
        filename = self._resolve_reference(reference)
        if self._host:
            content = await asyncio.to_thread(self._read_on_host, filename, reference)
        else:
            assert self._sandbox is not None
            try:
                content = await self._sandbox.read_file(self._artifact_path(filename))
            except Exception as error:
                raise _not_found(reference) from error
        return content, self._content_type_of(filename, reference)

    def _read_on_host(self, filename: str, reference: str) -> bytes:
        if not _hostfs.WALK_SUPPORTED:
            directory_path = self._host_path("")
            path = os.path.join(directory_path, filename)
            if not is_within(path, directory_path) or not os.path.isfile(path):
                raise _not_found(reference)
            try:
                with open(path, "rb") as handle:
                    return handle.read()
            except OSError as error:
                raise _not_found(reference) from error
        if filename in ("", ".", "..") or "/" in filename or os.sep in filename:
            raise _not_found(reference)
        try:
            directory = self._open_host_dir(create=False)
            try:
                return _hostfs.read_in(directory, filename)
            finally:
                os.close(directory)
        except OSError as error:
            raise _not_found(reference) from error


class S3Storage:
    """Blocks as objects in an S3 bucket, with the content type as object metadata.

    The client is created in the constructor. Calls run in a worker thread. Errors from S3 other
    than a missing object propagate as botocore's ``ClientError``.

    Args:
        bucket: Bucket name.
        prefix: Key prefix (``/`` stripped at both ends, one ``/`` appended when not empty).
        boto_session: A boto3 session; by default one is created with ``region_name``.
        boto_client_config: A botocore ``Config``; ``strands-agents`` is appended to its
            ``user_agent_extra``.
        region_name: Region for the session created when no ``boto_session`` is given.
        sse: Keyword-only extension: server-side encryption for every stored block,
            ``"aws:kms"``, ``"aws:kms:dsse"`` or ``"AES256"`` (sent as ``ServerSideEncryption``);
            ``None`` (default) sends nothing, as the reference does.
        sse_kms_key_id: Keyword-only extension: the KMS key (ARN, id or alias) for a KMS mode,
            sent as ``SSEKMSKeyId``.

    Raises:
        ValueError: For an ``sse`` that is not one of the three modes, an ``sse_kms_key_id``
            without a KMS mode or empty, or a value of either that is not a string.
    """

    def __init__(
        self,
        bucket: str,
        prefix: str = "",
        boto_session: Any = None,
        boto_client_config: Any = None,
        region_name: str | None = None,
        *,
        sse: SseMode | None = None,
        sse_kms_key_id: str | None = None,
    ) -> None:
        # Checked before any client is built, so a wrong setting fails without touching AWS.
        self._put_settings = encryption_arguments(sse, sse_kms_key_id, ValueError)
        import boto3  # type: ignore[import-untyped]
        from botocore.config import Config  # type: ignore[import-untyped]

        self._bucket = bucket
        trimmed = prefix.strip("/")
        self._prefix = f"{trimmed}/" if trimmed else ""
        session = boto_session or boto3.Session(region_name=region_name)
        # The legacy backend always appends its tag to whatever user agent extra the caller set.
        caller_tag = getattr(boto_client_config, "user_agent_extra", None) if boto_client_config else None
        tag = " ".join(part for part in (caller_tag, "strands-agents") if part)
        config = Config(user_agent_extra=tag)
        if boto_client_config:
            config = boto_client_config.merge(config)
        self._client: Any = session.client(service_name="s3", config=config)
        self._numbers = _Counter()
        self._lock = threading.Lock()

    async def store(self, key: str, content: bytes, content_type: str = "text/plain") -> str:
        """Upload the block and return ``s3://{bucket}/{object_key}``.

        Raises:
            botocore.exceptions.ClientError: If S3 refuses the upload (a denied or disabled KMS
                key included); no object is left behind then.
        """
        with self._lock:
            number = self._numbers.take()
        object_key = f"{self._prefix}{int(time.time() * 1000)}_{number}_{_sanitize_id(key)}"
        await asyncio.to_thread(
            self._client.put_object,
            Bucket=self._bucket,
            Key=object_key,
            Body=content,
            ContentType=content_type,
            **self._put_settings,
        )
        return f"s3://{self._bucket}/{object_key}"

    async def retrieve(self, reference: str) -> tuple[bytes, str]:
        """Download a block by ``s3://`` reference or bare object key, within bucket and prefix.

        Raises:
            KeyError: ``Reference not found: {reference}`` for missing objects, other buckets and
                keys outside the prefix.
            botocore.exceptions.ClientError: For other S3 errors.
        """
        own_bucket = f"s3://{self._bucket}/"
        is_uri = reference.startswith("s3://")
        object_key = reference.removeprefix(own_bucket) if is_uri else reference
        outside = (is_uri and object_key == reference) or not object_key.startswith(self._prefix)
        if outside:
            raise _not_found(reference)
        try:
            return await asyncio.to_thread(self._download, object_key)
        except Exception as error:
            if is_missing_key(error):
                raise _not_found(reference) from error
            raise

    def _download(self, object_key: str) -> tuple[bytes, str]:
        content, response = get_object(self._client, self._bucket, object_key)
        content_type: str = response.get("ContentType", _DEFAULT_CONTENT_TYPE)
        return content, content_type
