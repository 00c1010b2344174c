"""``strands-offload bench``: shared cases that agree with the reference, the report files, optional pieces."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest
from strands_offload import cli
from strands_offload.bench import cases, corpus, report
from strands_offload.bench.cases import Case, CaseUnavailable

QUICK = cases.all_cases(quick=True)
# Every operation the issue lists has a case.
OPERATIONS = {"tokens", "preview", "json", "grep", "plugin", "retrieval", "context manager", "storage", "accelerate"}


def test_every_operation_has_cases_and_names_are_unique() -> None:
    assert {case.operation for case in QUICK} == OPERATIONS
    assert len({case.group for case in QUICK}) == len(QUICK)
    full = cases.all_cases()
    assert any("10MB" in case.group for case in full) and not any("10MB" in case.group for case in QUICK)


@pytest.mark.parametrize(
    "case",
    [c for c in QUICK if "10KB" in c.group or c.operation in ("context manager", "storage")],
    ids=lambda c: c.group,
)
def test_cases_agree_with_the_reference(case: Case, tiktoken_offline: Any) -> None:
    reference, ours = case.prepare()
    assert reference() == ours()


@pytest.mark.parametrize("kind", corpus.KINDS)
def test_corpus_gives_exact_sizes(kind: str) -> None:
    text = corpus.text(kind, 10_000)
    assert isinstance(text, str) and len(text) == 10_000


def _tiny_cases(quick: bool = False) -> list[Case]:
    def missing() -> tuple[Any, Any]:
        raise CaseUnavailable("tiktoken is not installed")

    return [
        Case("sum small", "json", lambda: ((lambda: sum(range(100))), (lambda: sum(range(100))))),
        Case("needs tiktoken", "tokens", missing),
    ]


def test_report_files_and_skips(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(report, "all_cases", _tiny_cases)
    monkeypatch.setitem(sys.modules, "matplotlib", None)  # as if not installed: importing it fails
    result, text = report.run_bench(quick=True, out=tmp_path / "out", progress=False)
    assert [row.group for row in result.rows] == ["sum small"] and result.rows[0].rounds >= 3
    assert result.skipped == [("needs tiktoken", "tiktoken is not installed")]
    table = (tmp_path / "out" / "results.md").read_text()
    assert table.startswith(
        "| operation | reference (median) | ours (median) | ratio |\n|---|---:|---:|---:|\n| sum small |"
    )
    data = json.loads((tmp_path / "out" / "results.json").read_text())
    assert data["quick"] is True and data["cases"][0]["group"] == "sum small" and data["skipped"][0]["group"]
    assert "chart skipped: matplotlib is not installed" in text and not (tmp_path / "out" / "chart.png").exists()
    assert "skipped: needs tiktoken: tiktoken is not installed" in text


def test_chart_is_drawn_when_matplotlib_is_there(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    pytest.importorskip("matplotlib")
    monkeypatch.setattr(report, "all_cases", _tiny_cases)
    _result, text = report.run_bench(quick=True, out=tmp_path, progress=False)
    assert (tmp_path / "chart.png").read_bytes().startswith(b"\x89PNG") and "chart.png" in text


def test_tiktoken_is_never_downloaded(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    pytest.importorskip("tiktoken")
    monkeypatch.setattr(cases, "_rank_dirs", lambda: iter([tmp_path]))
    monkeypatch.setattr(cases, "_ENCODINGS", {})
    with pytest.raises(CaseUnavailable, match="rank file is not on this machine"):
        cases.tiktoken_encoding("cl100k_base")


def test_cli_bench_subcommand(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(report, "all_cases", _tiny_cases)
    assert cli.main(["bench", "--quick", "--out", str(tmp_path), "--no-progress"]) == 0
    out = capsys.readouterr().out
    assert "| sum small |" in out and (tmp_path / "results.json").is_file()
    args = cli.build_parser().parse_args(["bench"])
    assert args.out == "strands-offload-bench" and args.quick is False
