"""The ``strands-offload`` command: see how a tool output would be counted, cut and searched.

Sub-commands (each reads a file path, or standard input when the path is ``-``):

* ``count FILE [--encoding E]``: print the token count of the text.
* ``preview FILE --tokens N [--mode head|tail|head_tail] [--encoding E]``: print the
  preview that keeps ``N`` tokens of the text.
* ``grep FILE [--pattern P] [--lines S:E] [--context N] [--max-chars N]``: print what the
  retrieval tool would answer for that search or line range.
* ``bench [--quick] [--out DIR]``: time every operation against strands-agents and write a report.

Input is read as bytes and decoded as UTF-8; bytes that are not valid UTF-8 become
U+FFFD. Line endings are kept as they are (a carriage return stays on its line, as in the retrieval
tool). Output is written as UTF-8.

Input is read in chunks and refused past ``--max-bytes`` (default 256 MiB), so an endless
stream (``/dev/zero``, a pipe that never closes) ends with an error instead of exhausting memory.
Every option that sizes work has a bound (``--max-bytes`` at most 4G; ``--tokens``, ``--context`` and
``--max-chars`` at most 4,294,967,296; ``demo --size-mb`` at most 256 and ``--repeats`` at most 20); a
value past it is refused on one line with status 2, before any work starts.
Every failure is one line on standard error (``strands-offload <command>: error: ...``) and exit
status 1; bad usage exits 2. Ctrl-C ends a command with status 130 within a second: a native call
that runs on (an exact-token preview of a large file) is cut short by a watchdog thread
(:mod:`strands_offload._interrupt`), and the demo runs its agents in a child process, so a search
that never ends in the reference plugin cannot keep it running. A reader
that goes away (``... | head``) ends the command quietly with status 141, as a process killed by
``SIGPIPE`` would.

``python -m strands_offload`` runs the same command.
"""

from __future__ import annotations

import argparse
import errno
import io
import logging
import os
import re
import sys
from collections.abc import Callable, Sequence
from typing import Any, BinaryIO, TextIO

from . import _interrupt
from ._search import search_content
from ._tokens import count_tokens, preview

logger = logging.getLogger(__name__)

PROG = "strands-offload"
ENCODINGS = ("cl100k_base", "o200k_base", "heuristic")
PREVIEW_MODES = ("head", "tail", "head_tail")
DEFAULT_MAX_BYTES = 256 * 1024 * 1024
"""Default of ``--max-bytes``: the most input a command reads before giving up."""
MAX_INPUT_BYTES = 4 * 1024**3
"""The largest ``--max-bytes`` accepted (4 GiB); also bounds ``--tokens``, ``--context`` and ``--max-chars``."""
DEMO_MAX_SIZE_MB = 256.0
"""The largest log ``demo --size-mb`` builds."""
DEMO_MAX_REPEATS = 20
"""The most runs per plugin ``demo --repeats`` asks for."""

_CHUNK_BYTES = 1024 * 1024
_UNITS = {"": 1, "k": 1024, "m": 1024**2, "g": 1024**3}
_BYTE_SIZE = re.compile(r"(\d+)\s*(?:([kmg])(?:i?b)?|b)?", re.IGNORECASE | re.ASCII)
# Exit status of a process killed by SIGPIPE, as shells report it.
_EXIT_BROKEN_PIPE = 128 + 13

__all__ = [
    "DEFAULT_MAX_BYTES",
    "DEMO_MAX_REPEATS",
    "DEMO_MAX_SIZE_MB",
    "ENCODINGS",
    "MAX_INPUT_BYTES",
    "PREVIEW_MODES",
    "build_parser",
    "main",
    "parse_byte_size",
    "parse_line_range",
    "read_text",
]


class CliError(Exception):
    """A problem to report to the user as ``strands-offload <command>: error: ...``."""


class UsageError(CliError):
    """An option past its bound: reported on one line like any error, with the bad-usage status 2."""


# Every option that sizes a command's work, with the largest value it takes and that value as the
# user would write it. Checked after parsing so the refusal is one line, like the --max-bytes cap.
_LIMITS: dict[str, tuple[str, float, str]] = {
    "max_bytes": ("--max-bytes", MAX_INPUT_BYTES, "4G"),
    "tokens": ("--tokens", MAX_INPUT_BYTES, f"{MAX_INPUT_BYTES:,}"),
    "context": ("--context", MAX_INPUT_BYTES, f"{MAX_INPUT_BYTES:,}"),
    "max_chars": ("--max-chars", MAX_INPUT_BYTES, f"{MAX_INPUT_BYTES:,}"),
    "size_mb": ("--size-mb", DEMO_MAX_SIZE_MB, f"{DEMO_MAX_SIZE_MB:g}"),
    "repeats": ("--repeats", DEMO_MAX_REPEATS, f"{DEMO_MAX_REPEATS}"),
}


def check_limits(args: argparse.Namespace) -> None:
    """Refuse any work-sizing option of ``args`` that is past its bound.

    Raises:
        UsageError: Naming the first option past its bound, the bound and the value given.
    """
    for dest, (option, most, most_text) in _LIMITS.items():
        value = getattr(args, dest, None)
        if isinstance(value, (int, float)) and value > most:
            shown = f"{value:,}" if isinstance(value, int) else f"{value:g}"
            raise UsageError(f"{option} is at most {most_text} (got {shown})")


# ---------------------------------------------------------------------------
# input and output


def read_text(path: str, max_bytes: int = DEFAULT_MAX_BYTES) -> str:
    """Read a file (or standard input for ``-``) as UTF-8 text, keeping line endings.

    Args:
        path: A file path, or ``-`` for standard input.
        max_bytes: The most bytes to accept; more is an error, detected after reading one byte
            past the limit (so an endless stream costs at most this much memory).

    Returns:
        The decoded text; invalid UTF-8 bytes become U+FFFD.

    Raises:
        CliError: If the input cannot be read (missing file, closed standard input, ...) or is
            larger than ``max_bytes``.
    """
    if path == "-":
        name = "standard input"
        # With descriptor 0 closed (``<&-``) Python sets sys.stdin to None.
        stream = sys.stdin
        if stream is None:
            raise CliError("cannot read standard input: it is closed")
        try:
            data = _read_limited(getattr(stream, "buffer", None) or stream, max_bytes, name)
        except OSError as exc:
            raise CliError(f"cannot read {name}: {exc.strerror or exc}") from exc
    else:
        try:
            with open(path, "rb") as handle:
                data = _read_limited(handle, max_bytes, path)
        except OSError as exc:
            raise CliError(f"cannot read {path}: {exc.strerror or exc}") from exc
    logger.debug("path=<%s>, bytes=<%d> | read input", path, len(data))
    return data.decode("utf-8", errors="replace")


def _read_limited(stream: BinaryIO | TextIO, max_bytes: int, name: str) -> bytearray:
    """Read ``stream`` to its end in chunks, failing as soon as it passes ``max_bytes``."""
    data = bytearray()
    while True:
        chunk: bytes | str = stream.read(min(_CHUNK_BYTES, max_bytes + 1 - len(data)))
        if not chunk:
            return data
        # A text-only stream (no binary buffer) gives str; its undecodable bytes come back as they were.
        data += chunk.encode("utf-8", "surrogateescape") if isinstance(chunk, str) else chunk
        if len(data) > max_bytes:
            raise CliError(
                f"{name} is larger than --max-bytes ({max_bytes:,} bytes); pass a larger --max-bytes to read it"
            )


def write_text(text: str) -> None:
    """Write ``text`` and a final newline to standard output as UTF-8.

    Lone surrogates (which no UTF-8 file can hold, but a preview of a Python string
    might) are written as backslash escapes rather than failing.

    Raises:
        CliError: If standard output is closed.
        OSError: If writing fails (full disk, reader gone).
    """
    stream = sys.stdout
    if stream is None:
        raise CliError("cannot write output: standard output is closed")
    data = (text + "\n").encode("utf-8", errors="backslashreplace")
    buffer = getattr(stream, "buffer", None)
    if buffer is not None:
        buffer.write(data)
        buffer.flush()
    else:
        stream.write(data.decode("utf-8"))
        stream.flush()


def parse_line_range(value: str) -> tuple[int, int | None]:
    """Parse ``--lines``: ``S:E`` (inclusive, 1-based), ``S`` (one line) or ``S:`` (to the end).

    Args:
        value: The option's text.

    Returns:
        ``(start, end)``; ``end`` is ``None`` for "to the last line".

    Raises:
        argparse.ArgumentTypeError: If the text is not of those forms.
    """
    start_text, sep, end_text = value.partition(":")
    try:
        start = int(start_text)
        if not sep:
            return start, start
        return start, (int(end_text) if end_text.strip() else None)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected START:END, START or START:, got {value!r}") from None


def parse_byte_size(value: str) -> int:
    """Parse ``--max-bytes``: a whole number of bytes, optionally with a K, M or G (binary) suffix.

    Args:
        value: The option's text, for example ``1048576``, ``512K``, ``256M``, ``2GiB``.

    Returns:
        The size in bytes.

    Raises:
        argparse.ArgumentTypeError: If the text is not of that form or is negative.
    """
    match = _BYTE_SIZE.fullmatch(value.strip())
    if match is None:
        raise argparse.ArgumentTypeError(f"expected a number of bytes such as 1048576 or 256M, got {value!r}")
    return int(match[1]) * _UNITS[(match[2] or "").lower()]


def _positive_int(value: str) -> int:
    number = _non_negative(value)
    if number == 0:
        raise argparse.ArgumentTypeError("expected a number >= 1, got 0")
    return number


def _positive_float(value: str) -> float:
    try:
        number = float(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number, got {value!r}") from None
    if not number > 0 or number == float("inf"):
        raise argparse.ArgumentTypeError(f"expected a finite number > 0, got {value!r}")
    return number


def _non_negative(value: str) -> int:
    try:
        number = int(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number, got {value!r}") from None
    if number < 0:
        raise argparse.ArgumentTypeError(f"expected a number >= 0, got {number}")
    return number


# ---------------------------------------------------------------------------
# sub-commands


def _cmd_count(args: argparse.Namespace) -> str:
    text = read_text(args.file, args.max_bytes)
    return str(count_tokens(text, args.encoding))


def _omitted_marker(chars: int) -> str:
    return f"\n[... {chars:,} characters omitted ...]\n"


def _cmd_preview(args: argparse.Namespace) -> str:
    text = read_text(args.file, args.max_bytes)
    cut = preview(text, args.tokens, mode=args.mode, encoding=args.encoding)
    logger.debug(
        "mode=<%s>, head_end=<%d>, tail_start=<%d>, total=<%d> | preview cut",
        args.mode,
        cut.head_end,
        cut.tail_start,
        cut.total_chars,
    )
    head, tail = str(cut.head), str(cut.tail)
    if not cut.truncated:
        return text
    if args.mode == "head_tail":
        return head + _omitted_marker(int(cut.elided_chars)) + tail
    return head + tail


def _cmd_grep(args: argparse.Namespace) -> str:
    text = read_text(args.file, args.max_bytes)
    line_range: tuple[int, int] | None = None
    if args.lines is not None:
        start, end = args.lines
        if end is None:
            # "S:" runs to the last line; a start past it must get the reference's
            # "beyond content length" message, not "start must be <= end".
            end = max(start, text.count("\n") + 1)
        line_range = (start, end)
    return str(
        search_content(
            text,
            pattern=args.pattern,
            line_range=line_range,
            context_lines=args.context,
            max_chars=args.max_chars,
        )
    )


def _cmd_demo(args: argparse.Namespace) -> str:
    status, report = _demo_in_child(args.size_mb, args.pattern, args.repeats, args.verbose)
    if status != 0:
        write_text(report)
        raise CliError("the demo's conversation differs from the reference plugin's")
    return report


def _demo_in_child(size_mb: float, pattern: str, repeats: int, verbose: bool) -> tuple[int, str]:
    """Run the demo in a child process and return its status and report.

    The agents run their tools in worker threads; a reference grep in Python's ``re`` holds the
    interpreter lock for as long as it backtracks, so no signal handler of this process could run.
    Here the parent only waits, so Ctrl-C ends it at once and the child is killed.

    Raises:
        CliError: If the child fails or ends without a report.
        KeyboardInterrupt: On Ctrl-C (the child is killed first).
    """
    import multiprocessing
    import signal

    context = multiprocessing.get_context("spawn")  # a fork would copy native thread pools' locks
    receive, send = context.Pipe(duplex=False)
    process = context.Process(
        target=_demo_child,
        args=(send, size_mb, pattern, repeats, verbose),
        name="strands-offload-demo",
        daemon=True,
    )
    # A child started with SIGINT ignored keeps it ignored (Python installs its handler only over the
    # default), so Ctrl-C at a terminal, which signals the whole group, leaves it to the parent.
    try:
        previous = signal.signal(signal.SIGINT, signal.SIG_IGN)
    except ValueError:  # not the main thread: nothing to restore
        previous = None
    try:
        process.start()
    finally:
        if previous is not None:
            signal.signal(signal.SIGINT, previous)
    send.close()
    try:
        while not receive.poll(0.1):
            if not process.is_alive() and not receive.poll(0):
                raise CliError(f"the demo's process ended without a report (exit status {process.exitcode})")
        try:
            outcome = receive.recv()
        except EOFError:
            raise CliError(f"the demo's process ended without a report (exit status {process.exitcode})") from None
    finally:
        if process.is_alive():
            process.kill()
        process.join()
        receive.close()
    if outcome[0] == "done":
        return int(outcome[1]), str(outcome[2])
    _kind, name, message, trace = outcome
    if name == "MemoryError":
        raise CliError("out of memory (try a smaller --size-mb)")
    if verbose:
        sys.stderr.write(trace)
        return_hint = ""
    else:
        return_hint = " (run with -v for the traceback)"
    raise CliError(f"unexpected {name}: {message}{return_hint}")


def _demo_child(send: object, size_mb: float, pattern: str, repeats: int, verbose: bool) -> None:
    """The demo's child process: run both scenes and send back ``("done", status, report)`` or the failure."""
    import signal
    import traceback

    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the parent decides when the demo ends
    connection: Any = send
    if verbose:
        logging.basicConfig(level=logging.DEBUG, format="%(name)s: %(message)s")
    try:
        # Imported here: the demo loads the Strands SDK, which the other commands never need.
        from .demo.run import demo

        report = io.StringIO()
        status = demo(size_mb, pattern, repeats, out=report)
        connection.send(("done", status, report.getvalue()))
    except BaseException as exc:  # noqa: BLE001 - everything goes back to the parent to report
        connection.send(("failed", type(exc).__name__, str(exc), traceback.format_exc()))
    finally:
        connection.close()


def _cmd_bench(args: argparse.Namespace) -> str:
    # Imported here: the benchmarks load the Strands SDK, tiktoken and (for the chart) matplotlib.
    from .bench.report import ReportWriteError, run_bench

    try:
        _report, text = run_bench(quick=args.quick, out=args.out, progress=not args.no_progress)
    except ReportWriteError as exc:
        raise CliError(str(exc)) from exc
    return text


# ---------------------------------------------------------------------------
# parser


def _add_max_bytes(command: argparse.ArgumentParser) -> None:
    command.add_argument(
        "--max-bytes",
        type=parse_byte_size,
        default=DEFAULT_MAX_BYTES,
        metavar="N",
        help="refuse input larger than N bytes (suffixes K, M, G; at most 4G); default: 256M",
    )


def build_parser() -> argparse.ArgumentParser:
    """Build the argument parser of the ``strands-offload`` command.

    Returns:
        The parser; each sub-command stores its handler in ``handler``.
    """
    parser = argparse.ArgumentParser(
        prog=PROG,
        description="See how a tool output would be counted, cut and searched by strands-offload.",
    )
    parser.add_argument("-v", "--verbose", action="store_true", help="log what the command does to stderr")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)

    count = commands.add_parser("count", help="print the token count of a file", description="Print the token count.")
    count.add_argument("file", metavar="FILE", help="file to read, or - for standard input")
    count.add_argument(
        "--encoding",
        choices=ENCODINGS,
        default="cl100k_base",
        help="exact BPE encoding, or heuristic (ceil(characters / 4)); default: %(default)s",
    )
    _add_max_bytes(count)
    count.set_defaults(handler=_cmd_count)

    preview = commands.add_parser(
        "preview",
        help="print the preview that keeps N tokens",
        description="Print the preview of a text cut to a token budget.",
    )
    preview.add_argument("file", metavar="FILE", help="file to read, or - for standard input")
    preview.add_argument("--tokens", type=_non_negative, required=True, metavar="N", help="token budget")
    preview.add_argument(
        "--mode", choices=PREVIEW_MODES, default="head", help="which part to keep; default: %(default)s"
    )
    preview.add_argument(
        "--encoding",
        choices=ENCODINGS,
        default="heuristic",
        help="heuristic cuts at N * 4 characters (as Strands does); BPE encodings cut on token boundaries; "
        "default: %(default)s",
    )
    _add_max_bytes(preview)
    preview.set_defaults(handler=_cmd_preview)

    grep = commands.add_parser(
        "grep",
        help="search a file, or list a range of its lines, as the retrieval tool would",
        description="Search a text by pattern and/or list a line range, in the retrieval tool's format.",
    )
    grep.add_argument("file", metavar="FILE", help="file to read, or - for standard input")
    grep.add_argument("--pattern", "-p", metavar="P", help="Python regular expression or keyword to search for")
    grep.add_argument(
        "--lines", type=parse_line_range, metavar="S:E", help="1-based inclusive line range (S:E, S or S:)"
    )
    grep.add_argument(
        "--context", type=_non_negative, default=5, metavar="N", help="lines around each match; default: %(default)s"
    )
    grep.add_argument(
        "--max-chars",
        type=_non_negative,
        default=10_000,
        metavar="N",
        help="character budget of the answer; default: %(default)s",
    )
    _add_max_bytes(grep)
    grep.set_defaults(handler=_cmd_grep)

    demo = commands.add_parser(
        "demo",
        help="offload a large tool result in a scripted agent run and grep it back",
        description="Run an offline agent whose tool returns a large log; show what the model saw and the timings.",
    )
    demo.add_argument(
        "--size-mb",
        type=_positive_float,
        default=5.0,
        help=f"size of the generated log, at most {DEMO_MAX_SIZE_MB:g} (default: %(default)s)",
    )
    demo.add_argument("--pattern", default="ERROR", help="what the scripted model greps for (default: %(default)s)")
    demo.add_argument(
        "--repeats",
        type=_positive_int,
        default=3,
        help=f"runs per plugin for the timing, at most {DEMO_MAX_REPEATS} (default: %(default)s)",
    )
    demo.set_defaults(handler=_cmd_demo)

    bench = commands.add_parser(
        "bench",
        help="time every operation side by side with strands-agents and write a report",
        description="Run every benchmark against the reference in one process; write a table, JSON and a chart.",
    )
    bench.add_argument("--quick", action="store_true", help="inputs up to 1 MB and fewer rounds (under a minute)")
    bench.add_argument(
        "--out", default="strands-offload-bench", metavar="DIR", help="output folder (default: ./%(default)s)"
    )
    bench.add_argument("--no-progress", action="store_true", help="no progress bar on standard error")
    bench.set_defaults(handler=_cmd_bench)

    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run the ``strands-offload`` command.

    Args:
        argv: Arguments without the program name; the process arguments when ``None``.

    Returns:
        The exit status: 0 on success, 1 on an error, 2 on bad usage, 130 when interrupted,
        141 when the reader of standard output went away.
    """
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.verbose:
        logging.basicConfig(level=logging.DEBUG, format="%(name)s: %(message)s")
    watchdog = _interrupt.install(f"{PROG} {args.command}: error: interrupted\n")
    try:
        return _run(args, watchdog)
    finally:
        if watchdog is not None:
            watchdog.close()


def _run(args: argparse.Namespace, watchdog: _interrupt.Watchdog | None) -> int:
    """Run the parsed command; see :func:`main`."""
    handler: Callable[[argparse.Namespace], str] = args.handler
    try:
        check_limits(args)
        output = handler(args)
    except UsageError as exc:
        return _fail(args.command, str(exc), status=2)
    except (CliError, ValueError) as exc:
        return _fail(args.command, str(exc))
    except KeyboardInterrupt:
        if watchdog is not None:
            watchdog.handled()
        return _fail(args.command, "interrupted", status=_interrupt.INTERRUPTED_STATUS)
    except MemoryError:
        return _fail(args.command, "out of memory (try a smaller --max-bytes)")
    except Exception as exc:
        if args.verbose:
            raise
        return _fail(args.command, f"unexpected {type(exc).__name__}: {exc} (run with -v for the traceback)")
    try:
        write_text(output)
    except CliError as exc:
        return _fail(args.command, str(exc))
    except OSError as exc:
        _silence_stdout()
        if exc.errno == errno.EPIPE:
            return _EXIT_BROKEN_PIPE
        return _fail(args.command, f"cannot write output: {exc.strerror or exc}")
    return 0


def _fail(command: str, message: str, status: int = 1) -> int:
    """Report ``message`` as one line on standard error (when there is one) and return ``status``."""
    line = " ".join(message.splitlines())
    stream = sys.stderr
    if stream is not None:
        try:
            stream.write(f"{PROG} {command}: error: {line}\n")
            stream.flush()
        except (OSError, ValueError):  # stderr full or closed: the status still tells
            pass
    return status


def _silence_stdout() -> None:
    """Point standard output at the null device so the interpreter's final flush cannot fail again."""
    stream = sys.stdout
    if stream is None:
        return
    try:
        null = os.open(os.devnull, os.O_WRONLY)
        os.dup2(null, stream.fileno())
        os.close(null)
    except (OSError, ValueError, io.UnsupportedOperation):
        pass  # not a real descriptor (captured in tests): nothing will flush it at exit
