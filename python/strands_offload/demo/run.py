"""``strands-offload demo``: offload a 5 MB log, grep it back, compare with the reference.

Runs fully offline: a scripted model stands in for the provider, storage is in
memory, and the same scenario runs with the reference plugin for timing.
"""

from __future__ import annotations

import logging
import statistics
import sys
from typing import TextIO

from strands.types.content import Messages

from .. import count_tokens
from .._heuristic import text_tokens
from ..context_offloader import ContextOffloader
from ..telemetry import Savings
from .scenario import ScenarioRun, make_service_log, run_api_dump, run_log_triage

logger = logging.getLogger(__name__)


def _tool_texts(run: ScenarioRun) -> list[str]:
    texts = []
    for message in run.messages:
        for block in message["content"]:
            if "toolResult" in block:
                texts.append("\n".join(i["text"] for i in block["toolResult"]["content"] if "text" in i))
    return texts


def _shorten(text: str, head: int = 12, tail: int = 6) -> str:
    lines = text.split("\n")
    if len(lines) <= head + tail + 1:
        return text
    skipped = len(lines) - head - tail
    return "\n".join([*lines[:head], f"    ... {skipped} more lines ...", *lines[-tail:]])


def _best_of(repeats: int, make_plugin: object, log: str, pattern: str) -> tuple[ScenarioRun, float]:
    runs = [run_log_triage(make_plugin(), log, pattern=pattern) for _ in range(repeats)]  # type: ignore[operator]
    return runs[-1], statistics.median(r.seconds for r in runs)


def _api_runs(repeats: int, make_plugin: object, document: object) -> tuple[ScenarioRun, float]:
    runs = [run_api_dump(make_plugin(), document) for _ in range(repeats)]  # type: ignore[operator]
    return runs[-1], statistics.median(r.seconds for r in runs)


def _headers(run: ScenarioRun) -> list[str]:
    return [text.split("\n", 1)[0] for text in _tool_texts(run)]


def demo(size_mb: float = 5.0, pattern: str = "ERROR", repeats: int = 3, out: TextIO = sys.stdout) -> int:
    """Run the scenario with our plugin and the reference's; print what the model saw."""
    log = make_service_log(int(size_mb * 1_000_000))
    write = out.write
    write(f"Tool result: a service log of {len(log):,} characters, {log.count(chr(10)) + 1:,} lines\n")
    write(
        f"  tokens: ~{text_tokens(len(log)):,} by the SDK's chars/4 estimate, "
        f"{count_tokens(log, 'cl100k_base'):,} exact cl100k_base, "
        f"{count_tokens(log, 'o200k_base'):,} exact o200k_base\n\n"
    )
    plugins: list[ContextOffloader] = []

    def offloader() -> ContextOffloader:
        plugins.append(ContextOffloader())
        return plugins[-1]

    ours, our_seconds = _best_of(repeats, offloader, log, pattern)
    notice, grep = _tool_texts(ours)[:2]
    write("== What the model saw instead of the log (the offload notice)\n")
    write(_shorten(notice) + "\n\n")
    write(f"== The model called retrieve_offloaded_content with pattern={pattern!r}; it got\n")
    write(_shorten(grep, 14, 4) + "\n\n")
    write(f"== The model answered: {ours.answer}\n\n")
    write(f"Context kept: {len(notice):,} of {len(log):,} characters ({100 * len(notice) / len(log):.2f}%)\n")
    try:
        from strands.vended_plugins.context_offloader import ContextOffloader as ReferenceOffloader
    except ImportError:
        write("(the reference plugin is not installed; no timing comparison)\n")
        return 0
    logger.debug("scene=<offload>, repeats=<%d> | running the reference plugin", repeats)
    theirs, their_seconds = _best_of(repeats, ReferenceOffloader, log, pattern)
    same = _headers(theirs) == _headers(ours)
    write(
        f"Whole agent run (model calls, tool, offload, grep), median of {repeats}: "
        f"strands-offload {our_seconds * 1000:.1f} ms, reference {their_seconds * 1000:.1f} ms "
        f"({their_seconds / our_seconds:.1f}x)\n"
    )
    write(f"Same notice header and grep result as the reference: {'yes' if same else 'NO'}\n")
    saved = plugins[-1].savings()

    # The same scene with a JSON API dump, where the reference spends most of its time.
    from ..bench.corpus import json_document

    document = json_document(int(size_mb * 600_000))
    api_ours, api_our_seconds = _api_runs(repeats, offloader, document)
    api_theirs, api_their_seconds = _api_runs(repeats, ReferenceOffloader, document)
    api_same = _headers(api_theirs) == _headers(api_ours)
    write(f"\n== The same with a JSON tool result: {len(document['items']):,} API records as one JSON block\n")
    write(f"What the model saw first: {_headers(api_ours)[0]}; its grep: {_headers(api_ours)[1]}\n")
    write(
        f"Whole agent run, median of {repeats}: strands-offload {api_our_seconds * 1000:.1f} ms, "
        f"reference {api_their_seconds * 1000:.1f} ms ({api_their_seconds / api_our_seconds:.1f}x)\n"
    )
    from ..bench.cases import offload_hook_seconds

    hook_ours = offload_hook_seconds(ContextOffloader(), [{"json": document}], repeats)
    hook_theirs = offload_hook_seconds(ReferenceOffloader(), [{"json": document}], repeats)
    write(
        f"The offload hook alone on this result, median of {repeats}: strands-offload {hook_ours * 1000:.1f} ms, "
        f"reference {hook_theirs * 1000:.1f} ms ({hook_theirs / hook_ours:.1f}x); the rest of each run is the "
        "SDK's own work on the result (its tool span serializes it)\n"
    )
    write(f"Same notice header and grep result as the reference: {'yes' if api_same else 'NO'}\n")
    saved = saved + plugins[-1].savings()
    write("\n== What offloading saved in scene 1 (ContextOffloader.savings() of the two runs)\n")
    write(_indented(saved) + "\n")
    same = same and api_same
    second = long_session_demo(repeats, out)
    return 0 if same and second == 0 else 1


def _indented(saved: Savings) -> str:
    return "  " + str(saved).replace("\n", "\n  ")


def _marker_lines(messages: Messages, prefix: str) -> list[str]:
    return [
        block["text"]
        for message in messages
        for block in message["content"]
        if "text" in block and block["text"].startswith(prefix)
    ]


def long_session_demo(repeats: int = 3, out: TextIO = sys.stdout) -> int:
    """Scene two: the context manager keeps a 12-page API session under a 24k-token window."""
    from ..context_manager import ContextManager
    from .long_session import PAGES, WINDOW, canonical, run_long_session

    write = out.write
    managers = [ContextManager() for _ in range(repeats)]
    runs = [run_long_session(manager) for manager in managers]
    ours = runs[-1]
    write(f"\n== Scene 2: {PAGES} pages of an orders API, a {WINDOW:,}-token window, ContextManager()\n")
    calls = ", ".join(f"{tokens:,}" for tokens in ours.usage)
    write(f"Messages' tokens at each model call (the model's count): {calls}\n")
    write(f"Largest call: {max(ours.usage):,} tokens ({100 * max(ours.usage) / WINDOW:.0f}% of the window)\n")
    results = [b["toolResult"] for m in ours.messages for b in m["content"] if "toolResult" in b]
    truncated = [r for r in results if r["content"] and r["content"][0].get("text", "").startswith("[Truncated:")]
    write(f"Pages truncated on arrival (originals stashed): {len(truncated)} of {PAGES}\n")
    for summary in _marker_lines(ours.messages, "[Summarized:")[:1]:
        write("A summary the pipeline left in place of older messages:\n  " + summary.replace("\n", "\n  ") + "\n")
    grep = next((r for r in results if r["toolUseId"] == "tu_grep"), None)
    if grep is not None:
        write("== The model called retrieve_context on a stashed page with pattern 'declined'; it got\n")
        write(_shorten(grep["content"][0]["text"], 8, 2) + "\n")
    write(f"== The model answered: {ours.answer}\n")
    write("== What the context manager's edits saved (ContextManager.savings())\n")
    write(_indented(managers[-1].savings()) + "\n")
    try:
        from strands.experimental.context_manager import ContextManager as ReferenceManager
    except ImportError:
        write("(the reference context manager is not installed; no comparison)\n")
        return 0
    theirs = [run_long_session(ReferenceManager()) for _ in range(repeats)]
    our_seconds = statistics.median(r.seconds for r in runs)
    their_seconds = statistics.median(r.seconds for r in theirs)
    same = canonical(theirs[-1].messages) == canonical(ours.messages)
    write(
        f"Whole session, median of {repeats}: strands-offload {our_seconds * 1000:.1f} ms, "
        f"reference {their_seconds * 1000:.1f} ms ({their_seconds / our_seconds:.1f}x)\n"
    )
    write(f"Same conversation as the reference's context manager: {'yes' if same else 'NO'}\n")
    return 0 if same else 1
