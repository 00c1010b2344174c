"""InMemoryStorage against the reference's, operation by operation."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
import strands.storage as ref
from _differential import OPERATIONS, PREFIXES, percent_escape, replay
from hypothesis import assume, given, settings
from strands.types.exceptions import StorageError
from strands_offload.storage import InMemoryStorage


@settings(max_examples=200, deadline=None)
@given(OPERATIONS, PREFIXES)
def test_same_outcomes_as_reference(operations: list[tuple[Any, ...]], namespace: str) -> None:
    assume(not percent_escape(operations) and "%2e%2e" not in namespace)

    async def both() -> tuple[list[Any], list[Any]]:
        ours_root, theirs_root = InMemoryStorage(), ref.InMemoryStorage()
        ours = await replay(ours_root, operations)
        theirs = await replay(theirs_root, operations)
        try:
            ref_scoped = theirs_root.namespace(namespace)
        except StorageError as error:
            with pytest.raises(StorageError, match=str(error).replace("\\", "\\\\").replace(".", r"\.")):
                ours_root.namespace(namespace)
            return ours, theirs
        our_scoped = ours_root.namespace(namespace)
        ours += await replay(our_scoped, operations)
        theirs += await replay(ref_scoped, operations)
        ours.append(await ours_root.list())
        theirs.append(await theirs_root.list())
        our_scoped.clear()
        ref_scoped.clear()
        ours.append(await ours_root.list())
        theirs.append(await theirs_root.list())
        return ours, theirs

    ours, theirs = asyncio.run(both())
    assert ours == theirs


def test_values_are_copied_and_prefix_matching_is_plain() -> None:
    async def scenario() -> None:
        storage = InMemoryStorage()
        buffer = bytearray(b"abc")
        await storage.write("/a//b/", buffer)
        buffer[0] = ord("z")
        assert await storage.read("a/b") == b"abc"
        await storage.write("ab/c", b"")
        assert await storage.list("a") == ["a/b", "ab/c"]
        assert await storage.list("a/") == ["a/b"]
        assert await storage.read("missing") is None
        await storage.delete("missing")

    asyncio.run(scenario())


def test_namespace_copy_preserves_subclass_and_shares_entries() -> None:
    class Tagged(InMemoryStorage):
        tag = "t"

    async def scenario() -> None:
        root = Tagged()
        scoped = root.namespace("one").namespace("two/")
        assert type(scoped) is Tagged and scoped._prefix == "one/two/"
        await scoped.write("k", b"v")
        assert await root.read("one/two/k") == b"v"
        assert root.namespace("")._prefix == ""
        root.namespace("").clear()
        assert await root.list() == []

    asyncio.run(scenario())


class _FailingIndex:
    requires_host_fs = False

    async def index(self, storage: Any, key: str, data: bytes, **kwargs: Any) -> None:
        raise RuntimeError("index down")

    async def search(self, storage: Any, query: str, **kwargs: Any) -> list[Any]:
        return []


def test_indexing_failure_keeps_the_value() -> None:
    async def scenario() -> None:
        storage = InMemoryStorage(search_strategy=_FailingIndex())
        with pytest.raises(StorageError, match="^Wrote 'k' but indexing failed$") as caught:
            await storage.write("k", b"v")
        assert isinstance(caught.value.__cause__, RuntimeError)
        assert await storage.read("k") == b"v"

    asyncio.run(scenario())
