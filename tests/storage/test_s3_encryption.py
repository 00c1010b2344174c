"""Server-side encryption (``sse``, ``sse_kms_key_id``) on every S3 write path, over HTTP to moto.

A moto server on 127.0.0.1 serves S3 and KMS. Each test writes through a path (unified storage,
its namespaced copies and views, the offloader with unified or legacy storage, the context
manager's stash), then checks every object in the bucket with ``head_object`` and every
``put_object`` the client sent with a botocore hook (moto reports no key id for ``aws:kms:dsse``).
KMS refusals are stubbed with a ``before-send`` hook answering as S3 does, since moto accepts a
disabled key.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Iterator
from typing import Any

import boto3
import pytest
import strands.storage as ref_storage
from _agent_harness import references_in
from _agent_harness import run as run_agent
from _cm_harness import OURS, ContextModel, Reply, ToolCall, replies, tool_results
from _s3_support import ACCESS_KEY, REGION, SECRET_KEY
from botocore.awsrequest import AWSResponse
from botocore.exceptions import ClientError
from strands import Agent, tool
from strands.types.exceptions import StorageError
from strands.vended_plugins.context_offloader import ContextOffloader as RefOffloader
from strands.vended_plugins.context_offloader import S3Storage as RefLegacyS3Storage
from strands_offload.context_offloader import ContextOffloader
from strands_offload.context_offloader import S3Storage as LegacyS3Storage
from strands_offload.storage import S3Storage
from strands_offload.storage.s3_storage import EncryptionSettingsError
from strands_offload.storage.storage import _NamespacedStorage

SETTINGS_KEYS = ("ServerSideEncryption", "SSEKMSKeyId")
BIG_TEXT = "".join(f"{i:05d} customer record id={i} status={'FAILED' if i % 50 == 7 else 'ok'}\n" for i in range(900))
LOG = "".join(f"{i:05d} GET /api/items status={'500 ERROR' if i % 40 == 3 else '200'}\n" for i in range(1_500))


def run(coroutine: Any) -> Any:
    return asyncio.run(coroutine)


class _Body:
    """The raw stream an ``AWSResponse`` reads its content from."""

    def __init__(self, data: bytes) -> None:
        self._data = data

    def stream(self, **_: Any) -> Iterator[bytes]:
        yield self._data


# One boto3 session for the module: it loads the service models once, so clients come quickly.
_BOTO = boto3.Session(aws_access_key_id=ACCESS_KEY, aws_secret_access_key=SECRET_KEY, region_name=REGION)


class HookedSession:
    """A boto3-like session for the moto endpoint whose clients record and can refuse ``PutObject``.

    The storage classes only call ``client(...)`` on the session they are given. ``puts`` holds
    each call's parameters (without the body), as the caller passed them to boto3. With
    ``refusal = (status, code, message)`` every ``PutObject`` is answered with that S3 error before
    it leaves the client, so nothing reaches the bucket.
    """

    def __init__(self, endpoint: str) -> None:
        self.endpoint = endpoint
        self.puts: list[dict[str, Any]] = []
        self.refusal: tuple[int, str, str] | None = None
        self.plain = self.client("s3", hooks=False)

    def client(self, *args: Any, hooks: bool = True, **kwargs: Any) -> Any:
        kwargs.setdefault("endpoint_url", self.endpoint)
        client = _BOTO.client(*args, **kwargs)
        if not hooks:
            return client
        client.meta.events.register("before-parameter-build.s3.PutObject", self._record)
        client.meta.events.register("before-send.s3.PutObject", self._refuse)
        return client

    def _record(self, params: dict[str, Any], **_: Any) -> None:
        self.puts.append({name: value for name, value in params.items() if name != "Body"})

    def _refuse(self, request: Any, **_: Any) -> AWSResponse | None:
        if self.refusal is None:
            return None
        status, code, message = self.refusal
        body = (
            f"<?xml version='1.0' encoding='UTF-8'?><Error><Code>{code}</Code><Message>{message}</Message>"
            "<RequestId>stub</RequestId></Error>"
        ).encode()
        return AWSResponse(request.url, status, {"Content-Type": "application/xml"}, _Body(body))


# What real S3 answers when the caller may not use the key, and when the key is disabled.
DENIED = (403, "AccessDenied", "User is not authorized to perform: kms:GenerateDataKey on the key")
DISABLED = (400, "KMS.DisabledException", "The key is disabled.")


@pytest.fixture(scope="module")
def kms_key(s3_endpoint: str) -> dict[str, str]:
    """A KMS key on the moto server: its ARN, id and an alias."""
    kms = _BOTO.client("kms", endpoint_url=s3_endpoint)
    metadata = kms.create_key(Description="strands-offload sse tests")["KeyMetadata"]
    alias = f"alias/sse-{uuid.uuid4().hex[:8]}"
    kms.create_alias(AliasName=alias, TargetKeyId=metadata["KeyId"])
    return {"arn": metadata["Arn"], "id": metadata["KeyId"], "alias": alias}


@pytest.fixture
def hooked(s3_endpoint: str) -> HookedSession:
    return HookedSession(s3_endpoint)


@pytest.fixture
def bucket(hooked: HookedSession) -> str:
    """A fresh, empty bucket (the shared fixture's, made with this module's quicker session)."""
    name = f"t-{uuid.uuid4().hex[:20]}"
    hooked.plain.create_bucket(Bucket=name)
    return name


# (sse, which key: None or a kms_key field)
SETTINGS = [
    pytest.param("AES256", None, id="AES256"),
    pytest.param("aws:kms", None, id="kms-managed-key"),
    pytest.param("aws:kms", "arn", id="kms-key-arn"),
    pytest.param("aws:kms", "alias", id="kms-key-alias"),
    pytest.param("aws:kms:dsse", "id", id="dsse-key-id"),
]


def expected_settings(sse: str | None, key_id: str | None) -> dict[str, str | None]:
    return {"ServerSideEncryption": sse, "SSEKMSKeyId": key_id}


def objects(session: HookedSession, bucket: str) -> list[str]:
    listed = session.plain.list_objects_v2(Bucket=bucket)
    return sorted(item["Key"] for item in listed.get("Contents", ()))


def assert_all_encrypted(session: HookedSession, bucket: str, sse: str, key_id: str | None) -> list[str]:
    """Every put sent the settings, every object in the bucket was put and is encrypted so."""
    assert session.puts, "nothing was written"
    expected = expected_settings(sse, key_id)
    for put in session.puts:
        assert {name: put.get(name) for name in SETTINGS_KEYS} == expected, put["Key"]
    written = objects(session, bucket)
    assert written == sorted({put["Key"] for put in session.puts})
    for object_key in written:
        head = session.plain.head_object(Bucket=bucket, Key=object_key)
        assert head["ServerSideEncryption"] == sse, object_key
        if sse == "aws:kms" and key_id is not None:
            # moto echoes the key as given; it reports none for aws:kms:dsse (the hook checked that).
            assert head["SSEKMSKeyId"] == key_id, object_key
    return written


# -- unified S3Storage: direct writes, namespaced copies and generic views --------------------------


@pytest.mark.parametrize(("sse", "key_field"), SETTINGS)
def test_unified_writes_are_encrypted_on_every_path(
    sse: str, key_field: str | None, kms_key: dict[str, str], hooked: HookedSession, bucket: str
) -> None:
    key_id = kms_key[key_field] if key_field else None
    storage = S3Storage(bucket, prefix="data", boto_session=hooked, sse=sse, sse_kms_key_id=key_id)  # type: ignore[arg-type]

    async def scenario() -> None:
        await storage.write("direct/row", b"direct")
        nested = storage.namespace("tenant-a").namespace("offloader")
        await nested.write("row", b"nested")
        await _NamespacedStorage(storage, "view").write("row", b"view")
        await _NamespacedStorage(storage, "view").namespace("deeper").write("row", b"deeper view")
        # Reads need no setting and get the plaintext back.
        assert await storage.read("direct/row") == b"direct"
        assert await nested.read("row") == b"nested"
        assert await storage.read("view/deeper/row") == b"deeper view"

    run(scenario())
    assert assert_all_encrypted(hooked, bucket, sse, key_id) == [
        "data/direct/row",
        "data/tenant-a/offloader/row",
        "data/view/deeper/row",
        "data/view/row",
    ]


def test_without_settings_puts_are_the_reference_calls(hooked: HookedSession, bucket: str) -> None:
    ours = S3Storage(bucket, prefix="p", boto_session=hooked)
    run(ours.write("k", b"v"))
    legacy = LegacyS3Storage(bucket, "legacy", hooked)
    run(legacy.store("k", b"v", "text/plain"))
    ours_puts = list(hooked.puts)
    hooked.puts.clear()
    run(ref_storage.S3Storage(bucket, prefix="p", boto_session=hooked).write("k", b"v"))
    run(RefLegacyS3Storage(bucket, "legacy", hooked).store("k", b"v", "text/plain"))
    assert [sorted(put) for put in ours_puts] == [sorted(put) for put in hooked.puts]
    assert all(name not in put for put in ours_puts for name in SETTINGS_KEYS)


# -- the offloader: unified storage (framed blocks, handle table) and the legacy backend ---------------


def _offload_and_retrieve(plugin: Any) -> list[dict[str, Any]]:
    """One big tool result offloaded, then grepped back through the retrieval tool."""
    _agent, results = run_agent(plugin, [{"text": BIG_TEXT}], [{"reference": 0, "pattern": "FAILED"}])
    assert results[0]["content"][0]["text"].startswith("[Offloaded: ")
    assert "00007 customer record id=7 status=FAILED" in results[1]["content"][0]["text"]
    return results


@pytest.mark.parametrize(("sse", "key_field"), SETTINGS)
@pytest.mark.parametrize("opaque", [False, True], ids=["keys", "opaque-handles"])
def test_offloader_on_unified_storage_encrypts_blocks_and_handle_table(
    sse: str, key_field: str | None, opaque: bool, kms_key: dict[str, str], hooked: HookedSession, bucket: str
) -> None:
    key_id = kms_key[key_field] if key_field else None
    storage = S3Storage(bucket, boto_session=hooked, sse=sse, sse_kms_key_id=key_id)  # type: ignore[arg-type]
    _offload_and_retrieve(ContextOffloader(storage, opaque_references=opaque))
    written = assert_all_encrypted(hooked, bucket, sse, key_id)
    assert all(name.startswith("offloader/") for name in written)
    # With opaque handles the handle table is one more object, encrypted like the blocks.
    assert any(".__strands_offload_handles_" in name for name in written) is opaque


@pytest.mark.parametrize(("sse", "key_field"), SETTINGS)
def test_offloader_on_legacy_storage_encrypts_blocks(
    sse: str, key_field: str | None, kms_key: dict[str, str], hooked: HookedSession, bucket: str
) -> None:
    key_id = kms_key[key_field] if key_field else None
    storage = LegacyS3Storage(bucket, "tool-results", hooked, sse=sse, sse_kms_key_id=key_id)  # type: ignore[arg-type]
    results = _offload_and_retrieve(ContextOffloader(storage))
    written = assert_all_encrypted(hooked, bucket, sse, key_id)
    assert references_in(results[0]["content"][0]["text"]) == [f"s3://{bucket}/{name}" for name in written]
    assert all(put["ContentType"] == "text/plain" for put in hooked.puts)


# -- the context manager's stash on S3 ---------------------------------------------------------


@tool
def read_log() -> str:
    """Read the access log."""
    return LOG


def _stash_agent(stash_storage: Any = None, **agent_kwargs: Any) -> Agent:
    """One turn whose log is truncated on arrival, its original stashed (in ``stash_storage`` if given)."""
    strategy = OURS.Offload.truncate("tool_results", {"preview_tokens": 100}).when(threshold=400)
    model = ContextModel(replies(Reply("", [ToolCall("read_log", {}, "tu_log")]), Reply("500s at 3, 43, 83")))
    stash = None if stash_storage is None else {"storage": stash_storage}
    return Agent(
        model=model,
        tools=[read_log],
        context_manager=OURS.ContextManager(strategies=[strategy], stash=stash),
        callback_handler=None,
        **agent_kwargs,
    )


@pytest.mark.parametrize(("sse", "key_field"), SETTINGS)
@pytest.mark.parametrize("where", ["agent-storage", "stash-namespace"])
def test_stash_on_s3_is_encrypted(
    sse: str, key_field: str | None, where: str, kms_key: dict[str, str], hooked: HookedSession, bucket: str
) -> None:
    key_id = kms_key[key_field] if key_field else None
    storage = S3Storage(bucket, prefix="cm", boto_session=hooked, sse=sse, sse_kms_key_id=key_id)  # type: ignore[arg-type]
    if where == "agent-storage":
        agent = _stash_agent(storage=storage)
    else:
        agent = _stash_agent(storage.namespace("team"))
    agent("any server errors?")
    preview = tool_results(agent.messages)[0]["content"][0]["text"]
    assert preview.startswith("[Truncated: ") and preview.endswith("[Stashed] [ref: tu_log_0]")
    assert run(agent.context_manager.stash.retrieve("tu_log_0")) == {"text": LOG}  # type: ignore[union-attr]
    written = assert_all_encrypted(hooked, bucket, sse, key_id)
    stashed = "cm/team/tu_log_0" if where == "stash-namespace" else "cm/context/"
    assert any(name.startswith(stashed) for name in written), written


# -- construction errors ------------------------------------------------------------------------

MISUSE = [
    pytest.param({"sse": "aws:kms:fips"}, "Unknown sse 'aws:kms:fips'", id="unknown-mode"),
    pytest.param({"sse": "aes256"}, "Unknown sse 'aes256'", id="wrong-case"),
    pytest.param({"sse": ""}, "Unknown sse ''", id="empty-mode"),
    pytest.param({"sse_kms_key_id": "alias/k"}, "sse_kms_key_id needs sse='aws:kms'", id="key-without-mode"),
    pytest.param({"sse": "AES256", "sse_kms_key_id": "alias/k"}, "not sse='AES256'", id="key-with-AES256"),
    pytest.param({"sse": "aws:kms", "sse_kms_key_id": " "}, "sse_kms_key_id must not be empty", id="blank-key"),
    pytest.param({"sse": b"aws:kms"}, "sse must be a string or None, not bytes", id="bytes-mode"),
    pytest.param({"sse": "aws:kms", "sse_kms_key_id": 7}, "sse_kms_key_id must be a string", id="int-key"),
]


@pytest.mark.parametrize(("settings", "message"), MISUSE)
def test_unified_misuse_fails_at_construction(settings: dict[str, Any], message: str, hooked: HookedSession) -> None:
    with pytest.raises(EncryptionSettingsError) as caught:
        S3Storage("bucket", boto_session=hooked, **settings)
    assert message in str(caught.value)
    assert isinstance(caught.value, StorageError) and isinstance(caught.value, ValueError)


@pytest.mark.parametrize(("settings", "message"), MISUSE)
def test_legacy_misuse_fails_at_construction(settings: dict[str, Any], message: str, hooked: HookedSession) -> None:
    with pytest.raises(ValueError, match="^") as caught:
        LegacyS3Storage("bucket", boto_session=hooked, **settings)
    assert message in str(caught.value)


def test_legacy_settings_are_keyword_only(hooked: HookedSession) -> None:
    with pytest.raises(TypeError):
        LegacyS3Storage("bucket", "", hooked, None, None, "aws:kms")  # type: ignore[misc]


# -- a KMS refusal: the write fails whole, as each class's normal write error ----------------------


@pytest.mark.parametrize("refusal", [DENIED, DISABLED], ids=["access-denied", "key-disabled"])
def test_unified_write_refused_by_kms(
    refusal: tuple[int, str, str], kms_key: dict[str, str], hooked: HookedSession, bucket: str
) -> None:
    storage = S3Storage(bucket, prefix="p", boto_session=hooked, sse="aws:kms", sse_kms_key_id=kms_key["arn"])
    run(storage.write("kept", b"before"))
    hooked.refusal = refusal
    for target, key in ((storage, "kept"), (storage, "new"), (storage.namespace("ns"), "new")):
        with pytest.raises(StorageError, match=f"^Failed to write '{key}' to S3$") as caught:
            run(target.write(key, b"after"))
        cause = caught.value.__cause__
        assert isinstance(cause, ClientError) and cause.response["Error"]["Code"] == refusal[1]
    hooked.refusal = None
    assert run(storage.read("kept")) == b"before"
    assert objects(hooked, bucket) == ["p/kept"]
    # Every attempt asked for the key: there is no fallback to an unencrypted write.
    assert all(put.get("SSEKMSKeyId") == kms_key["arn"] for put in hooked.puts)


@pytest.mark.parametrize("refusal", [DENIED, DISABLED], ids=["access-denied", "key-disabled"])
def test_legacy_store_refused_by_kms(
    refusal: tuple[int, str, str], kms_key: dict[str, str], hooked: HookedSession, bucket: str
) -> None:
    storage = LegacyS3Storage(bucket, "p", hooked, sse="aws:kms:dsse", sse_kms_key_id=kms_key["id"])
    hooked.refusal = refusal
    with pytest.raises(ClientError) as caught:
        run(storage.store("block", b"rows", "text/plain"))
    assert caught.value.response["Error"]["Code"] == refusal[1]
    assert objects(hooked, bucket) == []


def _refused_offload(plugin: Any) -> list[dict[str, Any]]:
    _agent, results = run_agent(plugin, [{"text": BIG_TEXT}])
    return results


@pytest.mark.parametrize("backend", ["unified", "legacy"])
def test_offloader_keeps_the_original_result_when_kms_refuses(
    backend: str, kms_key: dict[str, str], hooked: HookedSession, bucket: str
) -> None:
    """As with any failed write: the result stays in context whole, as the reference keeps it."""
    hooked.refusal = DENIED
    if backend == "unified":
        storage: Any = S3Storage(bucket, boto_session=hooked, sse="aws:kms", sse_kms_key_id=kms_key["arn"])
        reference_storage: Any = ref_storage.S3Storage(bucket, boto_session=hooked)
    else:
        storage = LegacyS3Storage(bucket, "p", hooked, sse="aws:kms", sse_kms_key_id=kms_key["arn"])
        reference_storage = RefLegacyS3Storage(bucket, "p", hooked)
    ours = _refused_offload(ContextOffloader(storage))
    assert ours[0]["content"] == [{"text": BIG_TEXT}]
    assert ours == _refused_offload(RefOffloader(reference_storage))
    assert objects(hooked, bucket) == []


def test_stash_keeps_the_block_when_kms_refuses(kms_key: dict[str, str], hooked: HookedSession, bucket: str) -> None:
    storage = S3Storage(bucket, boto_session=hooked, sse="aws:kms", sse_kms_key_id=kms_key["arn"])
    hooked.refusal = DISABLED
    agent = _stash_agent(storage=storage)
    agent("any server errors?")
    assert tool_results(agent.messages)[0]["content"] == [{"text": LOG}]
    assert objects(hooked, bucket) == []
