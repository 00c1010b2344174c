"""``strands-offload bench``: shared cases that agree with the reference, the report files, optional pieces."""

from __future__ import annotations

import json
import os
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
    # The retrieval cases call the tool as the reference allows: with a context holding only the agent.
    [c for c in QUICK if "10KB" in c.group or c.operation in ("context manager", "storage", "retrieval")],
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
    monkeypatch.setattr(report, "all_sessions", lambda quick: [])
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
    monkeypatch.setattr(report, "all_sessions", lambda quick: [])
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
    monkeypatch.setattr(report, "all_sessions", lambda quick: [])
    assert cli.main(["bench", "--quick", "--out", str(tmp_path), "--no-progress"]) == 0
    out = capsys.readouterr().out
    assert "| sum small |" in out and (tmp_path / "results.json").is_file()
    args = cli.build_parser().parse_args(["bench"])
    assert args.out == "strands-offload-bench" and args.quick is False


def test_out_naming_a_file_is_a_one_line_error_before_measuring(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    def never(quick: bool = False) -> list[Case]:
        raise AssertionError("measured although the report could never be written")

    monkeypatch.setattr(report, "all_cases", never)
    existing = tmp_path / "notes.txt"
    existing.write_text("keep me", encoding="utf-8")
    assert cli.main(["bench", "--quick", "--out", str(existing), "--no-progress"]) == 1
    captured = capsys.readouterr()
    assert captured.out == "" and captured.err == (
        f"strands-offload bench: error: --out {existing} is a file, not a folder; pass a folder for the report\n"
    )
    assert existing.read_text(encoding="utf-8") == "keep me"
    assert cli.main(["bench", "--quick", "--out", str(existing / "below"), "--no-progress"]) == 1
    assert capsys.readouterr().err == (
        f"strands-offload bench: error: cannot create the folder {existing / 'below'}: Not a directory\n"
    )


def _old_outputs(folder: Path) -> dict[str, bytes]:
    folder.mkdir(exist_ok=True)
    old = {"results.md": b"old table\n", "results.json": b"{}\n", "chart.png": b"\x89PNG old chart"}
    for name, data in old.items():
        (folder / name).write_bytes(data)
    return old


def test_a_failed_write_replaces_no_earlier_output(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    old = _old_outputs(tmp_path)
    monkeypatch.setattr(report, "all_cases", _tiny_cases)
    monkeypatch.setattr(report, "all_sessions", lambda quick: [])

    def full_disk(result: Any, path: Path) -> str | None:
        path.write_bytes(b"\x89PNG half")  # the chart is the last file written: the disk fills there
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(report, "chart", full_disk)
    assert cli.main(["bench", "--quick", "--out", str(tmp_path), "--no-progress"]) == 1
    assert capsys.readouterr().err == (
        f"strands-offload bench: error: cannot write the report to {tmp_path}: No space left on device; "
        "no earlier output was replaced\n"
    )
    # Before, results.md and results.json of the new run sat beside the old chart.png.
    assert {path.name: path.read_bytes() for path in tmp_path.iterdir()} == old


def test_a_complete_write_replaces_every_output_together(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _old_outputs(tmp_path)
    monkeypatch.setattr(report, "all_cases", _tiny_cases)
    monkeypatch.setattr(report, "all_sessions", lambda quick: [])
    monkeypatch.setitem(sys.modules, "matplotlib", None)  # no chart this time
    _result, text = report.run_bench(quick=True, out=tmp_path, progress=False)
    # No chart.png of an earlier run is left beside the new tables, and no temporary file remains.
    assert sorted(path.name for path in tmp_path.iterdir()) == ["results.json", "results.md"]
    assert (tmp_path / "results.md").read_text().startswith("| operation |")
    assert "removed the chart.png of an earlier run" in text
    assert oct((tmp_path / "results.md").stat().st_mode & 0o777) == oct(0o666 & ~_umask())


def test_the_report_has_the_prompt_cache_table(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from strands_offload.bench import cache_sessions

    monkeypatch.setattr(report, "all_cases", lambda quick: [])
    monkeypatch.setitem(sys.modules, "matplotlib", None)
    played: list[tuple[str, str]] = []
    full_run = cache_sessions.run

    def short_run(shape: str, policy: str) -> cache_sessions.Figures:
        played.append((shape, policy))
        return full_run(shape, policy, turns=4)

    monkeypatch.setattr(cache_sessions, "run", short_run)
    assert report.all_sessions(quick=True) == ["api"]
    assert report.all_sessions(quick=False) == ["api", "chat", "coding"]
    result, text = report.run_bench(quick=True, out=tmp_path, progress=False)
    assert played == [("api", policy) for policy in cache_sessions.POLICIES]
    rows = result.sessions["api"]
    assert rows["none"].billed > 0 and rows["none"].summarizer_calls == 0
    assert "Billed input with a simulated prompt cache" in text
    table = (tmp_path / "results.md").read_text()
    for policy, figures in rows.items():
        assert f"| api | {policy} | {figures.billed:,.0f} |" in table
    data = json.loads((tmp_path / "results.json").read_text())
    assert data["prompt_cache"]["api"]["auto"]["billed"] == rows["auto"].billed


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask
