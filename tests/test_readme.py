"""The README's quick start and the CI's test command must not drift apart."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _bash_blocks(markdown: str) -> list[str]:
    return [block.strip() for block in re.findall(r"```bash\n(.*?)```", markdown, flags=re.S)]


def test_readme_test_command_is_the_one_ci_runs() -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    ci_command = (ROOT / ".ci" / "test-command").read_text(encoding="utf-8").strip().splitlines()[-1]
    quick_start = readme.split("## Quick start", 1)[1].split("\n## ", 1)[0]
    blocks = _bash_blocks(quick_start)
    assert blocks == ["pip install . && strands-offload demo", ci_command]


def test_ci_runs_the_test_command() -> None:
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    assert "bash .ci/test-command" in ci


def test_the_arm64_test_list_names_paths_that_exist() -> None:
    # .ci/test-arm64 hands these to pytest under emulation; a renamed test file must fail here,
    # in the test command, not an hour later in CI.
    listed = [
        line.split("#", 1)[0].strip()
        for line in (ROOT / ".ci" / "arm64-tests").read_text(encoding="utf-8").splitlines()
    ]
    paths = [entry.split("::", 1)[0] for entry in listed if entry]
    assert len(paths) >= 10
    assert [path for path in paths if not (ROOT / path).exists()] == []
