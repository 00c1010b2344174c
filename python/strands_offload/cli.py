"""The ``strands-offload`` command: see how a tool output would be counted, cut and searched.

Sub-commands (each reads a file path, or standard input when the path is ``-``):

* ``count FILE [--encoding E]``: print the token count of the text.
* ``preview FILE --tokens N [--mode head|tail|head_tail] [--encoding E]``: print the
  preview that keeps ``N`` tokens of the text.
* ``grep FILE [--pattern P] [--lines S:E] [--context N] [--max-chars N]``: print what the
  retrieval tool would answer for that search or line range.

Input is read as bytes and decoded as UTF-8; bytes that are not valid UTF-8 become
U+FFFD. Line endings are kept as they are (a carriage return stays on its line, as in the retrieval
tool). Output is written as UTF-8.

``python -m strands_offload`` runs the same command.
"""

from __future__ import annotations

import argparse
import io
import logging
import sys
from collections.abc import Callable, Sequence
from pathlib import Path

from ._search import search_content
from ._tokens import count_tokens, preview

logger = logging.getLogger(__name__)

PROG = "strands-offload"
ENCODINGS = ("cl100k_base", "o200k_base", "heuristic")
PREVIEW_MODES = ("head", "tail", "head_tail")

__all__ = ["ENCODINGS", "PREVIEW_MODES", "build_parser", "main", "parse_line_range"]


class CliError(Exception):
    """A problem to report to the user as ``strands-offload <command>: error: ...``."""


# ---------------------------------------------------------------------------
# input and output


def read_text(path: str) -> str:
    """Read a file (or standard input for ``-``) as UTF-8 text, keeping line endings.

    Args:
        path: A file path, or ``-`` for standard input.

    Returns:
        The decoded text; invalid UTF-8 bytes become U+FFFD.

    Raises:
        CliError: If the file cannot be read.
    """
    if path == "-":
        stream = sys.stdin
        buffer = getattr(stream, "buffer", None)
        data = buffer.read() if buffer is not None else stream.read().encode("utf-8", "surrogateescape")
    else:
        try:
            data = Path(path).read_bytes()
        except OSError as exc:
            raise CliError(f"cannot read {path}: {exc.strerror or exc}") from exc
    logger.debug("path=<%s>, bytes=<%d> | read input", path, len(data))
    return data.decode("utf-8", errors="replace")


def write_text(text: str) -> None:
    """Write ``text`` and a final newline to standard output as UTF-8.

    Lone surrogates (which no UTF-8 file can hold, but a preview of a Python string
    might) are written as backslash escapes rather than failing.
    """
    data = (text + "\n").encode("utf-8", errors="backslashreplace")
    buffer = getattr(sys.stdout, "buffer", None)
    if buffer is not None:
        buffer.write(data)
        buffer.flush()
    else:
        sys.stdout.write(data.decode("utf-8"))
        sys.stdout.flush()


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
    text = read_text(args.file)
    return str(count_tokens(text, args.encoding))


def _omitted_marker(chars: int) -> str:
    return f"\n[... {chars:,} characters omitted ...]\n"


def _cmd_preview(args: argparse.Namespace) -> str:
    text = read_text(args.file)
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
    text = read_text(args.file)
    line_range: tuple[int, int] | None = None
    if args.lines is not None:
        start, end = args.lines
        line_range = (start, end if end is not None else text.count("\n") + 1)
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
    # Imported here: the demo loads the Strands SDK, which the other commands never need.
    from .demo.run import demo

    report = io.StringIO()
    if demo(args.size_mb, args.pattern, args.repeats, out=report) != 0:
        raise CliError(report.getvalue() + "the demo's conversation differs from the reference plugin's")
    return report.getvalue()


# ---------------------------------------------------------------------------
# parser


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
    grep.set_defaults(handler=_cmd_grep)

    demo = commands.add_parser(
        "demo",
        help="offload a large tool result in a scripted agent run and grep it back",
        description="Run an offline agent whose tool returns a large log; show what the model saw and the timings.",
    )
    demo.add_argument("--size-mb", type=float, default=5.0, help="size of the generated log (default: %(default)s)")
    demo.add_argument("--pattern", default="ERROR", help="what the scripted model greps for (default: %(default)s)")
    demo.add_argument("--repeats", type=int, default=3, help="runs per plugin for the timing (default: %(default)s)")
    demo.set_defaults(handler=_cmd_demo)

    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run the ``strands-offload`` command.

    Args:
        argv: Arguments without the program name; the process arguments when ``None``.

    Returns:
        The exit status: 0 on success, 1 on an error, 2 on bad usage.
    """
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.verbose:
        logging.basicConfig(level=logging.DEBUG, format="%(name)s: %(message)s")
    handler: Callable[[argparse.Namespace], str] = args.handler
    try:
        output = handler(args)
    except (CliError, ValueError) as exc:
        sys.stderr.write(f"{PROG} {args.command}: error: {exc}\n")
        return 1
    write_text(output)
    return 0
