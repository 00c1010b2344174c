"""Tests of the ``strands-offload`` command line."""

from __future__ import annotations

import argparse
import importlib
import io
import math
import subprocess
import sys
from importlib.metadata import entry_points
from pathlib import Path
from typing import Any

import pytest
from strands.models.model import _heuristic_estimate_text
from strands.vended_plugins.context_offloader.search import _search_content
from strands_offload import cli
from strands_offload._tokens import count_tokens, preview

SAMPLE = (
    "first line\nsecond ERROR here\r\nthird\n\ncafé ünïcode 東京 🚀\n" + "filler words here\n" * 40 + "last ERROR\n"
)


def run(argv: list[str], capsysbinary: pytest.CaptureFixture[bytes]) -> tuple[int, str, str]:
    code = cli.main(argv)
    out, err = capsysbinary.readouterr()
    return code, out.decode("utf-8"), err.decode("utf-8")


@pytest.fixture
def sample_file(tmp_path: Path) -> Path:
    path = tmp_path / "sample.txt"
    path.write_bytes(SAMPLE.encode("utf-8"))
    return path


@pytest.fixture
def stdin_sample(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(SAMPLE.encode("utf-8")), encoding="utf-8"))


# ---------------------------------------------------------------------------
# parser


def test_parser_knows_every_sub_command() -> None:
    parser = cli.build_parser()
    assert parser.parse_args(["count", "f"]).handler is cli._cmd_count
    assert parser.parse_args(["preview", "f", "--tokens", "3"]).handler is cli._cmd_preview
    assert parser.parse_args(["grep", "f", "--pattern", "x"]).handler is cli._cmd_grep
    assert parser.parse_args(["demo"]).handler is cli._cmd_demo


def test_parser_defaults() -> None:
    parser = cli.build_parser()
    count = parser.parse_args(["count", "-"])
    assert (count.file, count.encoding) == ("-", "cl100k_base")
    preview = parser.parse_args(["preview", "f", "--tokens", "10"])
    assert (preview.tokens, preview.mode, preview.encoding) == (10, "head", "heuristic")
    grep = parser.parse_args(["grep", "f"])
    assert (grep.pattern, grep.lines, grep.context, grep.max_chars) == (None, None, 5, 10_000)


@pytest.mark.parametrize(
    "argv",
    [
        [],
        ["count"],
        ["count", "f", "--encoding", "gpt2"],
        ["preview", "f"],
        ["preview", "f", "--tokens", "-1"],
        ["preview", "f", "--tokens", "3", "--mode", "middle"],
        ["grep", "f", "--lines", "a:b"],
        ["grep", "f", "--context", "x"],
        ["nope"],
    ],
)
def test_bad_usage_exits_2(argv: list[str]) -> None:
    with pytest.raises(SystemExit) as exc:
        cli.build_parser().parse_args(argv)
    assert exc.value.code == 2


@pytest.mark.parametrize(("text", "expected"), [("3:7", (3, 7)), ("4", (4, 4)), ("5:", (5, None)), (" 2 : 9 ", (2, 9))])
def test_parse_line_range(text: str, expected: tuple[int, int | None]) -> None:
    assert cli.parse_line_range(text) == expected


def test_parse_line_range_rejects_garbage() -> None:
    with pytest.raises(argparse.ArgumentTypeError):
        cli.parse_line_range("1-3")


def test_demo_offloads_and_greps(capsysbinary: pytest.CaptureFixture[bytes]) -> None:
    code, out, err = run(["demo", "--size-mb", "2", "--repeats", "1"], capsysbinary)
    assert code == 0, err
    assert "[Offloaded: 1 blocks, ~500," in out
    assert "[2 matches for /ERROR/]" in out
    assert "Same notice header and grep result as the reference: yes" in out


def test_missing_file_is_an_error(tmp_path: Path, capsysbinary: pytest.CaptureFixture[bytes]) -> None:
    code, out, err = run(["count", str(tmp_path / "absent.txt"), "--encoding", "heuristic"], capsysbinary)
    assert code == 1 and out == ""
    assert err.startswith("strands-offload count: error: cannot read")


def test_read_text_replaces_invalid_utf8_and_keeps_crlf(tmp_path: Path) -> None:
    path = tmp_path / "bad.txt"
    path.write_bytes(b"ok\r\nbad \xff byte\n")
    assert cli.read_text(str(path)) == "ok\r\nbad \ufffd byte\n"


def test_read_text_from_stdin(stdin_sample: None) -> None:
    assert cli.read_text("-") == SAMPLE


def test_write_text_survives_lone_surrogates(capsysbinary: pytest.CaptureFixture[bytes]) -> None:
    cli.write_text("a\ud800b é")
    assert capsysbinary.readouterr().out == "a\\ud800b é\n".encode()


# ---------------------------------------------------------------------------
# count


def test_count_heuristic_matches_the_reference(sample_file: Path, capsysbinary: pytest.CaptureFixture[bytes]) -> None:
    code, out, err = run(["count", str(sample_file), "--encoding", "heuristic"], capsysbinary)
    assert (code, err) == (0, "")
    assert int(out) == _heuristic_estimate_text(SAMPLE) == math.ceil(len(SAMPLE) / 4)


def test_count_from_stdin(stdin_sample: None, capsysbinary: pytest.CaptureFixture[bytes]) -> None:
    code, out, _ = run(["count", "-", "--encoding", "heuristic"], capsysbinary)
    assert code == 0 and int(out) == _heuristic_estimate_text(SAMPLE)


@pytest.mark.parametrize("encoding", ["cl100k_base", "o200k_base"])
def test_count_exact_prints_the_library_count(
    encoding: str, sample_file: Path, capsysbinary: pytest.CaptureFixture[bytes]
) -> None:
    code, out, _ = run(["count", str(sample_file), "--encoding", encoding], capsysbinary)
    assert code == 0 and int(out) == count_tokens(SAMPLE, encoding)


# ---------------------------------------------------------------------------
# preview


def test_preview_head_heuristic_is_the_first_4n_characters(
    sample_file: Path, capsysbinary: pytest.CaptureFixture[bytes]
) -> None:
    code, out, _ = run(["preview", str(sample_file), "--tokens", "5"], capsysbinary)
    assert code == 0 and out == SAMPLE[:20] + "\n"


def test_preview_tail_heuristic(sample_file: Path, capsysbinary: pytest.CaptureFixture[bytes]) -> None:
    code, out, _ = run(["preview", str(sample_file), "--tokens", "5", "--mode", "tail"], capsysbinary)
    assert code == 0 and out == SAMPLE[-20:] + "\n"


def test_preview_head_tail_marks_the_gap(sample_file: Path, capsysbinary: pytest.CaptureFixture[bytes]) -> None:
    code, out, _ = run(["preview", str(sample_file), "--tokens", "10", "--mode", "head_tail"], capsysbinary)
    cut = preview(SAMPLE, 10, mode="head_tail", encoding="heuristic")
    assert code == 0
    assert out.startswith(cut.head) and out.endswith(cut.tail + "\n")
    assert f"[... {cut.elided_chars:,} characters omitted ...]" in out
    assert len(cut.head) + len(cut.tail) + cut.elided_chars == len(SAMPLE)


def test_preview_of_a_short_text_is_the_text(tmp_path: Path, capsysbinary: pytest.CaptureFixture[bytes]) -> None:
    path = tmp_path / "short.txt"
    path.write_text("tiny", encoding="utf-8")
    code, out, _ = run(["preview", str(path), "--tokens", "100", "--mode", "head_tail"], capsysbinary)
    assert code == 0 and out == "tiny\n"


# ---------------------------------------------------------------------------
# grep


@pytest.mark.parametrize(
    "options",
    [
        {"pattern": "ERROR"},
        {"pattern": "(?i)error", "context_lines": 1},
        {"pattern": "東京|last"},
        {"pattern": "no such thing"},
        {"line_range": (2, 4)},
        {"line_range": (3, 3)},
        {"pattern": "filler", "context_lines": 0, "max_chars": 120},
    ],
)
def test_grep_matches_the_reference(
    options: dict[str, Any], sample_file: Path, capsysbinary: pytest.CaptureFixture[bytes]
) -> None:
    argv = ["grep", str(sample_file)]
    if "pattern" in options:
        argv += ["--pattern", options["pattern"]]
    if "line_range" in options:
        argv += ["--lines", "{}:{}".format(*options["line_range"])]
    if "context_lines" in options:
        argv += ["--context", str(options["context_lines"])]
    if "max_chars" in options:
        argv += ["--max-chars", str(options["max_chars"])]
    code, out, err = run(argv, capsysbinary)
    assert (code, err) == (0, "")
    assert out == _search_content(SAMPLE, **options) + "\n"


def test_grep_open_ended_range_runs_to_the_last_line(
    sample_file: Path, capsysbinary: pytest.CaptureFixture[bytes]
) -> None:
    code, out, _ = run(["grep", str(sample_file), "--lines", "40:"], capsysbinary)
    last = SAMPLE.count("\n") + 1
    assert code == 0 and out == _search_content(SAMPLE, line_range=(40, last)) + "\n"


def test_grep_invalid_range_reports_the_reference_message(
    sample_file: Path, capsysbinary: pytest.CaptureFixture[bytes]
) -> None:
    with pytest.raises(ValueError) as expected:
        _search_content(SAMPLE, line_range=(9, 2))
    code, out, err = run(["grep", str(sample_file), "--lines", "9:2"], capsysbinary)
    assert code == 1 and out == ""
    assert err == f"strands-offload grep: error: {expected.value}\n"


# ---------------------------------------------------------------------------
# entry points


def test_console_script_points_at_main() -> None:
    scripts = {ep.name: ep.value for ep in entry_points(group="console_scripts")}
    assert scripts.get("strands-offload") == "strands_offload.cli:main"


def test_python_dash_m_runs_the_cli() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "strands_offload", "--help"], capture_output=True, text=True, check=False
    )
    assert done.returncode == 0
    for command in ("count", "preview", "grep", "demo"):
        assert command in done.stdout


def test_module_main_is_importable_without_running() -> None:
    # The package must not run the CLI on a plain import.
    importlib.import_module("strands_offload.cli")
