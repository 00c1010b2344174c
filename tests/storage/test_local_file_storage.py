"""LocalFileStorage: reference behaviour, interop on disk, atomic writes, containment, sandboxes."""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import subprocess
import sys
import tempfile
import textwrap
import time
import uuid
import warnings
from pathlib import Path
from typing import Any

import pytest
import strands.storage as ref
from _differential import OPERATIONS, PREFIXES, percent_escape, replay
from _sandboxes import MemorySandbox
from hypothesis import assume, given, settings
from strands.sandbox.not_a_sandbox_local_environment import NotASandboxLocalEnvironment
from strands.storage.search import Bm25SearchStrategy as RefBm25
from strands.types.exceptions import StorageError
from strands_offload.storage import LocalFileStorage
from strands_offload.storage.local_file_storage import MAX_KEY_DEPTH
from strands_offload.storage.search import Bm25SearchStrategy, KeywordSearchStrategy


def run(coro: Any) -> Any:
    return asyncio.run(coro)


@settings(max_examples=120, deadline=None)
@given(OPERATIONS, PREFIXES)
def test_same_outcomes_as_reference(operations: list[tuple[Any, ...]], namespace: str) -> None:
    assume(not percent_escape(operations) and "%2e%2e" not in namespace)
    with tempfile.TemporaryDirectory() as ours_dir, tempfile.TemporaryDirectory() as theirs_dir:
        ours_root = LocalFileStorage(ours_dir, durable=False)
        theirs_root = ref.LocalFileStorage(theirs_dir)

        async def both() -> tuple[list[Any], list[Any]]:
            ours = await replay(ours_root, operations)
            theirs = await replay(theirs_root, operations)
            try:
                ref_scoped = theirs_root.namespace(namespace)
            except StorageError:
                return ours, theirs
            our_scoped = ours_root.namespace(namespace)
            ours += await replay(our_scoped, operations)
            theirs += await replay(ref_scoped, operations)
            ours.append(await ours_root.list())
            theirs.append(await theirs_root.list())
            return ours, theirs

        ours, theirs = run(both())
        assert ours == theirs


def test_files_written_by_either_package_are_read_by_the_other(tmp_path: Path) -> None:
    ours = LocalFileStorage(str(tmp_path))
    theirs = ref.LocalFileStorage(str(tmp_path))

    async def scenario() -> None:
        await theirs.write("sessions/abc/state.json", b'{"a": 1}')
        await ours.write("offloader/tool_1_0", b"\x00\x0atext/plainhello")
        assert await ours.read("sessions/abc/state.json") == b'{"a": 1}'
        assert await theirs.read("offloader/tool_1_0") == b"\x00\x0atext/plainhello"
        assert await ours.list() == await theirs.list() == ["offloader/tool_1_0", "sessions/abc/state.json"]
        assert await ours.namespace("sessions").list() == await theirs.namespace("sessions").list()
        await ours.delete("sessions/abc/state.json")
        assert await theirs.read("sessions/abc/state.json") is None

    run(scenario())
    assert (tmp_path / "offloader" / "tool_1_0").read_bytes() == b"\x00\x0atext/plainhello"


def test_base_dir_and_namespace_paths(tmp_path: Path) -> None:
    assert LocalFileStorage().base_dir == ref.LocalFileStorage().base_dir == ".strands"
    storage = LocalFileStorage(str(tmp_path) + "/./x/")
    assert storage.base_dir == str(tmp_path / "x")
    scoped = storage.namespace("//a/b/")
    assert scoped.base_dir == str(tmp_path / "x" / "a" / "b")
    assert storage.namespace("").base_dir == storage.base_dir


class _Sub(LocalFileStorage):
    pass


def test_namespace_returns_plain_class_like_reference(tmp_path: Path) -> None:
    assert type(_Sub(str(tmp_path)).namespace("a")) is LocalFileStorage


def test_dot_segments_and_internal_names(tmp_path: Path) -> None:
    storage = LocalFileStorage(str(tmp_path))

    async def scenario() -> None:
        await storage.write("a/./b", b"1")
        assert await storage.list() == ["a/b"]
        (tmp_path / ".__strands_tmp_leftover").write_bytes(b"x")
        (tmp_path / "a" / ".__strands_index").write_bytes(b"x")
        assert await storage.list() == ["a/b"]
        (tmp_path / "dir").mkdir()
        with pytest.raises(StorageError, match="^Failed to read 'dir'$"):
            await storage.read("dir")
        assert await storage.read("a/b/c") is None  # a/b is a file: not-a-directory means missing

    run(scenario())


# -- atomicity -------------------------------------------------------------------------------


def test_failed_replace_keeps_old_content_and_leaves_no_temp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    storage = LocalFileStorage(str(tmp_path))
    run(storage.write("k", b"old"))

    def broken_replace(src: str, dst: str, **kwargs: Any) -> None:
        raise OSError("simulated crash during rename")

    monkeypatch.setattr(os, "replace", broken_replace)
    with pytest.raises(StorageError, match="^Failed to write 'k'$") as caught:
        run(storage.write("k", b"new" * 1000))
    assert isinstance(caught.value.__cause__, OSError)
    monkeypatch.undo()
    assert (tmp_path / "k").read_bytes() == b"old"
    assert sorted(os.listdir(tmp_path)) == ["k"]


def test_interrupted_write_keeps_old_content(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    storage = LocalFileStorage(str(tmp_path))
    run(storage.write("k", b"old"))
    real_write = os.write
    calls = {"n": 0}

    def flaky_write(handle: int, data: Any) -> int:
        calls["n"] += 1
        real_write(handle, bytes(data[:10]))
        raise KeyboardInterrupt

    monkeypatch.setattr(os, "write", flaky_write)
    with pytest.raises(KeyboardInterrupt):
        run(storage.write("k", b"x" * 100))
    monkeypatch.undo()
    assert calls["n"] == 1
    assert (tmp_path / "k").read_bytes() == b"old"
    assert sorted(os.listdir(tmp_path)) == ["k"]


_WRITER = textwrap.dedent(
    """
    import asyncio, sys
    from strands.sandbox.not_a_sandbox_local_environment import NotASandboxLocalEnvironment
    from strands_offload.storage import LocalFileStorage
    storage = LocalFileStorage(sys.argv[1], sandbox={sandbox})
    values = [b"A" * 4_000_000, b"B" * 3_000_000]

    async def main():
        i = 0
        while True:
            await storage.write("victim.bin", values[i % 2])
            if i == 0:
                print("ready", flush=True)
            i += 1

    asyncio.run(main())
    """
)


@pytest.mark.parametrize("sandbox", ["None", "NotASandboxLocalEnvironment()"])
def test_killed_writer_never_leaves_a_partial_file(tmp_path: Path, sandbox: str) -> None:
    """SIGKILL a process that keeps rewriting one key: the file is always one whole value."""
    script = tmp_path / "writer.py"
    script.write_text(_WRITER.format(sandbox=sandbox))
    data_dir = tmp_path / "data"
    valid = {b"A" * 4_000_000, b"B" * 3_000_000}
    for delay in (0.05, 0.13, 0.31):
        process = subprocess.Popen(
            [sys.executable, str(script), str(data_dir)], stdout=subprocess.PIPE, cwd=str(tmp_path)
        )
        assert process.stdout is not None
        assert process.stdout.readline().strip() == b"ready"
        time.sleep(delay)
        process.send_signal(signal.SIGKILL)
        process.wait()
        process.stdout.close()
        assert (data_dir / "victim.bin").read_bytes() in valid
        assert run(LocalFileStorage(str(data_dir)).list()) == ["victim.bin"]
    # Whatever temp files the kills left are swept by the next writer once they are stale.
    old = time.time() - 2 * 3600
    for leftover in data_dir.glob(".__strands_tmp_*"):
        os.utime(leftover, (old, old))
    run(LocalFileStorage(str(data_dir)).write("after", b"x"))
    assert sorted(os.listdir(data_dir)) == ["after", "victim.bin"]


def test_host_default_sandbox_writes_atomically(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    storage = LocalFileStorage("rel").for_sandbox(NotASandboxLocalEnvironment())
    run(storage.write("k", b"old"))
    with monkeypatch.context() as patched, pytest.raises(StorageError):
        patched.setattr(os, "replace", lambda *a, **k: (_ for _ in ()).throw(OSError("crash")))
        run(storage.write("k", b"new"))
    assert (tmp_path / "rel" / "k").read_bytes() == b"old"
    assert run(storage.list()) == ["k"]
    assert run(storage.read("k")) == b"old"


# -- containment -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    "key", ["../escape", "a/../../escape", "a\\..\\escape", "a\x00b", "%2e%2e/escape", "%252E%252E/escape"]
)
def test_escaping_keys_are_refused_before_any_io(tmp_path: Path, key: str) -> None:
    base = tmp_path / "base"
    storage = LocalFileStorage(str(base))
    for operation in (storage.write(key, b"x"), storage.read(key), storage.delete(key)):
        with pytest.raises(StorageError, match="^Invalid storage key"):
            run(operation)
    assert not base.exists()


def test_absolute_keys_stay_inside(tmp_path: Path) -> None:
    storage = LocalFileStorage(str(tmp_path / "base"))
    run(storage.write("/etc/passwd", b"mine"))
    assert (tmp_path / "base" / "etc" / "passwd").read_bytes() == b"mine"


@pytest.mark.parametrize("walk", [True, False], ids=["dir-fd-walk", "resolve-and-check"])
def test_symlinks_below_the_base_are_never_followed(
    tmp_path: Path, walk: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    from strands_offload.storage import _hostfs

    if walk and not _hostfs.WALK_SUPPORTED:
        pytest.skip("no dir_fd support on this platform")
    monkeypatch.setattr(_hostfs, "WALK_SUPPORTED", walk)
    base, outside = tmp_path / "base", tmp_path / "outside"
    base.mkdir()
    outside.mkdir()
    (outside / "secret").write_bytes(b"secret")
    (base / "dirlink").symlink_to(outside, target_is_directory=True)
    (base / "filelink").symlink_to(outside / "secret")
    (base / "inner").mkdir()
    (base / "inside_link").symlink_to(base / "inner" / "x")
    storage = LocalFileStorage(str(base))
    refused = "passes through a symlink, and symlinks inside the storage directory are not followed"

    async def scenario() -> None:
        for key in ("dirlink/secret", "dirlink/new", "dirlink/deeper/new"):
            for operation in (storage.read, storage.delete, lambda k: storage.write(k, b"pwned")):
                with pytest.raises(StorageError, match=refused):
                    await operation(key)
        with pytest.raises(StorageError, match=f"^Invalid storage key 'filelink': it {refused}"):
            await storage.read("filelink")
        # Links are not entries: not listed, so keyword search never meets them.
        assert await storage.list() == []
        assert await storage.list("dirlink/") == []
        assert [hit.key for hit in await storage.search("secret")] == []
        # A link at the key itself is replaced by a write, never written through.
        await storage.write("filelink", b"replaced")
        assert not (base / "filelink").is_symlink() and (base / "filelink").read_bytes() == b"replaced"
        # Links that stay inside are refused too (the reference follows them).
        (base / "inner" / "x").write_bytes(b"inside")
        with pytest.raises(StorageError, match=refused):
            await storage.read("inside_link")
        (base / "inner_dir_link").symlink_to(base / "inner", target_is_directory=True)
        with pytest.raises(StorageError, match=refused):
            await storage.write("inner_dir_link/y", b"y")
        assert not (base / "inner" / "y").exists()
        await storage.delete("inside_link")  # removes the link itself
        assert not (base / "inside_link").is_symlink() and (base / "inner" / "x").exists()
        assert await storage.list() == ["filelink", "inner/x"]

    run(scenario())
    assert (outside / "secret").read_bytes() == b"secret"
    assert sorted(os.listdir(outside)) == ["secret"]


def test_directory_swapped_for_a_symlink_later_is_refused(tmp_path: Path) -> None:
    base, outside = tmp_path / "base", tmp_path / "outside"
    outside.mkdir()
    storage = LocalFileStorage(str(base))
    run(storage.write("d/k", b"1"))
    (base / "d" / "k").unlink()
    (base / "d").rmdir()
    (base / "d").symlink_to(outside, target_is_directory=True)
    with pytest.raises(StorageError, match="passes through a symlink"):
        run(storage.write("d/k", b"2"))
    assert list(outside.iterdir()) == []


@pytest.mark.parametrize("walk", [True, False], ids=["dir-fd-walk", "resolve-and-check"])
def test_planted_namespace_link_never_leads_outside(
    tmp_path: Path, walk: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    from strands_offload.storage import _hostfs

    if walk and not _hostfs.WALK_SUPPORTED:
        pytest.skip("no dir_fd support on this platform")
    monkeypatch.setattr(_hostfs, "WALK_SUPPORTED", walk)
    base, outside = tmp_path / "base", tmp_path / "outside"
    base.mkdir()
    (outside / "s").mkdir(parents=True)
    (outside / "x").write_bytes(b"outside")
    (outside / "s" / "secret_name").write_bytes(b"outside")
    (base / "ns").symlink_to(outside, target_is_directory=True)
    (base / "dirlink").symlink_to(outside, target_is_directory=True)
    root = LocalFileStorage(str(base))
    scoped = root.namespace("ns")
    nested = root.namespace("real").namespace("ns")
    (base / "real").mkdir()
    (base / "real" / "ns").symlink_to(outside, target_is_directory=True)

    async def scenario() -> None:
        for storage in (scoped, nested):
            with pytest.raises(StorageError, match="passes through a symlink"):
                await storage.write("k", b"pwned")
            with pytest.raises(StorageError, match="passes through a symlink"):
                await storage.read("x")
            with pytest.raises(StorageError, match="passes through a symlink"):
                await storage.delete("x")
            assert await storage.list() == []
            assert await storage.list("s/") == []
        assert await root.list("dirlink/s") == []
        assert await root.list("dirlink/s/") == []
        assert await root.list() == []

    run(scenario())
    assert sorted(os.listdir(outside)) == ["s", "x"]
    assert os.listdir(outside / "s") == ["secret_name"] and (outside / "x").read_bytes() == b"outside"


@pytest.mark.single_python  # a timed race against another process: one Python suffices
def test_symlinks_flipped_by_another_process_never_lead_outside(tmp_path: Path) -> None:
    """Reads, writes and listings race a process swapping a file and a directory for outside links."""
    from _symlink_flipper import flipping

    base, outside = tmp_path / "base", tmp_path / "outside"
    (base / "sub").mkdir(parents=True)
    (base / "sub" / "x").write_bytes(b"inside")
    (base / "x").write_bytes(b"inside")
    outside.mkdir()
    (outside / "x").write_bytes(b"OUTSIDE")
    (outside / "only_outside").write_bytes(b"OUTSIDE")
    storage = LocalFileStorage(str(base), durable=False)
    scoped = storage.namespace("sub")
    operations = {"read": 0, "write": 0, "list": 0}

    async def hammer(process: Any) -> None:
        n = 0
        while process.poll() is None:
            n += 1
            for reader, key in ((storage, "x"), (storage, "sub/x"), (scoped, "x")):
                with contextlib.suppress(StorageError):
                    assert await reader.read(key) in (None, b"inside")
                    operations["read"] += 1
            for writer, key in ((storage, f"sub/w{n}"), (scoped, f"n{n}")):
                with contextlib.suppress(StorageError):
                    await writer.write(key, b"w")
                    operations["write"] += 1
            for lister, prefix in ((storage, ""), (storage, "sub/"), (scoped, "")):
                keys = await lister.list(prefix)
                operations["list"] += 1
                assert not [key for key in keys if key.endswith("only_outside")]

    with flipping([("file", base / "x", outside / "x"), ("dir", base / "sub", outside)], seconds=1.5) as process:
        run(hammer(process))
    assert sorted(os.listdir(outside)) == ["only_outside", "x"]
    assert (outside / "x").read_bytes() == (outside / "only_outside").read_bytes() == b"OUTSIDE"
    assert min(operations.values()) > 10, operations


# -- work budgets ----------------------------------------------------------------------------


def test_keys_deeper_than_the_limit_are_refused_on_write(tmp_path: Path) -> None:
    base = tmp_path / "base"
    storage = LocalFileStorage(str(base))
    deepest = "a/" * (MAX_KEY_DEPTH - 1) + "b"  # exactly MAX_KEY_DEPTH levels

    async def scenario() -> None:
        for key in ("a/" * 1000 + "b", "a/" * MAX_KEY_DEPTH + "b"):
            expected = rf"^Invalid storage key '{key}': it is nested \d+ levels deep, more than the limit of 64$"
            with pytest.raises(StorageError, match=expected):
                await storage.write(key, b"x")
        with pytest.raises(StorageError, match="limit of 64"):
            await storage.namespace("ns").write(deepest, b"x")  # namespace levels count
        await storage.write("./" + deepest, b"dot segments do not nest")
        assert await storage.list() == [deepest]
        assert await storage.read(deepest) == b"dot segments do not nest"

    assert MAX_KEY_DEPTH == 64
    run(scenario())
    assert not (base / "ns").exists()
    assert not base.joinpath(*["a"] * MAX_KEY_DEPTH).exists()


def test_entries_deeper_than_the_limit_on_disk_are_skipped_not_fatal(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    base = tmp_path / "base"
    levels = [base.joinpath(*["d"] * n) for n in range(1, 1001)]
    base.mkdir()
    for level in levels:  # pathlib and os.makedirs recurse per level
        os.mkdir(level)
    deep_dir = levels[-1]
    (deep_dir / "f").write_bytes(b"needle, too deep to list")
    deep_key = "d/" * 1000 + "f"
    storage = LocalFileStorage(str(base))

    async def scenario() -> None:
        await storage.write("top", b"needle at the top")
        await storage.write("d/near", b"needle near")
        with caplog.at_level("WARNING", logger="strands_offload.storage.local_file_storage"):
            assert await storage.list() == ["d/near", "top"]
            assert await storage.list("d/d/") == []
        warnings = [r for r in caplog.records if "deeper than the key depth limit" in r.getMessage()]
        assert len(warnings) == 2  # one per listing, not one per entry
        assert sorted(hit.key for hit in await storage.search("needle")) == ["d/near", "top"]
        # A deep entry stays reachable by its key, so it can be read and removed.
        assert await storage.read(deep_key) == b"needle, too deep to list"
        await storage.delete(deep_key)
        assert not (deep_dir / "f").exists()

    try:
        run(scenario())
    finally:
        for level in reversed(levels):  # so the temp-dir cleanup never meets the deep tree
            with contextlib.suppress(OSError):
                os.rmdir(level)


# -- abandoned temp files --------------------------------------------------------------------


def _plant_temps(directory: Path) -> dict[str, Path]:
    """Temp-like files: ours (stale and fresh) and look-alikes that are not ours."""
    directory.mkdir(parents=True, exist_ok=True)
    old = time.time() - 2 * 3600
    planted = {
        "stale": directory / f".__strands_tmp_{uuid.uuid4().hex}",
        "fresh": directory / f".__strands_tmp_{uuid.uuid4().hex}",
        "not_hex": directory / ".__strands_tmp_notours",
        "upper": directory / f".__strands_tmp_{uuid.uuid4().hex.upper()}",
        "user": directory / f"tmp_{uuid.uuid4().hex}",
        "link": directory / f".__strands_tmp_{uuid.uuid4().hex}",
    }
    for name, path in planted.items():
        if name == "link":
            target = directory.parent / "link_target"
            target.write_bytes(b"t")
            path.symlink_to(target)
        else:
            path.write_bytes(b"partial")
        if name != "fresh":
            os.utime(path, (old, old), follow_symlinks=False)
    return planted


def test_first_write_sweeps_temp_files_abandoned_by_killed_writers(tmp_path: Path) -> None:
    base = tmp_path / "base"
    top, sub = _plant_temps(base), _plant_temps(base / "sub")
    storage = LocalFileStorage(str(base))
    run(storage.write("k", b"v"))
    assert not top["stale"].exists()
    assert all(os.path.lexists(path) for name, path in top.items() if name != "stale")
    assert sub["stale"].exists()  # swept when a write goes there
    run(storage.namespace("sub").write("k", b"v"))
    assert not sub["stale"].exists()
    assert all(os.path.lexists(path) for name, path in sub.items() if name != "stale")
    assert (tmp_path / "link_target").exists()


# -- sandboxes -------------------------------------------------------------------------------


def test_sandbox_calls_match_reference() -> None:
    async def drive(storage: Any, sandbox: MemorySandbox) -> list[Any]:
        await storage.write("a/b.txt", b"one")
        await storage.write("c", b"two")
        out = [await storage.read("a/b.txt"), await storage.read("zz"), await storage.list(), await storage.list("a")]
        await storage.delete("c")
        await storage.delete("c")
        out.append(await storage.list())
        out.append(sandbox.calls)
        out.append(sorted(sandbox.files))
        return out

    ours_box, theirs_box = MemorySandbox(), MemorySandbox()
    ours = run(drive(LocalFileStorage("./sb/").for_sandbox(ours_box), ours_box))
    theirs = run(drive(ref.LocalFileStorage("./sb/").for_sandbox(theirs_box), theirs_box))
    assert ours == theirs
    assert ours[2] == ["a/b.txt", "c"]


def test_sandbox_rules_for_host_strategies(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="^Bm25SearchStrategy requires host filesystem access and cannot be used"):
        LocalFileStorage(str(tmp_path), sandbox=MemorySandbox(), search_strategy=Bm25SearchStrategy())
    storage = LocalFileStorage(str(tmp_path), search_strategy=Bm25SearchStrategy()).namespace("n")
    sandbox = MemorySandbox()
    with pytest.warns(UserWarning) as record:
        bound = storage.for_sandbox(sandbox)
    assert str(record[0].message) == (
        "Bm25SearchStrategy requires host filesystem access and is not compatible with sandboxed storage"
        " — dropping search strategy, falling back to keyword search"
    )
    assert bound._search_strategy is None and bound._namespaced is storage._namespaced
    assert bound.for_sandbox(sandbox) is bound
    keyword = LocalFileStorage(str(tmp_path), search_strategy=KeywordSearchStrategy())
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert keyword.for_sandbox(sandbox)._search_strategy is keyword._search_strategy
    # In-memory BM25 does not need the host filesystem, so sandboxed storage accepts it.
    LocalFileStorage(str(tmp_path), sandbox=sandbox, search_strategy=Bm25SearchStrategy(in_memory=True))


def test_sandboxed_writes_are_not_indexed(tmp_path: Path) -> None:
    strategy = Bm25SearchStrategy(in_memory=True)
    sandbox = MemorySandbox()
    storage = LocalFileStorage(str(tmp_path), sandbox=sandbox, search_strategy=strategy)

    async def scenario() -> list[Any]:
        await storage.write("doc", b"alpha")
        return await storage.search("alpha")

    assert run(scenario()) == []


def test_bm25_index_files_interoperate(tmp_path: Path) -> None:
    """An FTS5 index built by the reference answers our searches and the other way round."""

    async def scenario() -> None:
        theirs = ref.LocalFileStorage(str(tmp_path / "docs"), search_strategy=RefBm25())
        await theirs.write("auth.md", b"OAuth2 authentication flow")
        await theirs.write("db.md", b"database migration flow")
        await theirs._search_strategy.close()
        ours = LocalFileStorage(str(tmp_path / "docs"), search_strategy=Bm25SearchStrategy())
        assert [hit.key for hit in await ours.search("flow")] == ["auth.md", "db.md"] or [
            hit.key for hit in await ours.search("flow")
        ] == ["db.md", "auth.md"]
        await ours.write("cache.md", b"cache flow flow flow")
        await ours._search_strategy.close()
        theirs2 = ref.LocalFileStorage(str(tmp_path / "docs"), search_strategy=RefBm25())
        ours2 = LocalFileStorage(str(tmp_path / "docs"), search_strategy=Bm25SearchStrategy())
        assert await theirs2.search("flow") == await ours2.search("flow")
        assert [hit.key for hit in await ours2.search("flow")][0] == "cache.md"
        await theirs2._search_strategy.close()
        await ours2._search_strategy.close()

    run(scenario())
    assert (tmp_path / ".__strands_docs-fts5.sqlite").is_file()
