"""S3Storage over real HTTP against moto's standalone server, with and without injected faults."""

from __future__ import annotations

import asyncio
import threading
import time
import uuid
from typing import Any

import pytest
import strands.storage as ref
from _differential import OPERATIONS, percent_escape, replay
from _s3_support import EndpointSession, FaultProxy, endpoint_of, fast_config, new_bucket, start_moto, stop_moto
from hypothesis import HealthCheck, assume, given, settings
from strands.types.exceptions import StorageError
from strands_offload.storage import S3Storage


def run(coro: Any) -> Any:
    return asyncio.run(coro)


def raw_keys(session: EndpointSession, bucket: str) -> list[str]:
    client = session.client("s3")
    keys: list[str] = []
    for page in client.get_paginator("list_objects_v2").paginate(Bucket=bucket):
        keys.extend(item["Key"] for item in page.get("Contents", ()))
    return sorted(keys)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(operations=OPERATIONS)
def test_same_outcomes_as_reference(operations: list[tuple[Any, ...]], s3_session: Any, s3_bucket: str) -> None:
    assume(not percent_escape(operations))
    run_id = uuid.uuid4().hex[:8]
    ours = S3Storage(s3_bucket, prefix=f"ours-{run_id}", boto_session=s3_session)
    theirs = ref.S3Storage(s3_bucket, prefix=f"theirs-{run_id}", boto_session=s3_session)

    async def both() -> tuple[list[Any], list[Any]]:
        mine = await replay(ours, operations) + await replay(ours.namespace("ns"), operations)
        reference = await replay(theirs, operations) + await replay(theirs.namespace("ns"), operations)
        return mine + [await ours.list()], reference + [await theirs.list()]

    mine, reference = run(both())
    assert mine == reference


@pytest.mark.parametrize("prefix", ["", "agents", "agents/", "/deep//agents/"])
def test_objects_interoperate_with_reference(prefix: str, s3_session: Any, s3_bucket: str) -> None:
    ours = S3Storage(s3_bucket, prefix=prefix, boto_session=s3_session)
    theirs = ref.S3Storage(s3_bucket, prefix=prefix, boto_session=s3_session)

    async def scenario() -> None:
        await ours.write("offloader/t_0", b"ours")
        await theirs.write("session/s.json", b"theirs")
        assert await theirs.read("offloader/t_0") == b"ours"
        assert await ours.read("session/s.json") == b"theirs"
        assert await ours.list() == await theirs.list() == ["offloader/t_0", "session/s.json"]
        assert await ours.namespace("offloader").list() == ["t_0"]
        await theirs.delete("offloader/t_0")
        assert await ours.read("offloader/t_0") is None

    run(scenario())
    expected_prefix = {"": "", "agents": "agents/", "agents/": "agents//", "/deep//agents/": "deep/agents//"}[prefix]
    assert raw_keys(s3_session, s3_bucket) == [f"{expected_prefix}session/s.json"]


def test_constructor_rules(s3_session: Any) -> None:
    with pytest.raises(StorageError, match="^Cannot specify both region_name and boto_session$"):
        S3Storage("b", region_name="us-east-1", boto_session=s3_session)
    with pytest.raises(StorageError, match="backslashes"):
        S3Storage("b", prefix="a\\b")
    storage = S3Storage("b", boto_session=s3_session)
    assert storage._get_client() is storage.namespace("x").namespace("y")._get_client()
    assert storage._get_client().meta.config.user_agent_extra == "strands-agents"
    configured = S3Storage("b", boto_session=s3_session, boto_client_config=fast_config(user_agent_extra="mine"))
    assert configured._get_client().meta.config.user_agent_extra == "mine"
    merged = S3Storage("b", boto_session=s3_session, boto_client_config=fast_config())
    client = merged._get_client()
    assert client.meta.config.user_agent_extra == "strands-agents"
    assert client.meta.config.retries["total_max_attempts"] == 3


def test_large_object_round_trip(s3_session: Any, s3_bucket: str) -> None:
    payload = bytes(range(256)) * (21 * 1024 * 1024 // 256)
    storage = S3Storage(s3_bucket, prefix="big", boto_session=s3_session)

    async def scenario() -> bytes | None:
        await storage.write("blob.bin", payload)
        return await storage.read("blob.bin")

    assert run(scenario()) == payload


def test_prefix_scoping_and_plain_prefix_matching(s3_session: Any, s3_bucket: str) -> None:
    root = S3Storage(s3_bucket, boto_session=s3_session)

    async def scenario() -> None:
        for key in ("a/x", "ab/y", "b/z", "a/sub/w"):
            await root.write(key, key.encode())
        scoped = root.namespace("a")
        assert await scoped.list() == ["sub/w", "x"]
        assert await root.list("a") == ["a/sub/w", "a/x", "ab/y"]
        with pytest.raises(StorageError, match="'..' path segments"):
            await scoped.read("../b/z")
        assert [hit.key for hit in await scoped.search("a b z y x w")] == ["sub/w", "x"]
        assert await S3Storage(s3_bucket, prefix="a", boto_session=s3_session).read("x") == b"a/x"

    run(scenario())


def test_missing_bucket_is_an_error_not_a_missing_key(s3_session: Any) -> None:
    storage = S3Storage(f"missing-{uuid.uuid4().hex[:10]}", boto_session=s3_session)

    async def scenario() -> None:
        with pytest.raises(StorageError, match="^Failed to read 'k' from S3$"):
            await storage.read("k")
        with pytest.raises(StorageError, match="^Failed to write 'k' to S3$"):
            await storage.write("k", b"v")
        with pytest.raises(StorageError, match="^Failed to list keys with prefix 'p' from S3$"):
            await storage.list("p")

    run(scenario())


# -- injected faults -------------------------------------------------------------------------


def _through(proxy: FaultProxy, bucket: str, **config: Any) -> S3Storage:
    return S3Storage(bucket, boto_session=EndpointSession(proxy.endpoint), boto_client_config=fast_config(**config))


def test_transient_5xx_and_dropped_connections_are_retried(fault_proxy: FaultProxy, s3_bucket: str) -> None:
    storage = _through(fault_proxy, s3_bucket)

    async def scenario() -> None:
        fault_proxy.fail(2, status=503)
        await storage.write("k", b"v1")
        fault_proxy.drop(2)
        assert await storage.read("k") == b"v1"
        fault_proxy.fail(1, status=500)
        assert await storage.list() == ["k"]

    started = time.monotonic()
    run(scenario())
    assert fault_proxy.faults_served == 5
    assert time.monotonic() - started < 20


def test_persistent_server_errors_surface_as_storage_errors(
    fault_proxy: FaultProxy, s3_bucket: str, s3_session: Any
) -> None:
    storage = _through(fault_proxy, s3_bucket)

    async def scenario() -> None:
        fault_proxy.fail(3, status=500)
        with pytest.raises(StorageError, match="^Failed to write 'k' to S3$") as caught:
            await storage.write("k", b"v")
        assert "InternalError" in str(caught.value.__cause__)
        fault_proxy.drop(3)
        with pytest.raises(StorageError, match="^Failed to read 'k' from S3$"):
            await storage.read("k")
        fault_proxy.fail(3, status=503)
        with pytest.raises(StorageError, match="^Failed to delete 'k' from S3$"):
            await storage.delete("k")

    run(scenario())
    assert raw_keys(s3_session, s3_bucket) == []


def test_server_going_away_mid_run(fault_proxy: FaultProxy, s3_bucket: str, s3_session: Any) -> None:
    """Cut the server off while 200 writes are in flight: every reported success is really stored."""
    storage = _through(fault_proxy, s3_bucket, retries={"total_max_attempts": 2, "mode": "standard"})
    outcomes: dict[str, str] = {}
    killer = threading.Thread(target=fault_proxy.kill)

    async def one(index: int) -> None:
        key = f"k{index:03d}"
        try:
            await storage.write(key, key.encode() * 100)
            outcomes[key] = "stored"
            if list(outcomes.values()).count("stored") == 20:
                killer.start()  # the server goes away while the other writes are in flight
        except StorageError as error:
            assert str(error) == f"Failed to write '{key}' to S3"
            outcomes[key] = "failed"

    async def scenario() -> None:
        await asyncio.gather(*(one(i) for i in range(200)))
        killer.join()
        with pytest.raises(StorageError, match="^Failed to read 'k000' from S3$"):
            await storage.read("k000")

    started = time.monotonic()
    run(scenario())
    assert time.monotonic() - started < 60
    stored = {key for key, state in outcomes.items() if state == "stored"}
    assert len(outcomes) == 200 and "failed" in outcomes.values()
    present = set(raw_keys(s3_session, s3_bucket))
    assert stored <= present
    direct = S3Storage(s3_bucket, boto_session=s3_session)
    for key in stored:
        assert run(direct.read(key)) == key.encode() * 100


def test_real_server_stopping(s3_session: Any) -> None:
    server = start_moto()
    endpoint = endpoint_of(server)
    bucket = new_bucket(endpoint)
    storage = S3Storage(bucket, boto_session=EndpointSession(endpoint), boto_client_config=fast_config())
    run(storage.write("before", b"1"))
    stop_moto(server)
    with pytest.raises(StorageError, match="^Failed to write 'after' to S3$"):
        run(storage.write("after", b"2"))
    with pytest.raises(StorageError, match="^Failed to list keys with prefix '' from S3$"):
        run(storage.list())
