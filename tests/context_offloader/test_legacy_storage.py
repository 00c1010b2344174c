"""The offloader's legacy backends against strands-agents 1.62.0: formats, interop, failure safety."""

from __future__ import annotations

import asyncio
import json
import logging
import os
import re
import time
import uuid
from pathlib import Path
from typing import Any

import pytest
import strands.vended_plugins.context_offloader.storage as ref
import strands_offload.context_offloader as ours_pkg
from _s3_support import EndpointSession, FaultProxy, fast_config
from _sandboxes import MemorySandbox
from botocore.exceptions import ClientError
from hypothesis import given, settings
from hypothesis import strategies as st
from strands.sandbox.not_a_sandbox_local_environment import NotASandboxLocalEnvironment
from strands_offload.context_offloader import FileStorage, InMemoryStorage, S3Storage, Storage
from strands_offload.context_offloader.storage import _sanitize_id


def run(coro: Any) -> Any:
    return asyncio.run(coro)


def test_signatures_match_reference() -> None:
    import inspect

    for name in ("InMemoryStorage", "FileStorage", "S3Storage"):
        ours, theirs = inspect.signature(getattr(ours_pkg, name)), inspect.signature(getattr(ref, name))
        for param in theirs.parameters.values():
            mine = ours.parameters[param.name]
            assert (mine.kind, mine.default) == (param.kind, param.default), (name, param.name)
        extra = [p for p in ours.parameters.values() if p.name not in theirs.parameters]
        assert all(p.kind is inspect.Parameter.KEYWORD_ONLY for p in extra), name
        assert [p for p in ours.parameters if p in theirs.parameters] == list(theirs.parameters)


def test_exports() -> None:
    assert set(ours_pkg.__all__) >= {"FileStorage", "InMemoryStorage", "S3Storage", "Storage"}
    for backend in (InMemoryStorage(), FileStorage("unused")):
        assert isinstance(backend, Storage) and isinstance(backend, ref.Storage)


@settings(max_examples=300, deadline=None)
@given(st.lists(st.sampled_from(list("a.b/\\:é ~_-²\x00") + [".."]), max_size=14).map("".join))
def test_sanitize_matches_reference(raw: str) -> None:
    assert _sanitize_id(raw) == ref._sanitize_id(raw)


# -- InMemoryStorage -------------------------------------------------------------------------


def _advance_cycle(storage: Any, cycle: int) -> None:
    """The plugin's cycle hook: ours is named for the package, the reference keeps it private."""
    if isinstance(storage, InMemoryStorage):
        storage.advance_cycle(cycle)
    else:
        storage._evict(cycle)


def _bind_agent(storage: Any, agent_id: int) -> None:
    """The plugin's attach hook, under either package's name."""
    if isinstance(storage, InMemoryStorage):
        storage.bind_agent(agent_id)
    else:
        storage._bind(agent_id)


def test_in_memory_matches_reference_including_eviction() -> None:
    async def drive(storage: Any) -> list[Any]:
        out: list[Any] = []
        refs = [
            await storage.store(f"tool/{i}_0", f"v{i}".encode(), "application/json" if i % 2 else "text/plain")
            for i in range(6)
        ]
        out.append(refs)
        for cycle in (3, 10, 21, 22, 23, 30):
            _advance_cycle(storage, cycle)
            if cycle == 21:
                try:
                    out.append(await storage.retrieve(refs[1]))
                except KeyError as error:
                    out.append(str(error))
            if cycle == 22:
                refs.append(await storage.store("late", b"x"))
            survivors = []
            for reference in refs:
                try:
                    survivors.append(await storage.retrieve(reference))
                except KeyError as error:
                    survivors.append(str(error))
            out.append(survivors)
        storage.clear()
        out.append(await storage.store("k", b""))
        _bind_agent(storage, 1)
        _bind_agent(storage, 1)
        with pytest.raises(ValueError) as caught:
            _bind_agent(storage, 2)
        out.append(str(caught.value))
        return out

    for evict in (20, 1, None):
        assert run(drive(InMemoryStorage(evict))) == run(drive(ref.InMemoryStorage(evict)))


@pytest.mark.parametrize("bad", [0, -3])
def test_in_memory_rejects_non_positive_eviction(bad: int) -> None:
    with pytest.raises(ValueError, match="^evict_after_turns must be a positive integer$"):
        InMemoryStorage(bad)
    InMemoryStorage(1.5)  # type: ignore[arg-type]  # accepted, like the reference


# -- FileStorage -----------------------------------------------------------------------------

NAME = re.compile(r"^(\d{13})_(\d+)_(.+)$")


@pytest.mark.parametrize(
    ("content_type", "ext"),
    [
        ("text/plain", ".txt"),
        ("application/json", ".json"),
        ("image/png", ".png"),
        ("weird", ".weird"),
        ("text/plain; charset=utf-8", ".plain; charset=utf-8"),
    ],
)
def test_file_names_match_reference(
    tmp_path: Path, content_type: str, ext: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(time, "time", lambda: 1_700_000_000.1234)
    ours = run(FileStorage(str(tmp_path / "ours")).store("tool:1/../x", b"c", content_type))
    theirs = run(ref.FileStorage(str(tmp_path / "theirs")).store("tool:1/../x", b"c", content_type))
    assert ours == theirs == f"1700000000123_1_tool_1___x{ext}"
    assert (tmp_path / "ours" / ".metadata.json").read_text() == (tmp_path / "theirs" / ".metadata.json").read_text()


def test_files_interoperate_both_ways(tmp_path: Path) -> None:
    directory = str(tmp_path / "artifacts")

    async def scenario() -> None:
        theirs = ref.FileStorage(directory)
        their_name = await theirs.store("t1_0", b"from reference", "application/json")
        ours = FileStorage(directory)
        our_name = await ours.store("t2_0", b"from us", "image/png")
        assert await ours.retrieve(their_name) == (b"from reference", "application/json")
        assert await ours.retrieve(Path(their_name).stem) == (b"from reference", "application/json")
        assert await ours.retrieve(os.path.join(directory, their_name)) == (b"from reference", "application/json")
        fresh = ref.FileStorage(directory)
        assert await fresh.retrieve(our_name) == (b"from us", "image/png")
        assert await fresh.retrieve(their_name) == (b"from reference", "application/json")
        sidecar = json.loads((tmp_path / "artifacts" / ".metadata.json").read_text())
        assert sidecar == {their_name: "application/json", our_name: "image/png"}

    run(scenario())


def test_retrieval_rules_match_reference(tmp_path: Path) -> None:
    directory = tmp_path / "art"
    other = tmp_path / "other"
    other.mkdir()
    (other / "x.txt").write_bytes(b"outside")

    async def scenario() -> None:
        theirs = ref.FileStorage(str(directory))
        a = await theirs.store("same", b"1")
        b = await theirs.store("same", b"2", "application/json")
        (directory / "untracked.bin").write_bytes(b"raw")
        (directory / "dup.txt").write_bytes(b"d1")
        (directory / "dup.json").write_bytes(b"d2")
        ours = FileStorage(str(directory))
        fresh = ref.FileStorage(str(directory))
        for reference in [
            a,
            b,
            Path(a).stem,
            "untracked.bin",
            "untracked",
            "dup",
            "../other/x.txt",
            str(other / "x.txt"),
            "a..b",
            "",
            "missing",
            str(directory / a),
            "sub/" + a,
        ]:
            results = []
            for storage in (ours, fresh):
                try:
                    results.append(await storage.retrieve(reference))
                except KeyError as error:
                    results.append(("KeyError", str(error)))
            assert results[0] == results[1], reference

    run(scenario())


def test_planted_symlink_is_not_followed_out(tmp_path: Path) -> None:
    directory = tmp_path / "art"
    directory.mkdir()
    (tmp_path / "secret").write_bytes(b"secret")
    (directory / "link.txt").symlink_to(tmp_path / "secret")
    (directory / "real.txt").write_bytes(b"real")
    (directory / "inside_link.txt").symlink_to(directory / "real.txt")
    storage = FileStorage(str(directory))
    for reference in ("link.txt", str(directory / "link.txt"), "inside_link.txt"):
        with pytest.raises(KeyError, match=re.escape(f"Reference not found: {reference}")):
            run(storage.retrieve(reference))
    assert run(storage.retrieve("real.txt")) == (b"real", "application/octet-stream")


def test_symlinked_sidecar_and_lock_file_are_not_followed(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    directory, outside = tmp_path / "art", tmp_path / "outside"
    directory.mkdir()
    outside.mkdir()
    (outside / "meta.json").write_text(json.dumps({"x.txt": "text/evil"}))
    (directory / "x.txt").write_bytes(b"x")
    (directory / ".metadata.json").symlink_to(outside / "meta.json")
    (directory / ".__strands_metadata.lock").symlink_to(outside / "lock")  # dangling: O_CREAT would create it
    with caplog.at_level("WARNING"):
        storage = FileStorage(str(directory))
    assert "content-type sidecar is a symlink, ignoring it" in caplog.text
    assert run(storage.retrieve("x.txt")) == (b"x", "application/octet-stream")
    with pytest.raises(OSError):
        run(storage.store("k", b"v"))  # the lock cannot be taken through a link
    (directory / ".__strands_metadata.lock").unlink()
    name = run(storage.store("k", b"v"))
    assert not (directory / ".metadata.json").is_symlink()  # replaced, never written through
    assert json.loads((directory / ".metadata.json").read_text()) == {name: "text/plain"}
    assert sorted(os.listdir(outside)) == ["meta.json"]
    assert json.loads((outside / "meta.json").read_text()) == {"x.txt": "text/evil"}


@pytest.mark.single_python  # a timed race against another process: one Python suffices
def test_symlinks_flipped_by_another_process_never_lead_outside(tmp_path: Path) -> None:
    """Retrieves and stores race a process swapping the content file, sidecar and lock for links."""
    from _symlink_flipper import flipping

    directory, outside = tmp_path / "art", tmp_path / "outside"
    directory.mkdir()
    outside.mkdir()
    (outside / "secret").write_bytes(b"secret")
    (outside / "meta.json").write_text(json.dumps({"link.txt": "text/evil"}))
    (directory / "link.txt").write_bytes(b"inside")
    (directory / ".metadata.json").write_text("{}")
    (directory / ".__strands_metadata.lock").write_bytes(b"")
    counts = {"retrieve": 0, "store": 0, "open": 0}
    specs = [
        ("file", directory / "link.txt", outside / "secret"),
        ("file", directory / ".metadata.json", outside / "meta.json"),
        ("file", directory / ".__strands_metadata.lock", outside / "lock"),
    ]

    async def hammer(process: Any) -> None:
        storage = FileStorage(str(directory), durable=False)
        while process.poll() is None:
            fresh = FileStorage(str(directory), durable=False)
            assert "text/evil" not in fresh._content_types.values()
            counts["open"] += 1
            for reader in (storage, fresh):
                try:
                    content, content_type = await reader.retrieve("link.txt")
                except KeyError:
                    continue
                assert content == b"inside" and content_type != "text/evil"
                counts["retrieve"] += 1
            try:
                await storage.store("k", b"v")
                counts["store"] += 1
            except OSError:
                pass  # the lock was a link at that moment: refused

    logging.getLogger("strands_offload.context_offloader.storage").disabled = True
    try:
        with flipping(specs, seconds=1.5) as process:
            run(hammer(process))
    finally:
        logging.getLogger("strands_offload.context_offloader.storage").disabled = False
    assert sorted(os.listdir(outside)) == ["meta.json", "secret"]
    assert (outside / "secret").read_bytes() == b"secret"
    assert json.loads((outside / "meta.json").read_text()) == {"link.txt": "text/evil"}
    assert min(counts.values()) > 10, counts


def test_opening_sweeps_temp_files_abandoned_by_killed_writers(tmp_path: Path) -> None:
    directory = tmp_path / "art"
    directory.mkdir()
    old = time.time() - 2 * 3600
    stale = directory / f".__strands_tmp_{uuid.uuid4().hex}"
    fresh = directory / f".__strands_tmp_{uuid.uuid4().hex}"
    lookalikes = [directory / ".__strands_tmp_notours", directory / f"{uuid.uuid4().hex}.txt"]
    for path in (stale, fresh, *lookalikes):
        path.write_bytes(b"partial")
    for path in (stale, *lookalikes):
        os.utime(path, (old, old))
    FileStorage(str(directory))
    assert not stale.exists()
    assert fresh.exists() and all(path.exists() for path in lookalikes)


def test_sidecar_nested_too_deeply_is_ignored_like_other_bad_sidecars(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    directory = tmp_path / "art"
    name = run(FileStorage(str(directory)).store("k", b"payload", "application/json"))
    (directory / ".metadata.json").write_text("[" * 100_000)
    with caplog.at_level("WARNING"):
        storage = FileStorage(str(directory))
        assert run(storage.retrieve(name)) == (b"payload", "application/octet-stream")
    assert "content-type sidecar is not valid JSON, ignoring it" in caplog.text
    new = run(storage.store("n", b"new"))
    assert run(FileStorage(str(directory)).retrieve(new)) == (b"new", "text/plain")


def test_content_is_written_before_sidecar_and_both_atomically(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    directory = tmp_path / "art"
    storage = FileStorage(str(directory))
    first = run(storage.store("a", b"one"))
    real_replace = os.replace

    def crash_on_sidecar(src: str, dst: str, **dir_fds: Any) -> None:
        if dst.endswith(".metadata.json"):
            raise OSError("crash while replacing the sidecar")
        real_replace(src, dst, **dir_fds)

    monkeypatch.setattr(os, "replace", crash_on_sidecar)
    with pytest.raises(OSError, match="crash while replacing the sidecar"):
        run(storage.store("b", b"two", "application/json"))
    monkeypatch.undo()
    sidecar = json.loads((directory / ".metadata.json").read_text())
    assert sidecar == {first: "text/plain"}
    for name in sidecar:
        assert (directory / name).is_file()
    assert not [n for n in os.listdir(directory) if n.startswith(".__strands_tmp_")]

    def crash_on_content(*args: Any, **kwargs: Any) -> None:
        raise OSError("disk full")

    monkeypatch.setattr(os, "write", crash_on_content)
    with pytest.raises(OSError, match="disk full"):
        run(storage.store("c", b"three"))
    monkeypatch.undo()
    assert json.loads((directory / ".metadata.json").read_text()) == {first: "text/plain"}
    leftovers = sorted(name for name in os.listdir(directory) if not name.startswith(".__strands_"))
    assert len(leftovers) == 3 and leftovers[0] == ".metadata.json" and first in leftovers
    assert [name for name in leftovers if name.endswith("_b.json")]  # written, just never recorded


def test_same_millisecond_instances_never_overwrite_each_other(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(time, "time", lambda: 1_700_000_000.0)
    directory = str(tmp_path / "art")
    one, two = FileStorage(directory), FileStorage(directory)
    first = run(one.store("k", b"first"))
    second = run(two.store("k", b"second"))
    third = run(two.store("k", b"third", "application/json"))
    assert (first, second, third) == ("1700000000000_1_k.txt", "1700000000000_2_k.txt", "1700000000000_3_k.json")
    assert run(two.retrieve(first)) == (b"first", "text/plain")
    assert run(ref.FileStorage(directory).retrieve(first)) == (b"first", "text/plain")
    assert run(ref.FileStorage(directory).retrieve(second)) == (b"second", "text/plain")
    sidecar = json.loads((tmp_path / "art" / ".metadata.json").read_text())
    assert sidecar == {first: "text/plain", second: "text/plain", third: "application/json"}


@pytest.mark.parametrize("corrupt", [b"{not json", b"\xff\xfe\x00garbage", b"[1, 2]", b'"text"'])
def test_corrupt_sidecar_keeps_files_readable(tmp_path: Path, corrupt: bytes, caplog: pytest.LogCaptureFixture) -> None:
    directory = tmp_path / "art"
    name = run(FileStorage(str(directory)).store("k", b"payload", "application/json"))
    (directory / ".metadata.json").write_bytes(corrupt)
    storage = FileStorage(str(directory))
    with caplog.at_level("WARNING"):
        assert run(storage.retrieve(name)) == (b"payload", "application/octet-stream")
    assert f"reference=<{name}> | content type unknown because the sidecar was damaged" in caplog.text
    new = run(storage.store("n", b"new"))
    assert run(FileStorage(str(directory)).retrieve(new)) == (b"new", "text/plain")


def test_corrupt_sidecar_entry_names_the_reference(tmp_path: Path) -> None:
    directory = tmp_path / "art"
    storage = FileStorage(str(directory))
    good = run(storage.store("good", b"g"))
    bad = run(storage.store("bad", b"b"))
    sidecar = json.loads((directory / ".metadata.json").read_text())
    sidecar[bad] = {"oops": 1}
    (directory / ".metadata.json").write_text(json.dumps(sidecar))
    fresh = FileStorage(str(directory))
    with pytest.raises(ValueError, match=re.escape(f"Content type of '{bad}' in .metadata.json is corrupt")):
        run(fresh.retrieve(bad))
    assert run(fresh.retrieve(good)) == (b"g", "text/plain")


def test_sandbox_mode_matches_reference_files(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(time, "time", lambda: 1_700_000_000.5)

    async def drive(storage: Any, box: MemorySandbox) -> list[Any]:
        names = [await storage.store("a/b", b"1"), await storage.store("c", b"{}", "application/json")]
        got = [await storage.retrieve(n) for n in names]
        try:
            await storage.retrieve("nope")
        except KeyError as error:
            got.append(str(error))
        return [names, got, sorted(box.files.items())]

    ours_box, theirs_box = MemorySandbox(), MemorySandbox()
    ours = run(drive(FileStorage("./artifacts/").for_sandbox(ours_box), ours_box))
    theirs = run(drive(ref.FileStorage("./artifacts/").for_sandbox(theirs_box), theirs_box))
    assert ours == theirs
    writes = [path for call, path in ours_box.calls if call == "write_file"]
    assert writes[0].endswith("_a_b.txt") and writes[1] == "artifacts/.metadata.json"
    assert FileStorage("x", sandbox=ours_box).for_sandbox(MemorySandbox())._sandbox is ours_box


def test_host_default_sandbox_is_atomic(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    storage = FileStorage("art").for_sandbox(NotASandboxLocalEnvironment())
    name = run(storage.store("k", b"v"))
    assert (tmp_path / "art" / name).read_bytes() == b"v"
    with monkeypatch.context() as patched:
        patched.setattr(os, "replace", lambda *a, **k: (_ for _ in ()).throw(OSError("crash")))
        with pytest.raises(OSError):
            run(storage.store("k2", b"v2"))
    sidecar = json.loads((tmp_path / "art" / ".metadata.json").read_text())
    assert list(sidecar) == [name]
    assert run(ref.FileStorage("art").retrieve(name)) == (b"v", "text/plain")


# -- S3Storage -------------------------------------------------------------------------------


def test_s3_interop_and_reference_strings(s3_session: Any, s3_bucket: str) -> None:
    async def scenario() -> None:
        ours = S3Storage(s3_bucket, "/tool-results/", s3_session)
        theirs = ref.S3Storage(s3_bucket, "/tool-results/", s3_session)
        our_ref = await ours.store("t/1", b"ours", "application/json")
        their_ref = await theirs.store("t/1", b"theirs", "image/png")
        assert re.fullmatch(rf"s3://{s3_bucket}/tool-results/\d{{13}}_1_t_1", our_ref)
        assert await theirs.retrieve(our_ref) == (b"ours", "application/json")
        assert await ours.retrieve(their_ref) == (b"theirs", "image/png")
        bare = their_ref.removeprefix(f"s3://{s3_bucket}/")
        assert await ours.retrieve(bare) == (b"theirs", "image/png")
        for reference in (
            f"s3://other-bucket/{bare}",
            "outside/key",
            f"s3://{s3_bucket}/outside",
            f"s3://{s3_bucket}/tool-results/missing",
        ):
            for storage in (ours, theirs):
                with pytest.raises(KeyError, match=re.escape(f"Reference not found: {reference}")):
                    await storage.retrieve(reference)

    run(scenario())


def test_s3_errors_propagate_as_client_errors(s3_session: Any) -> None:
    storage = S3Storage(f"missing-{uuid.uuid4().hex[:8]}", boto_session=s3_session)
    with pytest.raises(ClientError):
        run(storage.store("k", b"v"))
    with pytest.raises(ClientError):
        run(storage.retrieve("k"))


def test_s3_user_agent(s3_session: Any) -> None:
    assert S3Storage("b", boto_session=s3_session)._client.meta.config.user_agent_extra == "strands-agents"
    configured = S3Storage("b", boto_session=s3_session, boto_client_config=fast_config(user_agent_extra="app"))
    assert configured._client.meta.config.user_agent_extra == "app strands-agents"


def test_s3_store_through_faults_reports_only_real_stores(
    fault_proxy: FaultProxy, s3_bucket: str, s3_session: Any
) -> None:
    storage = S3Storage(s3_bucket, "p", EndpointSession(fault_proxy.endpoint), fast_config())

    async def scenario() -> None:
        fault_proxy.fail(2)
        reference = await storage.store("k", b"v")
        assert await S3Storage(s3_bucket, "p", s3_session).retrieve(reference) == (b"v", "text/plain")
        fault_proxy.fail(3, status=500)
        with pytest.raises(ClientError):
            await storage.store("k2", b"v2")
        fault_proxy.kill()
        with pytest.raises(Exception) as caught:
            await storage.store("k3", b"v3")
        assert "Could not connect" in str(caught.value) or "Connection" in type(caught.value).__name__

    run(scenario())
    keys = [item["Key"] for item in s3_session.client("s3").list_objects_v2(Bucket=s3_bucket).get("Contents", [])]
    assert len(keys) == 1 and keys[0].endswith("_1_k")


_STORER = """
import asyncio, sys
from strands_offload.context_offloader import FileStorage

async def main():
    storage = FileStorage(sys.argv[1], durable=False)
    for i in range(60):
        await storage.store(f"p{sys.argv[2]}_{i}", f"{sys.argv[2]}-{i}".encode(), "application/json")

asyncio.run(main())
"""


def test_processes_sharing_a_directory_keep_every_sidecar_entry(tmp_path: Path) -> None:
    import subprocess
    import sys

    script = tmp_path / "storer.py"
    script.write_text(_STORER)
    directory = tmp_path / "art"
    workers = [subprocess.Popen([sys.executable, str(script), str(directory), str(n)]) for n in range(3)]
    assert [worker.wait(timeout=120) for worker in workers] == [0, 0, 0]
    sidecar = json.loads((directory / ".metadata.json").read_text())
    assert len(sidecar) == 180 and set(sidecar.values()) == {"application/json"}
    reader = ref.FileStorage(str(directory))
    contents = {run(reader.retrieve(name))[0] for name in sidecar}
    assert contents == {f"{n}-{i}".encode() for n in range(3) for i in range(60)}
