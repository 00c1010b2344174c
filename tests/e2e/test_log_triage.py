"""End to end: a real Agent, a scripted model, a 5 MB log offloaded and grepped back.

The same script runs with the reference plugin and ours; the conversations must
be the same message for message (the notice's guidance prose aside).
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
import strands.storage as ref_storage
import strands_offload.storage as our_storage
from _agent_harness import comparable, normalize_notice, run
from _s3_support import EndpointSession
from strands.vended_plugins.context_offloader import ContextOffloader as RefOffloader
from strands.vended_plugins.context_offloader import S3Storage as RefLegacyS3
from strands_offload.context_offloader import ContextOffloader, S3Storage
from strands_offload.demo.scenario import make_service_log, run_log_triage

LOG = make_service_log(5_000_000)


def _normalized(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    out = []
    for message in messages:
        content = []
        for block in message["content"]:
            if "toolResult" in block:
                result = block["toolResult"]
                items = [{"text": normalize_notice(i["text"])} if "text" in i else i for i in result["content"]]
                content.append({"toolResult": {**result, "content": items}})
            else:
                content.append(block)
        out.append({"role": message["role"], "content": content})
    return out


def test_five_megabyte_log_same_conversation_as_reference() -> None:
    ours = run_log_triage(ContextOffloader(), LOG)
    theirs = run_log_triage(RefOffloader(), LOG)
    assert _normalized(ours.messages) == _normalized(theirs.messages)
    assert len(ours.messages) == 6  # prompt, call, notice, grep call, grep result, answer
    assert ours.answer == "Search finished: [5 matches for /ERROR/]"
    notice = ours.messages[2]["content"][0]["toolResult"]["content"][0]["text"]
    assert notice.startswith(f"[Offloaded: 1 blocks, ~{-(-len(LOG) // 4):,} tokens]")
    assert len(notice) < 5_000
    grep = ours.messages[4]["content"][0]["toolResult"]["content"][0]["text"]
    assert grep.count("\n> ") == 5 and "upstream timeout" in grep


def test_regex_retrieval_with_context_same_as_reference() -> None:
    pattern = r"ERROR (auth|billing) request_id=r\d+"
    ours = run_log_triage(ContextOffloader(), LOG, pattern=pattern)
    theirs = run_log_triage(RefOffloader(), LOG, pattern=pattern)
    assert _normalized(ours.messages) == _normalized(theirs.messages)


def test_s3_unified_storage_same_conversation(s3_endpoint: str, s3_bucket: str) -> None:
    session = EndpointSession(s3_endpoint)
    retrievals = [{"reference": 0, "pattern": "ERROR"}, {"reference": 0, "line_range": {"start": 9970, "end": 9975}}]
    content = [{"text": LOG[:1_000_000]}]
    ours_storage = our_storage.S3Storage(s3_bucket, prefix="ours", boto_session=session)
    theirs_storage = ref_storage.S3Storage(s3_bucket, prefix="theirs", boto_session=session)
    _, ours = run(ContextOffloader(ours_storage), content, retrievals)
    _, theirs = run(RefOffloader(theirs_storage), content, retrievals)
    assert comparable(ours) == comparable(theirs)
    client = session.client("s3")
    ours_objects = client.get_object(Bucket=s3_bucket, Key="ours/offloader/tooluse_big_1_0")["Body"].read()
    theirs_objects = client.get_object(Bucket=s3_bucket, Key="theirs/offloader/tooluse_big_1_0")["Body"].read()
    assert ours_objects == theirs_objects


def test_s3_legacy_storage_retrieval(s3_endpoint: str, s3_bucket: str) -> None:
    session = EndpointSession(s3_endpoint)
    retrievals = [{"reference": 0, "pattern": "ERROR", "context_lines": 0}]
    content = [{"text": LOG[:500_000]}]
    _, ours = run(ContextOffloader(S3Storage(s3_bucket, "o", boto_session=session)), content, retrievals)
    _, theirs = run(RefOffloader(RefLegacyS3(s3_bucket, "r", boto_session=session)), content, retrievals)
    assert ours[1]["content"] == theirs[1]["content"]
    assert ours[0]["content"][0]["text"].split("[Stored references:]\n")[1].startswith(f"  s3://{s3_bucket}/o/")


@pytest.mark.parametrize("storage_kind", ["memory", "files"])
def test_json_and_image_results_end_to_end(storage_kind: str, tmp_path: Any) -> None:
    document = {"service": "billing", "events": [{"id": i, "ok": i % 13 != 0, "note": "ü"} for i in range(3000)]}
    png = b"\x89PNG\r\n\x1a\n" + bytes(range(256)) * 64
    content = [{"json": document}, {"image": {"format": "png", "source": {"bytes": png}}}]
    retrievals = [{"reference": 0, "pattern": '"ok": false', "context_lines": 1}, {"reference": 1}]

    def storages() -> tuple[Any, Any]:
        if storage_kind == "memory":
            return our_storage.InMemoryStorage(), ref_storage.InMemoryStorage()
        return (
            our_storage.LocalFileStorage(str(tmp_path / "ours")),
            ref_storage.LocalFileStorage(str(tmp_path / "theirs")),
        )

    ours_store, theirs_store = storages()
    _, ours = run(ContextOffloader(ours_store), content, retrievals)
    _, theirs = run(RefOffloader(theirs_store), content, retrievals)
    assert comparable(ours) == comparable(theirs)
    assert ours[0]["content"][1] == {"text": f"[image: png, {len(png)} bytes | ref: tooluse_big_1_1]"}
    assert ours[2]["content"][0]["image"]["source"]["bytes"] == png


def test_manual_offload_reads_back_through_the_tool() -> None:
    plugin = ContextOffloader(our_storage.InMemoryStorage())
    agent, _ = run(plugin, [{"text": "tiny"}])
    offloaded = asyncio.run(plugin.offload(agent, LOG[:200_000], key="user_upload"))
    text = asyncio.run(plugin._retrieve(agent, offloaded.references[0], None, {"start": 1, "end": 2}, None, None))
    assert text == "[Lines 1-2 of " + str(LOG[:200_000].count("\n") + 1) + "]\n\n" + "\n".join(
        f"  {n}| {line}" for n, line in zip((1, 2), LOG.split("\n")[:2], strict=True)
    )
