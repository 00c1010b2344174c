"""``strands-offload bench`` ships in the package: it runs without the test extras and reaches only
public names of the context manager."""

from __future__ import annotations

import ast
import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
import strands_offload.bench

BENCH = Path(strands_offload.bench.__file__).parent

# Runs in a fresh interpreter where ``anthropic`` and ``httpx`` cannot be imported (as on a machine
# without the test extras): the report path with one short prompt-cache session, then the Anthropic stub.
_WITHOUT_EXTRAS = textwrap.dedent(
    """
    import importlib.abc
    import json
    import sys

    BLOCKED = {"anthropic", "httpx"}


    class Blocker(importlib.abc.MetaPathFinder):
        def find_spec(self, name, path=None, target=None):
            if name.partition(".")[0] in BLOCKED:
                raise ModuleNotFoundError(f"No module named {name!r} (blocked)", name=name)
            return None


    sys.meta_path.insert(0, Blocker())
    sys.modules["matplotlib"] = None  # no chart: not what this run is about

    from strands_offload.bench import cache_sessions, report
    from strands_offload.bench.stub_clients import AnthropicUnavailable, anthropic_model
    from strands_offload.bench.prompt_cache import PromptCache, SimClock

    full_run = cache_sessions.run
    report.all_cases = lambda quick: []
    cache_sessions.run = lambda shape, policy: full_run(shape, policy, turns=3)
    result, text = report.run_bench(quick=True, out=sys.argv[1], progress=False)
    try:
        anthropic_model(PromptCache(SimClock()), lambda request: None)
        anthropic = "made"
    except AnthropicUnavailable as error:
        anthropic = str(error)
    print(json.dumps({
        "billed": {policy: figures.billed for policy, figures in result.sessions["api"].items()},
        "text": text,
        "anthropic": anthropic,
        "imported": sorted(m for m in sys.modules if m.partition(".")[0] in BLOCKED),
    }))
    """
)


def test_the_bench_report_runs_without_anthropic_and_httpx(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-c", _WITHOUT_EXTRAS, str(tmp_path / "out")],
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    out = json.loads(done.stdout.strip().splitlines()[-1])
    assert out["imported"] == []
    assert set(out["billed"]) == {"none", "auto", "auto+options", "cache-optimized"}
    assert all(billed > 0 for billed in out["billed"].values())
    assert "Billed input with a simulated prompt cache" in out["text"]
    assert (tmp_path / "out" / "results.md").is_file()
    # The Anthropic stub says what it needs, and that the bench does not.
    assert "needs the 'anthropic' package" in out["anthropic"]
    assert "pip install 'strands-offload[test]'" in out["anthropic"]
    assert "strands-offload bench does not need it" in out["anthropic"]


def test_the_anthropic_stub_still_works_where_anthropic_is_installed() -> None:
    pytest.importorskip("anthropic")
    from strands_offload.bench.prompt_cache import PromptCache, SimClock
    from strands_offload.bench.stub_clients import StubAnthropicClient, anthropic_model

    model = anthropic_model(PromptCache(SimClock()), lambda request: None)
    assert isinstance(model.client, StubAnthropicClient)


def _private_reaches(path: Path) -> list[str]:
    """Imports in ``path`` of a private module or name of the context manager package."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if not isinstance(node, ast.ImportFrom) or node.module is None:
            continue
        parts = node.module.split(".")
        if "context_manager" not in parts or parts[0] == "strands":
            continue
        inside = parts[parts.index("context_manager") :]
        names = [alias.name for alias in node.names]
        if any(part.startswith("_") for part in inside) or any(name.startswith("_") for name in names):
            found.append(f"{path.name}:{node.lineno}: from {'.' * node.level}{node.module} import {', '.join(names)}")
    return found


def test_the_bench_reaches_no_private_name_of_the_context_manager() -> None:
    reaches = [reach for path in sorted(BENCH.glob("*.py")) for reach in _private_reaches(path)]
    assert reaches == []
    # No module clock switch either: simulations hand their clock to ContextManager(clock=...).
    for path in BENCH.glob("*.py"):
        assert "set_clock" not in path.read_text(), path.name
