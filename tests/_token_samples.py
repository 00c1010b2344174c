"""Sample texts shared by the token and preview tests (generated and from the stdlib)."""

from __future__ import annotations

import sysconfig
from pathlib import Path

from hypothesis import HealthCheck, settings
from hypothesis import strategies as st

ENCODINGS = ["cl100k_base", "o200k_base"]

# Fragments that stress the pre-tokenizer: whitespace runs of every kind, contractions,
# numbers, marks, CJK, emoji (with joiners and modifiers), apostrophes, slashes, and
# surrogates (lone and paired) that only Python strings can hold.
FRAGMENTS = [
    " ",
    "  ",
    "   ",
    "\t",
    "\n",
    "\r\n",
    "\r",
    "\n\n",
    " \n",
    "\n ",
    "\u00a0",
    "\u3000",
    "\x0b",
    "\x0c",
    "\u2028",
    "\u0085",
    "'s",
    "'S",
    "'ll",
    "'LL",
    "'re",
    "'ve",
    "'m",
    "'d",
    "'t",
    "don't",
    "I'M",
    "0",
    "1",
    "12",
    "123",
    "1234",
    "12345",
    "\u0663",
    "\u00b2",
    "\u2167",
    "3.14",
    "1,000",
    "a",
    "Z",
    "hello",
    "World",
    "camelCase",
    "HTTPServer",
    "snake_case",
    "\u00e9",
    "e\u0301",
    "\u0301",
    "\u00df",
    "\u0130",
    "\u01c5",
    "\u02b0",
    "\u4e2d\u6587",
    "\u65e5\u672c\u8a9e",
    "\u3053\u3093\u306b\u3061\u306f",
    "\ud55c\uad6d\uc5b4",
    "\u3002",
    "\uff0c",
    "\U0001f389",
    "\U0001f468\u200d\U0001f469\u200d\U0001f467",
    "\U0001f44d\U0001f3fd",
    "\u2764\ufe0f",
    ".",
    ",",
    "!",
    "?",
    "...",
    "--",
    "->",
    "==",
    "{",
    "}",
    "[",
    "]",
    "(",
    ")",
    "/",
    "//",
    "\\",
    '"',
    "#",
    "@",
    "$",
    "%",
    "^",
    "&",
    "*",
    "_",
    "|",
    "~",
    "`",
    "<",
    ">",
    "+",
    "=",
    ";",
    ":",
    "\ud800",
    "\udc00",
    "\udbff",
    "\ud83d\ude00",
    "\ud83d",
    "\ude00",
]

ascii_text = st.text(alphabet=st.characters(max_codepoint=127), max_size=80)
texts = st.one_of(
    st.lists(st.sampled_from(FRAGMENTS), max_size=40).map("".join),
    st.text(max_size=80),
    ascii_text,
    st.lists(st.one_of(st.sampled_from(FRAGMENTS), st.text(max_size=6), ascii_text), max_size=30).map("".join),
)

HYP = settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def _stdlib_texts(limit_bytes: int = 1_500_000) -> list[tuple[str, str]]:
    """Real text files from the running Python's standard library (name, content)."""
    root = Path(sysconfig.get_paths()["stdlib"])
    candidates = sorted(root.glob("*.py"))[::7]
    candidates += sorted((root / "test" / "cjkencodings").glob("*-utf8.txt"))
    candidates += [root / "pydoc_data" / "topics.py"]
    out: list[tuple[str, str]] = []
    used = 0
    for path in candidates:
        try:
            text = path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError):
            continue
        text = text[:200_000]
        out.append((path.name, text))
        used += len(text)
        if used > limit_bytes:
            break
    assert out, "no standard library files found"
    return out


STDLIB = _stdlib_texts()
