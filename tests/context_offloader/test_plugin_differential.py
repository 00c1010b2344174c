"""Our plugin against the reference plugin, through a real Agent, conversation for conversation."""

from __future__ import annotations

import base64
import json
from typing import Any

import pytest
import strands.storage as ref_storage
import strands_offload.storage as our_storage
from _agent_harness import comparable, run
from strands.vended_plugins.context_offloader import ContextOffloader as RefOffloader
from strands.vended_plugins.context_offloader import FileStorage as RefFileStorage
from strands.vended_plugins.context_offloader import InMemoryStorage as RefLegacyInMemoryStorage
from strands_offload.context_offloader import ContextOffloader, FileStorage
from strands_offload.context_offloader import InMemoryStorage as LegacyInMemoryStorage

LOG = "\n".join(f"line {i} {'ERROR disk full' if i % 97 == 0 else 'ok'} é ² \r" for i in range(3000))
RECORDS = [{"id": i, "name": f"item-{i}", "price": i * 1.5, "tags": ["a", "ü"], "meta": {}} for i in range(800)]
PNG = b"\x89PNG\r\n\x1a\n" + bytes(range(256)) * 40

CONTENTS: dict[str, list[dict[str, Any]]] = {
    "text": [{"text": LOG}],
    "json": [{"json": {"items": RECORDS, "total": 800, "nan": float("nan")}}],
    "text_and_image": [{"text": LOG}, {"image": {"format": "png", "source": {"bytes": PNG}}}],
    "empty_text_first_quirk": [{"text": ""}, {"image": {"format": "png", "source": {"bytes": PNG}}}, {"text": LOG}],
    "document": [{"document": {"format": "pdf", "name": "report", "source": {"bytes": PNG * 3}}}, {"text": LOG}],
    "image_without_bytes": [{"image": {"format": "png", "source": {"location": {"type": "s3"}}}}, {"text": LOG}],
    "unknown_block": [{"text": LOG}, {"video": {"format": "mp4", "source": {"location": {"type": "s3"}}}}],
    "small": [{"text": "short result"}],
    "over_by_one": [{"text": "x" * (2500 * 4 + 1)}],
    "at_threshold": [{"text": "x" * (2500 * 4)}],
}

RETRIEVALS: dict[str, list[dict[str, Any]]] = {
    "pattern": [{"reference": 0, "pattern": "ERROR", "context_lines": 1}],
    "regex_in_range": [{"reference": 0, "pattern": r"line \d+5 ", "line_range": {"start": 100, "end": 400}}],
    "line_range": [{"reference": 0, "line_range": {"start": 2990, "end": 3100}}],
    "first_lines": [{"reference": 0, "context_lines": 3}],
    "no_match": [{"reference": 0, "pattern": "(?i)nothing here"}],
    "bad_range": [{"reference": 0, "line_range": {"start": 9, "end": 2}}],
    "beyond": [{"reference": 0, "line_range": {"start": 99999, "end": 100000}}],
    "invalid_regex_literal": [{"reference": 0, "pattern": "line 1 ("}],
    "full": [{"reference": 0}],
    "unknown_reference": [{"reference": "mem_99_nope"}],
    "empty_pattern": [{"reference": 0, "pattern": "", "line_range": {"start": 1, "end": 3}}],
}


@pytest.mark.parametrize("case", sorted(CONTENTS))
def test_offload_notice_matches_reference(case: str) -> None:
    _, ours = run(ContextOffloader(), CONTENTS[case])
    _, theirs = run(RefOffloader(), CONTENTS[case])
    assert comparable(ours) == comparable(theirs)


@pytest.mark.parametrize("case", sorted(RETRIEVALS))
def test_retrieval_matches_reference(case: str) -> None:
    _, ours = run(ContextOffloader(), CONTENTS["text"], RETRIEVALS[case])
    _, theirs = run(RefOffloader(), CONTENTS["text"], RETRIEVALS[case])
    assert comparable(ours) == comparable(theirs)
    assert len(ours) == 1 + len(RETRIEVALS[case])


@pytest.mark.parametrize(
    "retrieval",
    [
        {"reference": 0},
        {"reference": 0, "pattern": '"name": "item-7\\d"'},
        {"reference": 1},
        {"reference": 1, "pattern": "x"},
    ],
)
def test_json_and_image_retrieval_match_reference(retrieval: dict[str, Any]) -> None:
    content = [{"json": {"items": RECORDS}}, {"image": {"format": "png", "source": {"bytes": PNG}}}]
    _, ours = run(ContextOffloader(), content, [retrieval])
    _, theirs = run(RefOffloader(), content, [retrieval])
    assert comparable(ours) == comparable(theirs)


def test_unified_in_memory_storage_matches_reference() -> None:
    retrievals = [{"reference": 0, "pattern": "ERROR"}, {"reference": 1}]
    content = CONTENTS["text_and_image"]
    ours_agent, ours = run(ContextOffloader(our_storage.InMemoryStorage()), content, retrievals)
    _, theirs = run(RefOffloader(ref_storage.InMemoryStorage()), content, retrievals)
    assert comparable(ours) == comparable(theirs)
    assert "tooluse_big_1_0 (text, " in ours[0]["content"][0]["text"]


def test_unified_local_file_storage_writes_reference_layout(tmp_path: Any) -> None:
    ours_dir, ref_dir = tmp_path / "ours", tmp_path / "ref"
    retrievals = [{"reference": 0, "line_range": {"start": 5, "end": 9}}]
    _, ours = run(ContextOffloader(our_storage.LocalFileStorage(str(ours_dir))), CONTENTS["text"], retrievals)
    _, theirs = run(RefOffloader(ref_storage.LocalFileStorage(str(ref_dir))), CONTENTS["text"], retrievals)
    assert comparable(ours) == comparable(theirs)
    ours_files = sorted(p.relative_to(ours_dir).as_posix() for p in ours_dir.rglob("*") if p.is_file())
    ref_files = sorted(p.relative_to(ref_dir).as_posix() for p in ref_dir.rglob("*") if p.is_file())
    assert ours_files == ref_files
    for name in ref_files:
        assert (ours_dir / name).read_bytes() == (ref_dir / name).read_bytes()


def test_legacy_file_storage_round_trip(tmp_path: Any) -> None:
    retrievals = [{"reference": 0, "pattern": "ERROR", "context_lines": 0}]
    _, ours = run(ContextOffloader(FileStorage(str(tmp_path / "o"))), CONTENTS["text"], retrievals)
    _, theirs = run(RefOffloader(RefFileStorage(str(tmp_path / "r"))), CONTENTS["text"], retrievals)
    # File names carry a timestamp; everything after the notice must be identical.
    assert ours[1] == theirs[1] | {"toolUseId": ours[1]["toolUseId"]}
    assert ours[1]["content"][0]["text"].startswith("[31 matches for /ERROR/]")


def test_json_stored_bytes_are_indented_dump() -> None:
    storage = our_storage.InMemoryStorage()
    run(ContextOffloader(storage), CONTENTS["json"])
    stored = storage.namespace("offloader")
    import asyncio

    frame = asyncio.run(stored.read("tooluse_big_1_0"))
    assert frame is not None
    header = len("application/json")
    assert frame[:2] == header.to_bytes(2, "big")
    assert frame[2 + header :] == json.dumps(CONTENTS["json"][0]["json"], indent=2).encode()


B64_PNG = base64.b64encode(PNG).decode("ascii")
B64_CONTENTS = {
    "image": [{"text": LOG}, {"image": {"format": "png", "source": {"bytes": B64_PNG}}}],
    "document": [{"text": LOG}, {"document": {"format": "pdf", "name": "report", "source": {"bytes": B64_PNG}}}],
}


@pytest.mark.parametrize("kind", sorted(B64_CONTENTS))
def test_base64_str_source_is_returned_as_the_reference_returns_it(kind: str) -> None:
    # The default (legacy in-memory) storage keeps the str it was given; the full retrieval used to
    # fail with "Error: TypeError - string argument without an encoding" instead of returning it.
    retrievals = [{"reference": 1}, {"reference": 1, "pattern": "x"}, {"reference": 0, "pattern": "ERROR"}]
    _, ours = run(ContextOffloader(), B64_CONTENTS[kind], retrievals)
    _, theirs = run(RefOffloader(), B64_CONTENTS[kind], retrievals)
    assert comparable(ours) == comparable(theirs)
    block = ours[1]["content"][0][kind]
    assert ours[1]["status"] == "success" and block["source"]["bytes"] == B64_PNG


class _TextKeepingStorage:
    """A legacy backend that hands text back as str (as a store of strings would)."""

    def __init__(self) -> None:
        self.items: dict[str, tuple[Any, str]] = {}

    async def store(self, key: str, content: Any, content_type: str = "text/plain") -> str:
        self.items[key] = (content, content_type)
        return key

    async def retrieve(self, reference: str) -> tuple[Any, str]:
        content, content_type = self.items[reference]
        if content_type.startswith("text/") and isinstance(content, bytes):
            return content.decode("utf-8"), content_type
        return content, content_type


@pytest.mark.parametrize("retrieval", [{"reference": 0}, {"reference": 0, "pattern": "ERROR"}])
def test_text_handed_back_as_str_fails_as_in_the_reference(retrieval: dict[str, Any]) -> None:
    # Before, a search ran over no content at all and answered "No matches".
    _, ours = run(ContextOffloader(_TextKeepingStorage()), CONTENTS["text"], [retrieval])
    _, theirs = run(RefOffloader(_TextKeepingStorage()), CONTENTS["text"], [retrieval])
    assert comparable(ours) == comparable(theirs)
    assert ours[1]["status"] == "error"


@pytest.mark.parametrize("evict_after_turns", [1, None])
def test_legacy_in_memory_eviction_through_the_plugin_matches_reference(evict_after_turns: int | None) -> None:
    # Two retrievals of an unknown reference let the stored block sit idle for two cycles.
    idle = [{"reference": "mem_99_unknown"}] * 2 + [{"reference": 0, "pattern": "ERROR", "context_lines": 0}]
    _, ours = run(ContextOffloader(LegacyInMemoryStorage(evict_after_turns)), CONTENTS["text"], idle)
    _, theirs = run(RefOffloader(RefLegacyInMemoryStorage(evict_after_turns)), CONTENTS["text"], idle)
    assert comparable(ours) == comparable(theirs)
    assert (ours[-1]["status"] == "error") is (evict_after_turns is not None)


def test_one_legacy_in_memory_store_refuses_a_second_agent_like_reference() -> None:
    errors, first_agents = [], []
    for offloader in (ContextOffloader(), RefOffloader()):
        # The first agent stays alive: the store is claimed by id(), which a freed agent gives back.
        first_agents.append(run(offloader, [{"text": "small"}])[0])
        with pytest.raises(ValueError) as caught:
            run(offloader, [{"text": "small"}])
        errors.append(str(caught.value))
    assert errors[0] == errors[1]
