"""Tests of the ``strands-offload`` command line."""

from __future__ import annotations

import argparse
import io
import math
import os
import signal
import subprocess
import sys
import sysconfig
import threading
import time
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
    for command in (["count", "-"], ["preview", "f", "--tokens", "1"], ["grep", "f"]):
        assert parser.parse_args(command).max_bytes == cli.DEFAULT_MAX_BYTES == 256 * 1024 * 1024


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
        ["count", "f", "--max-bytes", "-1"],
        ["count", "f", "--max-bytes", "12T"],
        ["demo", "--repeats", "0"],
        ["demo", "--size-mb", "-1"],
        ["demo", "--size-mb", "nan"],
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


@pytest.mark.parametrize(
    ("text", "expected"),
    [("0", 0), ("1048576", 1 << 20), ("512K", 512 << 10), ("256M", 256 << 20), ("2GiB", 2 << 30), ("3 mb", 3 << 20)],
)
def test_parse_byte_size(text: str, expected: int) -> None:
    assert cli.parse_byte_size(text) == expected


@pytest.mark.parametrize("text", ["", "M", "1.5M", "-1", "1ib", "\u00b2"])
def test_parse_byte_size_rejects_garbage(text: str) -> None:
    with pytest.raises(argparse.ArgumentTypeError):
        cli.parse_byte_size(text)


def test_parse_line_range_rejects_garbage() -> None:
    with pytest.raises(argparse.ArgumentTypeError):
        cli.parse_line_range("1-3")


def test_demo_offloads_and_greps(capsysbinary: pytest.CaptureFixture[bytes]) -> None:
    code, out, err = run(["demo", "--size-mb", "2", "--repeats", "1"], capsysbinary)
    assert code == 0, err
    assert "[Offloaded: 1 blocks, ~500," in out
    assert "[2 matches for /ERROR/]" in out
    assert "Same notice header and grep result as the reference: yes" in out


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["demo", "--size-mb", "1e9"], "--size-mb is at most 256 (got 1e+09)"),
        (["demo", "--size-mb", "256.5"], "--size-mb is at most 256 (got 256.5)"),
        (["demo", "--repeats", "21"], "--repeats is at most 20 (got 21)"),
        (["count", "f", "--max-bytes", "5G"], "--max-bytes is at most 4G (got 5,368,709,120)"),
        (["preview", "f", "--tokens", "10" + "0" * 20], "--tokens is at most 4,294,967,296 (got 1,"),
        (["grep", "f", "--context", "4294967297"], "--context is at most 4,294,967,296 (got 4,294,967,297)"),
        (["grep", "f", "--max-chars", "9" * 12], "--max-chars is at most 4,294,967,296 (got 999,999,999,999)"),
    ],
)
def test_work_sizing_options_past_their_bound_are_a_one_line_usage_error(
    argv: list[str], message: str, capsysbinary: pytest.CaptureFixture[bytes]
) -> None:
    # Refused before any work starts: the file "f" does not exist and no log is ever built.
    code, out, err = run(argv, capsysbinary)
    assert (code, out) == (2, "")
    assert err.startswith(f"strands-offload {argv[0]}: error: {message}") and err.count("\n") == 1, err


def test_work_sizing_options_at_their_bound_are_accepted(tmp_path: Path) -> None:
    path = tmp_path / "one.txt"
    path.write_bytes(b"a ERROR\nb\n")
    args = ["--context", "4294967296", "--max-chars", "4294967296", "--max-bytes", "4G"]
    done = cli_process("grep", str(path), "--pattern", "ERROR", *args)
    assert done.returncode == 0 and done.stdout.startswith(b"[1 match for /ERROR/]"), done.stderr
    # The exact BPE preview used to fail with an OverflowError past a C long.
    done = cli_process("preview", str(path), "--tokens", "4294967296", "--encoding", "cl100k_base")
    assert (done.returncode, done.stdout) == (0, b"a ERROR\nb\n\n"), done.stderr


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


def test_grep_open_range_past_the_end_reports_the_reference_beyond_message(
    tmp_path: Path, capsysbinary: pytest.CaptureFixture[bytes]
) -> None:
    text = "a\nb\nc\n"
    path = tmp_path / "three.txt"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(ValueError) as expected:
        _search_content(text, line_range=(99, 99))
    assert "beyond content length" in str(expected.value)
    code, out, err = run(["grep", str(path), "--lines", "99:"], capsysbinary)
    assert (code, out) == (1, "")
    assert err == f"strands-offload grep: error: {expected.value}\n"


# ---------------------------------------------------------------------------
# hostile input: every failure is one line on stderr and a non-zero status


class _Endless(io.RawIOBase):
    """A stream of NUL bytes that never ends, counting what was read from it."""

    def __init__(self) -> None:
        self.consumed = 0

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        size = len(buffer)
        buffer[:size] = bytes(size)
        self.consumed += size
        return size


def test_read_text_stops_one_byte_past_the_limit(monkeypatch: pytest.MonkeyPatch) -> None:
    endless = _Endless()
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BufferedReader(endless, buffer_size=4096)))
    with pytest.raises(cli.CliError, match=r"^standard input is larger than --max-bytes \(3,000,000 bytes\)"):
        cli.read_text("-", max_bytes=3_000_000)
    # Buffering may read ahead one buffer, never the whole stream.
    assert 3_000_001 <= endless.consumed <= 3_000_001 + 4096


def test_read_text_accepts_exactly_the_limit(tmp_path: Path) -> None:
    path = tmp_path / "ten.txt"
    path.write_bytes(b"0123456789")
    assert cli.read_text(str(path), max_bytes=10) == "0123456789"
    with pytest.raises(cli.CliError, match="larger than --max-bytes"):
        cli.read_text(str(path), max_bytes=9)


def test_read_text_from_a_text_only_stream(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sys, "stdin", io.StringIO("caf\u00e9"))
    assert cli.read_text("-") == "caf\u00e9"
    monkeypatch.setattr(sys, "stdin", io.StringIO("caf\u00e9"))
    with pytest.raises(cli.CliError, match="larger than"):
        cli.read_text("-", max_bytes=4)  # five UTF-8 bytes


SCRIPT = Path(sysconfig.get_path("scripts")) / "strands-offload"
posix_only = pytest.mark.skipif(os.name != "posix", reason="closes descriptors through sh")


def cli_process(*argv: str, stdin: Any = None, stdout: Any = subprocess.PIPE, close_stdin: bool = False) -> Any:
    """Run ``python -m strands_offload`` (or the installed script when asked to close stdin)."""
    command = [sys.executable, "-m", "strands_offload", *argv]
    if close_stdin:
        # The console script itself, with descriptor 0 closed as ``<&-`` does.
        entry = str(SCRIPT) if SCRIPT.exists() else None
        command = ["sh", "-c", 'exec "$@" <&-', "sh", *([entry] if entry else command[:3]), *argv]
    return subprocess.run(command, stdin=stdin, stdout=stdout, stderr=subprocess.PIPE, check=False, timeout=60)


def assert_one_line_error(done: Any, command: str, message: str) -> None:
    err = done.stderr.decode("utf-8")
    assert done.returncode == 1, err
    assert "Traceback" not in err and err.count("\n") == 1, err
    assert err.startswith(f"strands-offload {command}: error: {message}"), err


@posix_only
def test_closed_stdin_is_a_one_line_error() -> None:
    done = cli_process("count", "-", close_stdin=True)
    assert_one_line_error(done, "count", "cannot read standard input: it is closed")
    assert done.stdout == b""


@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="needs /dev/full")
def test_full_output_device_is_a_one_line_error(sample_file: Path) -> None:
    with open("/dev/full", "wb") as full:
        done = cli_process("grep", str(sample_file), "--pattern", "ERROR", stdout=full)
    assert_one_line_error(done, "grep", "cannot write output: No space left on device")


@posix_only
def test_closed_stdout_is_a_one_line_error(sample_file: Path) -> None:
    done = subprocess.run(
        ["sh", "-c", 'exec "$@" >&-', "sh", sys.executable, "-m", "strands_offload", "count", str(sample_file)],
        stderr=subprocess.PIPE,
        check=False,
        timeout=60,
    )
    assert_one_line_error(done, "count", "cannot write output: standard output is closed")


@posix_only
def test_reader_going_away_ends_quietly_with_sigpipe_status(tmp_path: Path) -> None:
    path = tmp_path / "many.txt"
    path.write_text("hit\n" * 200_000, encoding="utf-8")
    read_end, write_end = os.pipe()
    os.close(read_end)  # nobody will ever read: the first write fails with EPIPE
    try:
        done = subprocess.run(
            [sys.executable, "-m", "strands_offload", "grep", str(path), "--pattern", "hit"],
            stdout=write_end,
            stderr=subprocess.PIPE,
            check=False,
            timeout=60,
        )
    finally:
        os.close(write_end)
    assert (done.returncode, done.stderr) == (141, b"")


@pytest.mark.skipif(not os.path.exists("/dev/zero"), reason="needs /dev/zero")
@pytest.mark.parametrize("command", [["count"], ["preview", "--tokens", "1"], ["grep", "--pattern", "x"]])
def test_endless_input_stops_at_max_bytes(command: list[str]) -> None:
    done = cli_process(command[0], "/dev/zero", *command[1:], "--max-bytes", "1M")
    assert_one_line_error(
        done, command[0], "/dev/zero is larger than --max-bytes (1,048,576 bytes); pass a larger --max-bytes"
    )


def test_max_bytes_can_be_raised(tmp_path: Path) -> None:
    path = tmp_path / "two_kib.txt"
    path.write_bytes(b"word " * 400)
    refused = cli_process("count", str(path), "--max-bytes", "1K", "--encoding", "heuristic")
    assert_one_line_error(refused, "count", f"{path} is larger than --max-bytes (1,024 bytes)")
    allowed = cli_process("count", str(path), "--max-bytes", "2K", "--encoding", "heuristic")
    assert (allowed.returncode, allowed.stdout, allowed.stderr) == (0, b"500\n", b"")


def test_grep_range_past_the_end_in_a_process(tmp_path: Path) -> None:
    path = tmp_path / "three.txt"
    path.write_bytes(b"a\nb\nc\n")
    done = cli_process("grep", str(path), "--lines", "99:")
    assert_one_line_error(done, "grep", "line_range.start (99) is beyond content length (4 lines).")


def test_multi_line_messages_are_folded_onto_one_line(capsysbinary: pytest.CaptureFixture[bytes]) -> None:
    assert cli._fail("grep", "first\nsecond\r\nthird") == 1
    assert capsysbinary.readouterr().err == b"strands-offload grep: error: first second third\n"


def test_unexpected_errors_are_one_line_unless_verbose(
    monkeypatch: pytest.MonkeyPatch, sample_file: Path, capsysbinary: pytest.CaptureFixture[bytes]
) -> None:
    def broken(*args: Any, **kwargs: Any) -> Any:
        raise RuntimeError("native\nfailure")

    monkeypatch.setattr(cli, "count_tokens", broken)
    code, out, err = run(["count", str(sample_file)], capsysbinary)
    assert (code, out) == (1, "")
    assert (
        err == "strands-offload count: error: unexpected RuntimeError: native failure (run with -v for the traceback)\n"
    )
    with pytest.raises(RuntimeError):
        cli.main(["-v", "count", str(sample_file)])


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


def test_importing_the_package_and_cli_does_not_run_the_command() -> None:
    # A fresh interpreter whose argv asks for --help: if an import ran main(), the help text would
    # be printed and the process would exit before the marker line.
    code = "import strands_offload, strands_offload.cli; print('imported')"
    done = subprocess.run(
        [sys.executable, "-c", code, "--help"], capture_output=True, text=True, check=False, timeout=60
    )
    assert (done.returncode, done.stdout, done.stderr) == (0, "imported\n", "")


# A command started in the background without job control (a CI runner, ``nohup ... &``, cron)
# inherits SIGINT ignored, and a Python started that way keeps it ignored: it installs its
# KeyboardInterrupt handler only over the default. The product is right to honour that, so the
# children these tests interrupt start as from a terminal: SIGINT unblocked and back to the
# default, then the program is exec'ed (same process), whose Python installs its handler. An exec
# and not a ``preexec_fn``: nothing runs between fork and exec in a parent that has threads.
_SIGINT_AS_FROM_A_TERMINAL = (
    "import os, signal, sys\n"
    "signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})\n"
    "signal.signal(signal.SIGINT, signal.SIG_DFL)\n"
    "os.execv(sys.executable, [sys.executable, *sys.argv[1:]])\n"
)


def interruptible(*args: str) -> list[str]:
    """The argv of ``python *args``, started with SIGINT's default disposition whatever this process has."""
    return [sys.executable, "-c", _SIGINT_AS_FROM_A_TERMINAL, *args]


def _children(pid: int) -> set[int]:
    found = set()
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat", encoding="utf-8") as stat:
                    fields = stat.read().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if int(fields[1]) == pid:
                found.add(int(entry))
    return found


@pytest.mark.skipif(not os.path.isdir("/proc/self"), reason="finds the demo's child through /proc")
def test_ctrl_c_ends_the_demo_during_a_reference_grep_that_never_ends() -> None:
    # The reference greps with Python's re in a tool thread, which holds the interpreter lock
    # while '(.|.)*ZZZ' backtracks through each line: before, SIGINT waited for it forever.
    process = subprocess.Popen(
        interruptible("-m", "strands_offload", "-v", "demo", "--size-mb", "0.1", "--repeats", "1")
        + ["--pattern", "(.|.)*ZZZ"],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    lines: list[bytes] = []
    reached = threading.Event()

    def drain() -> None:  # read stderr beside the test, so no read can block it
        assert process.stderr is not None
        for line in process.stderr:
            lines.append(line)
            if b"running the reference plugin" in line:
                reached.set()

    reader = threading.Thread(target=drain, daemon=True)
    reader.start()
    children: set[int] = set()
    try:
        assert reached.wait(timeout=60), b"".join(lines)[-2000:]
        time.sleep(0.3)  # inside the reference's grep by now
        children = _children(process.pid)
        assert process.poll() is None
        sent = time.monotonic()
        process.send_signal(signal.SIGINT)
        try:
            code = process.wait(timeout=5)
        except subprocess.TimeoutExpired:
            code = None
        elapsed = time.monotonic() - sent
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
    reader.join(timeout=5)
    rest = b"".join(lines)
    assert code == 130 and elapsed < 2, (code, elapsed)
    assert rest.decode().splitlines()[-1] == "strands-offload demo: error: interrupted"
    assert b"Traceback" not in rest and process.stdout is not None and process.stdout.read() == b""
    deadline = time.monotonic() + 2
    while any(os.path.exists(f"/proc/{child}") for child in children) and time.monotonic() < deadline:
        time.sleep(0.05)
    # The child that ran the demo is gone too, not left grepping (a zombie awaiting init counts as gone).
    for child in children:
        try:
            with open(f"/proc/{child}/stat", encoding="utf-8") as stat:
                state = stat.read().rsplit(")", 1)[1].split()[0]
        except FileNotFoundError:
            continue
        if state != "Z":
            os.kill(child, signal.SIGKILL)
        assert state == "Z", f"child {child} still running"


def test_ctrl_c_ends_a_long_native_call_within_a_second() -> None:
    # zlib.compress at level 9 releases the interpreter lock and never checks for signals:
    # like an exact-token preview of a large file, it would hold KeyboardInterrupt back
    # for seconds. The watchdog reports the interrupt and ends the process instead.
    code = (
        "import os, zlib\n"
        "from strands_offload import _interrupt\n"
        "watchdog = _interrupt.install('prog: error: interrupted\\n')\n"
        "data = os.urandom(192 << 20)\n"
        "print('ready', flush=True)\n"
        "zlib.compress(data, 9)\n"
        "print('finished', flush=True)\n"
    )
    process = subprocess.Popen(
        interruptible("-c", code), stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE
    )
    try:
        assert process.stdout is not None
        assert process.stdout.readline() == b"ready\n"
        time.sleep(0.2)  # inside the compression by now
        sent = time.monotonic()
        process.send_signal(signal.SIGINT)
        out, err = process.communicate(timeout=30)
        elapsed = time.monotonic() - sent
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
    assert process.returncode == 130
    assert elapsed < 1.5, elapsed
    assert err.decode().splitlines()[-1] == "prog: error: interrupted"
    assert b"finished" not in out


#: The tests above that interrupt a child; .ci/run also runs them with SIGINT ignored in the parent.
INTERRUPT_TESTS = (
    "test_ctrl_c_ends_the_demo_during_a_reference_grep_that_never_ends",
    "test_ctrl_c_ends_a_long_native_call_within_a_second",
)

# Starts a Python with SIGINT ignored, as a shell starts a background job without job control.
_SIGINT_IGNORED = (
    "import os, signal, sys\n"
    "signal.signal(signal.SIGINT, signal.SIG_IGN)\n"
    "os.execv(sys.executable, [sys.executable, *sys.argv[1:]])\n"
)


@pytest.mark.single_python  # a pytest of its own, some seconds: one Python suffices
def test_the_interrupt_tests_pass_when_started_with_sigint_ignored_and_no_stdin() -> None:
    """Same verdict from a background job (SIGINT ignored, inherited) with no standard input."""
    probe = "import signal; print(signal.getsignal(signal.SIGINT) == signal.SIG_IGN)"
    seen = subprocess.run(
        [sys.executable, "-c", _SIGINT_IGNORED, "-c", probe],
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
    )
    assert seen.stdout.strip() == "True"  # what the pytest below starts with
    here = Path(__file__)
    done = subprocess.run(
        [sys.executable, "-c", _SIGINT_IGNORED, "-m", "pytest", "-q", "-p", "no:cacheprovider"]
        + [f"{here}::{name}" for name in INTERRUPT_TESTS],
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        cwd=here.parents[1],
        timeout=300,
    )
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-2000:]
    assert f"{len(INTERRUPT_TESTS)} passed" in done.stdout, done.stdout[-2000:]


def test_ci_runs_the_interrupt_tests_with_sigint_ignored() -> None:
    ci = (Path(__file__).parents[1] / ".ci" / "run").read_text(encoding="utf-8")
    leg = ci.split("(trap '' INT; python -m pytest", 1)[1].split(")", 1)[0]
    assert [f"tests/test_cli.py::{name}" for name in INTERRUPT_TESTS] == [word for word in leg.split() if "::" in word]
    assert leg.rstrip().endswith("< /dev/null")
    assert all(name in globals() for name in INTERRUPT_TESTS)


def test_the_watchdog_stands_down_when_main_returns(tmp_path: Path) -> None:
    # main() runs in this process here: it must give the wakeup descriptor back and end its thread.
    sample = tmp_path / "sample.txt"
    sample.write_text("alpha\nbeta\n")
    before = signal.set_wakeup_fd(-1)
    signal.set_wakeup_fd(before)
    for _ in range(3):
        assert cli.main(["count", str(sample)]) == 0
    assert signal.set_wakeup_fd(before) == before
    assert not [t for t in threading.enumerate() if t.name == "strands-offload-interrupt"]
