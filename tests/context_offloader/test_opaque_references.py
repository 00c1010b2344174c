"""``opaque_references=True``: the model sees handles only, and handles outlive the plugin.

Every error the model can get names the handle, never a storage key, path or bucket; the handle
table kept in durable storage lets a restarted plugin (same storage, namespace and agent id)
resolve the handles of an earlier run, while any other agent id or namespace finds nothing.
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
from pathlib import Path
from typing import Any

import pytest
from _agent_harness import references_in, run
from strands_offload.context_offloader import ContextOffloader
from strands_offload.context_offloader import FileStorage as LegacyFileStorage
from strands_offload.context_offloader._frame import frame, unframe
from strands_offload.context_offloader._handles import HandleTable, is_reserved, table_key
from strands_offload.storage import InMemoryStorage, LocalFileStorage, S3Storage

BIG = "\n".join(f"row {i}: value={i * 7} status={'FAIL' if i % 50 == 0 else 'ok'}" for i in range(4000))
TOOL_USE_ID = "tooluse_big_1"
KEY = f"{TOOL_USE_ID}_0"


def offload(storage: Any, agent_id: str = "alpha", **options: Any) -> tuple[Any, str, str]:
    """Offload BIG through a real agent; return the agent, the handle and its first grep answer."""
    plugin = ContextOffloader(storage, opaque_references=True, **options)
    agent, results = run(
        plugin,
        [{"text": BIG}],
        [{"reference": 0, "pattern": "row 3999:"}],
        agent_kwargs={"agent_id": agent_id},
    )
    notice = results[0]["content"][0]["text"]
    (handle,) = references_in(notice)
    assert results[1]["status"] == "success", results[1]
    return agent, handle, results[1]["content"][0]["text"]


def retrieve(storage: Any, handle: str, agent_id: str = "alpha", arguments: dict[str, Any] | None = None) -> Any:
    """A fresh plugin and agent (a restart) call the retrieval tool with ``handle``."""
    plugin = ContextOffloader(storage, opaque_references=True)
    call = {"pattern": "row 3999:"} if arguments is None else arguments
    _, results = run(plugin, [{"text": "small"}], [{"reference": handle, **call}], agent_kwargs={"agent_id": agent_id})
    return results[1]


def error_text(result: dict[str, Any]) -> str:
    assert result["status"] == "error", result
    text: str = result["content"][0]["text"]
    return text


def assert_names_only(text: str, handle: str, *secrets: str) -> None:
    assert handle in text
    for secret in ("tooluse", "offloader", ".__strands", *secrets):
        assert secret not in text, (secret, text)


# ---------------------------------------------------------------------------
# errors name the handle only


def test_corrupt_entry_error_names_the_handle(tmp_path: Path) -> None:
    agent, handle, _ = offload(LocalFileStorage(str(tmp_path)))
    (tmp_path / "offloader" / KEY).write_bytes(b"\xff\xff")
    result = agent.tool.retrieve_offloaded_content(reference=handle, pattern="row")
    text = error_text(result)
    assert text == (
        f"Error: Stored entry '{handle}' is unreadable: Corrupt storage frame: content-type length 65535 exceeds "
        "frame size 2"
    )


def test_directory_in_place_of_the_entry_error_names_the_handle(tmp_path: Path) -> None:
    agent, handle, _ = offload(LocalFileStorage(str(tmp_path)))
    entry = tmp_path / "offloader" / KEY
    entry.unlink()
    entry.mkdir()
    text = error_text(agent.tool.retrieve_offloaded_content(reference=handle, pattern="row"))
    assert_names_only(text, handle, str(tmp_path))
    assert text == f"Error: Stored entry '{handle}' could not be read from storage (StorageError)"


def test_legacy_file_storage_errors_name_the_handle(tmp_path: Path) -> None:
    agent, handle, _ = offload(LegacyFileStorage(str(tmp_path)))
    (stored,) = [path for path in tmp_path.iterdir() if not path.name.startswith(".")]
    stored.unlink()
    stored.mkdir()
    text = error_text(agent.tool.retrieve_offloaded_content(reference=handle))
    assert_names_only(text, handle, str(tmp_path), stored.name)


def _delete_bucket(session: Any, bucket: str) -> None:
    client = session.client("s3")
    for item in client.list_objects_v2(Bucket=bucket).get("Contents", []):
        client.delete_object(Bucket=bucket, Key=item["Key"])
    client.delete_bucket(Bucket=bucket)


def test_deleted_s3_bucket_error_names_the_handle(s3_session: Any, s3_bucket: str) -> None:
    storage = S3Storage(s3_bucket, prefix="tenant", boto_session=s3_session)
    agent, handle, _ = offload(storage)
    _delete_bucket(s3_session, s3_bucket)
    # The plugin that issued the handle fails reading the entry ...
    text = error_text(agent.tool.retrieve_offloaded_content(reference=handle, pattern="row"))
    assert_names_only(text, handle, s3_bucket, "tenant")
    # ... and a restarted one fails reading the handle table.
    restarted = error_text(retrieve(S3Storage(s3_bucket, prefix="tenant", boto_session=s3_session), handle))
    assert_names_only(restarted, handle, s3_bucket, "tenant")


def test_storage_failure_details_go_to_the_log(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    agent, handle, _ = offload(LocalFileStorage(str(tmp_path)))
    entry = tmp_path / "offloader" / KEY
    entry.unlink()
    entry.mkdir()
    agent.tool.retrieve_offloaded_content(reference=handle, pattern="row")
    logged = [record for record in caplog.records if handle in record.getMessage()]
    assert logged and logged[0].exc_info is not None
    assert KEY in str(logged[0].exc_info[1])


def test_unknown_handles_and_raw_keys_are_not_found(tmp_path: Path) -> None:
    agent, handle, _ = offload(LocalFileStorage(str(tmp_path)))
    for shown in ("ref_AAAAAAAAAAAAAAAA", KEY, f"offloader/{KEY}", table_key("alpha")):
        text = error_text(agent.tool.retrieve_offloaded_content(reference=shown, pattern="row"))
        assert text == f"Error: reference not found: {shown}"


# ---------------------------------------------------------------------------
# handles survive a restart, for the same agent and namespace only


def test_restarted_plugin_resolves_old_handles_on_local_files(tmp_path: Path) -> None:
    _, handle, answer = offload(LocalFileStorage(str(tmp_path)))
    result = retrieve(LocalFileStorage(str(tmp_path)), handle)
    assert result["status"] == "success", result
    assert result["content"][0]["text"] == answer
    assert answer.startswith("[1 match for /row 3999:/]") and answer.endswith("> 4000| row 3999: value=27993 status=ok")


def test_restarted_plugin_resolves_old_handles_on_s3(s3_session: Any, s3_bucket: str) -> None:
    _, handle, answer = offload(S3Storage(s3_bucket, prefix="tenant", boto_session=s3_session))
    result = retrieve(S3Storage(s3_bucket, prefix="tenant", boto_session=s3_session), handle)
    assert result["status"] == "success", result
    assert result["content"][0]["text"] == answer


def test_restarted_plugin_reads_full_content_and_line_ranges(tmp_path: Path) -> None:
    _, handle, _ = offload(LocalFileStorage(str(tmp_path)))
    whole = retrieve(LocalFileStorage(str(tmp_path)), handle, arguments={})
    assert whole["status"] == "success" and whole["content"][0]["text"] == BIG
    lines = retrieve(LocalFileStorage(str(tmp_path)), handle, arguments={"line_range": {"start": 2, "end": 3}})
    assert (
        lines["content"][0]["text"]
        == "[Lines 2-3 of 4000]\n\n  2| row 1: value=7 status=ok\n  3| row 2: value=14 status=ok"
    )


def test_another_agent_id_does_not_resolve(tmp_path: Path) -> None:
    _, handle, _ = offload(LocalFileStorage(str(tmp_path)), agent_id="alpha")
    text = error_text(retrieve(LocalFileStorage(str(tmp_path)), handle, agent_id="beta"))
    assert text == f"Error: reference not found: {handle}"


def test_another_namespace_does_not_resolve(tmp_path: Path) -> None:
    _, handle, _ = offload(LocalFileStorage(str(tmp_path)).namespace("team-a"))
    text = error_text(retrieve(LocalFileStorage(str(tmp_path)).namespace("team-b"), handle))
    assert text == f"Error: reference not found: {handle}"
    assert retrieve(LocalFileStorage(str(tmp_path)).namespace("team-a"), handle)["status"] == "success"


def test_a_table_copied_to_another_agent_is_not_honoured(tmp_path: Path) -> None:
    _, handle, _ = offload(LocalFileStorage(str(tmp_path)), agent_id="alpha")
    folder = tmp_path / "offloader"
    shutil.copy(folder / table_key("alpha"), folder / table_key("beta"))
    text = error_text(retrieve(LocalFileStorage(str(tmp_path)), handle, agent_id="beta"))
    assert text == f"Error: reference not found: {handle}"


@pytest.mark.parametrize(
    "payload",
    [b"not a frame", frame(b"[" * 100_000, "application/vnd.strands-offload.handles+json"), frame(b"{}", "text/plain")],
)
def test_a_damaged_table_means_not_found_and_is_rewritten(tmp_path: Path, payload: bytes) -> None:
    _, handle, _ = offload(LocalFileStorage(str(tmp_path)))
    (tmp_path / "offloader" / table_key("alpha")).write_bytes(payload)
    assert error_text(retrieve(LocalFileStorage(str(tmp_path)), handle)) == f"Error: reference not found: {handle}"
    # The next offload of the agent writes a sound table again.
    _, fresh, _ = offload(LocalFileStorage(str(tmp_path)))
    assert retrieve(LocalFileStorage(str(tmp_path)), fresh)["status"] == "success"


def test_parallel_offloads_keep_every_handle(tmp_path: Path) -> None:
    async def scenario() -> list[str]:
        storage = LocalFileStorage(str(tmp_path)).namespace("offloader")
        table = HandleTable(storage, "alpha")
        batches = await asyncio.gather(*(table.issue([f"key_{n}_0"]) for n in range(20)))
        return [handle for batch in batches for handle in batch]

    handles = asyncio.run(scenario())

    async def resolve_all() -> list[str | None]:
        table = HandleTable(LocalFileStorage(str(tmp_path)).namespace("offloader"), "alpha")
        return [await table.resolve(handle) for handle in handles]

    assert asyncio.run(resolve_all()) == [f"key_{n}_0" for n in range(20)]


def test_evicted_entries_leave_the_stored_table(tmp_path: Path) -> None:
    storage = LocalFileStorage(str(tmp_path))
    plugin = ContextOffloader(storage, opaque_references=True, evict_after_cycles=1)
    retrievals = [{"reference": "ref_missing", "pattern": "x"}] * 3 + [{"reference": 0, "pattern": "FAIL"}]
    _, results = run(plugin, [{"text": BIG}], retrievals, agent_kwargs={"agent_id": "alpha"})
    assert error_text(results[-1]).startswith("Error: reference not found: ref_")
    assert not (tmp_path / "offloader" / KEY).exists()
    payload, content_type = unframe((tmp_path / "offloader" / table_key("alpha")).read_bytes())
    stored = json.loads(payload)
    assert content_type == "application/vnd.strands-offload.handles+json"
    assert (stored["agent_id"], stored["handles"]) == ("alpha", {})


# ---------------------------------------------------------------------------
# the reserved key stays out of the way


def test_reserved_key_is_hidden_from_local_listing_and_search(tmp_path: Path) -> None:
    root = LocalFileStorage(str(tmp_path))
    offload(root)
    assert table_key("alpha") in os.listdir(tmp_path / "offloader")
    scoped = root.namespace("offloader")

    async def look() -> tuple[list[str], list[str]]:
        hits = await scoped.search("row 3999 alpha handles strands offload")
        return await scoped.list(""), [hit.key for hit in hits]

    listed, found = asyncio.run(look())
    assert listed == found == [KEY]


def test_reserved_key_does_not_break_listing_or_search_elsewhere() -> None:
    storage = InMemoryStorage()
    offload(storage)

    async def look() -> tuple[list[str], list[str]]:
        hits = await storage.search("row 3999")
        return await storage.list("offloader/"), [hit.key for hit in hits]

    listed, found = asyncio.run(look())
    assert sorted(listed) == sorted([f"offloader/{KEY}", f"offloader/{table_key('alpha')}"])
    assert found == [f"offloader/{KEY}"]


def test_reserved_key_is_refused_without_opaque_references(tmp_path: Path) -> None:
    offload(LocalFileStorage(str(tmp_path)))
    plugin = ContextOffloader(LocalFileStorage(str(tmp_path)))
    _, results = run(plugin, [{"text": "small"}], [{"reference": table_key("alpha")}])
    assert error_text(results[1]) == f"Error: reference not found: {table_key('alpha')}"


def test_is_reserved_matches_the_table_key_only() -> None:
    key = table_key("alpha")
    assert is_reserved(key) and is_reserved(f"offloader/{key}") and is_reserved(f"/{key}/")
    assert not is_reserved(f"{key}_0") and not is_reserved(KEY) and not is_reserved(".__strands_offload_handles_x")
    assert table_key("alpha") != table_key("beta")


def test_notices_never_list_storage_keys(tmp_path: Path) -> None:
    plugin = ContextOffloader(LocalFileStorage(str(tmp_path)), opaque_references=True)
    image = {"image": {"format": "png", "source": {"bytes": b"\x89PNG" * 5000}}}
    _, results = run(plugin, [{"text": BIG}, image], agent_kwargs={"agent_id": "alpha"})
    texts = [block["text"] for block in results[0]["content"] if "text" in block]
    handles = references_in(texts[0])
    assert len(handles) == 2 and all(handle.startswith("ref_") for handle in handles)
    for text in texts:
        assert "tooluse" not in text and ".__strands" not in text and str(tmp_path) not in text
