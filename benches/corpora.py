"""Bench corpora shared by the token and grep benches: code, prose and logs.

Each builder is deterministic for a machine (same files, same seed) and returns
``size`` characters (about as many bytes: the texts are nearly all ASCII).
"""

from __future__ import annotations

import functools
import random
import sysconfig
from pathlib import Path

MB = 1_000_000
STDLIB = Path(sysconfig.get_paths()["stdlib"])


def fill(parts: list[str], size: int) -> str:
    """``parts`` joined, repeated and cut to ``size`` characters."""
    text = "".join(parts)
    return (text * (size // max(len(text), 1) + 1))[:size]


@functools.cache
def code(size: int = MB) -> str:
    """Distinct top-level standard-library modules until ~1 MB (not one file repeated), repeated to ``size``."""
    parts: list[str] = []
    total = 0
    for path in sorted(STDLIB.glob("*.py")):
        text = path.read_text(encoding="utf-8", errors="replace")
        parts.append(text)
        total += len(text)
        if total >= MB:
            break
    return fill(parts, size)


def source_files(paths: list[Path], size: int) -> str:
    """The UTF-8 files among ``paths``, in order, concatenated and cut to ``size`` bytes (never
    inside a character); files that do not decode are skipped."""
    parts: list[str] = []
    total = 0
    for path in paths:
        try:
            text = path.read_text(encoding="utf-8")
        except (UnicodeDecodeError, OSError):
            continue
        parts.append(text)
        total += len(text.encode("utf-8"))
        if total >= size:
            break
    return "".join(parts).encode("utf-8")[:size].decode("utf-8", "ignore")


@functools.cache
def stdlib_code(size: int) -> str:
    """The whole standard library's sources (subpackages too), concatenated and cut to ``size`` bytes."""
    return source_files(sorted(STDLIB.rglob("*.py")), size)


@functools.cache
def prose(size: int = MB) -> str:
    """The Python reference manual's topic help: English prose with some code samples."""
    from pydoc_data.topics import topics

    return fill(list(topics.values()), size)


@functools.cache
def logs(size: int = MB) -> str:
    """Synthetic service log lines (fixed seed); at least 12,000 distinct lines, more for large sizes."""
    rnd = random.Random(7)
    levels = ["INFO", "INFO", "INFO", "DEBUG", "WARNING", "ERROR"]
    lines = []
    for i in range(max(12_000, size // 140)):
        lines.append(
            f"2026-11-30T12:{rnd.randrange(60):02d}:{rnd.randrange(60):02d}.{rnd.randrange(1000):03d}Z "
            f"{rnd.choice(levels)} worker-{rnd.randrange(16)} req={rnd.getrandbits(64):016x} "
            f"GET /api/v1/items/{rnd.randrange(10**6)}?page={i % 50} status={rnd.choice([200, 201, 404, 500])} "
            f'latency_ms={rnd.random() * 250:.2f} user_agent="agent/{rnd.randrange(1, 9)}.{rnd.randrange(10)}"\n'
        )
    return fill(lines, size)


@functools.cache
def package_logs(size: int) -> str:
    """Real logs of this machine's package manager (dpkg, apt, update-alternatives), interleaved
    file by file as found, repeated and cut to ``size`` characters. Their shape is other than the
    synthetic service log's: short lines, package names and versions, no request ids."""
    parts: list[str] = []
    for name in ("dpkg.log", "apt/history.log", "apt/term.log", "alternatives.log"):
        path = Path("/var/log") / name
        if path.is_file():
            parts.append(path.read_text(encoding="utf-8", errors="replace"))
    if not parts:
        raise FileNotFoundError("no package-manager logs under /var/log")
    return fill(parts, size)


@functools.cache
def c_headers(size: int) -> str:
    """The C headers under /usr/include (libc's and the -dev packages'), in path order, cut to
    ``size`` bytes: source of another shape than Python's (macros, prototypes, long comments)."""
    return source_files(sorted(Path("/usr/include").rglob("*.h")), size)


def _generated_kind(kind: str, size: int) -> str:
    """``size`` bytes of UTF-8 (never cut inside a character) of a kind the package generates:
    the same text as ``strands-offload bench``'s rows, the same on every machine and Python."""
    from strands_offload.bench import corpus

    text = corpus.text(kind, size)  # characters: at least ``size`` bytes
    return text.encode("utf-8")[:size].decode("utf-8", "ignore")


@functools.cache
def base64_random(size: int = MB) -> str:
    """Base64 of random bytes on one line (a data URI, a JSON field): no word is a token."""
    return _generated_kind("base64-random", size)


@functools.cache
def cjk_mixed(size: int = MB) -> str:
    """Chinese, Japanese and Korean sentences mixed with ASCII punctuation, digits and numbers."""
    return _generated_kind("cjk-mixed", size)


@functools.cache
def emoji_chat(size: int = MB) -> str:
    """Chat lines heavy with emoji: skin tones, ZWJ families, flags, presentation selectors."""
    return _generated_kind("emoji-chat", size)


@functools.cache
def hexdump(size: int = MB) -> str:
    """``xxd``-style dump lines of mixed binary and text bytes."""
    return _generated_kind("hexdump", size)


@functools.cache
def minified_js(size: int = MB) -> str:
    """Generated JavaScript without whitespace, as a bundler writes it."""
    return _generated_kind("minified-js", size)


#: The generated kinds of the token benches, by name: 1 MB and 10 MB of each are counted.
GENERATED = {
    "base64-random": base64_random,
    "cjk-mixed": cjk_mixed,
    "emoji-chat": emoji_chat,
    "hexdump": hexdump,
    "minified-js": minified_js,
}
