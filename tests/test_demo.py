"""The demo's second scene: the context manager keeps a long session inside the window."""

from __future__ import annotations

import io

from strands_offload.context_manager import ContextManager
from strands_offload.demo.long_session import PAGES, WINDOW, canonical, run_long_session
from strands_offload.demo.run import long_session_demo


def test_long_session_stays_under_the_window_with_a_summary_and_a_retrieval() -> None:
    run = run_long_session(ContextManager())
    assert len(run.usage) > PAGES and max(run.usage) < WINDOW
    texts = [b.get("text", "") for m in run.messages for b in m["content"]]
    assert any(t.startswith("[Summarized: ") for t in texts)
    grep = [
        b["toolResult"]
        for m in run.messages
        for b in m["content"]
        if "toolResult" in b and b["toolResult"]["toolUseId"] == "tu_grep"
    ]
    assert grep and grep[0]["status"] == "success"
    assert grep[0]["content"][0]["text"].startswith("[4 matches for /declined/]")


def test_scene_two_matches_the_reference_and_says_so() -> None:
    from strands.experimental.context_manager import ContextManager as ReferenceManager

    assert canonical(run_long_session(ReferenceManager()).messages) == canonical(
        run_long_session(ContextManager()).messages
    )
    out = io.StringIO()
    assert long_session_demo(1, out) == 0
    report = out.getvalue()
    assert "Same conversation as the reference's context manager: yes" in report
    assert "[Summarized: 12 messages" in report
