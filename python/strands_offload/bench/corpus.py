"""Benchmark inputs: real text found on this machine, and generated text where none is installed.

Kinds (each cut or repeated to the asked size, in characters):

* ``code``: the Python standard library's own ``.py`` sources;
* ``prose``: documentation under ``/usr/share/doc`` and licences under ``/usr/share/common-licenses``
  (compressed files are read too), falling back to the standard library's docstrings;
* ``log``: a generated service log (the demo's), with an error line every few thousand lines;
* ``json``: a generated API dump (records with nested objects, numbers, accented and CJK names);
* ``cjk``: Japanese and Chinese sentences made of common characters, with ASCII punctuation;
* ``base64``: the base64 text of an installed binary (the Python interpreter).

Generated kinds, the same on every machine and every Python (drawn from a SHAKE-256 stream of a
fixed seed, no ``random`` and no Unicode tables):

* ``base64-random``: base64 of random bytes on one line, as a data URI or a JSON field holds it;
* ``cjk-mixed``: Chinese, Japanese and Korean sentences with ASCII punctuation, digits and numbers;
* ``emoji-chat``: chat lines heavy with emoji (skin tones, ZWJ families, flags, ``U+FE0F``);
* ``hexdump``: ``xxd``-style dump lines of mixed binary and text bytes;
* ``minified-js``: generated JavaScript with no whitespace, as a bundler writes it.

Everything is deterministic for a machine: same files, same seed, same text.
"""

from __future__ import annotations

import base64
import functools
import gzip
import hashlib
import random
import sys
import sysconfig
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

__all__ = ["KINDS", "SIZES", "json_document", "text"]

KINDS = (
    "code",
    "prose",
    "log",
    "json",
    "cjk",
    "base64",
    "base64-random",
    "cjk-mixed",
    "emoji-chat",
    "hexdump",
    "minified-js",
)
#: Sizes in characters, by name.
SIZES = {"10KB": 10_000, "100KB": 100_000, "1MB": 1_000_000, "10MB": 10_000_000}

_DOC_ROOTS = (Path("/usr/share/doc"), Path("/usr/share/common-licenses"))
_CJK = "日本語の文章と中文句子是用常见的汉字写成的。東京大阪数据处理系统服务器错误请求时间用户订单状态完了"


def _files(root: Path, suffixes: tuple[str, ...]) -> Iterator[Path]:
    if not root.is_dir():
        return
    for path in sorted(root.rglob("*")):
        if path.is_file() and not path.is_symlink() and (not suffixes or path.name.endswith(suffixes)):
            yield path


def _gather(paths: Iterator[Path], size: int) -> str:
    parts: list[str] = []
    total = 0
    for path in paths:
        try:
            data = gzip.decompress(path.read_bytes()) if path.name.endswith(".gz") else path.read_bytes()
        except (OSError, EOFError, gzip.BadGzipFile):
            continue
        chunk = data.decode("utf-8", errors="replace")
        parts.append(chunk)
        total += len(chunk)
        if total >= size:
            break
    return "\n".join(parts)


def _fill(seed_text: str, size: int) -> str:
    """``seed_text`` repeated and cut to exactly ``size`` characters (a cut on a line end when possible)."""
    if not seed_text:
        seed_text = "empty\n"
    repeated = seed_text * (size // len(seed_text) + 1)
    return repeated[:size]


@functools.cache
def _code(size: int) -> str:
    stdlib = Path(sysconfig.get_paths()["stdlib"])
    return _fill(_gather(_files(stdlib, (".py",)), size), size)


@functools.cache
def _prose(size: int) -> str:
    found = "".join(_gather(_files(root, ()), size) for root in _DOC_ROOTS)
    if len(found) < 10_000:  # a minimal system without docs: the standard library's docstrings
        import argparse
        import json
        import logging

        found = "\n\n".join(module.__doc__ or "" for module in (argparse, json, logging, random, gzip))
    return _fill(found, size)


@functools.cache
def _log(size: int) -> str:
    # Imported here: the demo module loads the Strands SDK.
    from ..demo.scenario import make_service_log

    return _fill(make_service_log(size + 200, error_every=997), size)


def _record(rng: random.Random, i: int) -> dict[str, Any]:
    return {
        "id": i,
        "uuid": f"{rng.getrandbits(64):016x}",
        "name": rng.choice(["Zoë Martin", "José Álvarez", "佐藤 花子", "Li Wei 李伟", "Oskar Öberg", "Ada Byron"]),
        "email": f"user{i}@example.com",
        "active": rng.random() < 0.7,
        "balance": round(rng.uniform(-1e4, 1e6), 2),
        "score": rng.random(),
        "tags": rng.sample(["alpha", "beta", "gamma", "délai", "急ぎ", "vip"], rng.randint(0, 3)),
        "address": {
            "city": rng.choice(["Paris", "Zürich", "東京", "São Paulo"]),
            "zip": f"{rng.randint(0, 99999):05d}",
        },
        "orders": [
            {"order": rng.getrandbits(32), "status": rng.choice(["pending", "shipped", "failed"]), "total": i * 0.25}
            for _ in range(rng.randint(0, 3))
        ],
        "note": None if i % 4 else 'line one\nline "two"\tend',
    }


@functools.cache
def json_document(size: int) -> dict[str, Any]:
    """An API-like document whose compact JSON text is about ``size`` characters."""
    rng = random.Random(size)
    records: list[dict[str, Any]] = []
    total = 0
    while total < size:
        record = _record(rng, len(records))
        records.append(record)
        total += 330  # about the compact length of one record
    return {"items": records, "count": len(records), "next": None}


@functools.cache
def _json(size: int) -> str:
    import json

    return _fill(json.dumps(json_document(size), indent=2, ensure_ascii=False), size)


@functools.cache
def _cjk(size: int) -> str:
    rng = random.Random(11)
    lines = []
    for number in range(2_000):
        sentence = "".join(rng.choice(_CJK) for _ in range(rng.randint(8, 40)))
        lines.append(f"{number:04d}: {sentence}。")
    return _fill("\n".join(lines), size)


@functools.cache
def _base64(size: int) -> str:
    binary = Path(sys.executable).resolve()
    data = binary.read_bytes()[:size] if binary.is_file() else random.Random(5).randbytes(size)
    encoded = base64.encodebytes(data).decode("ascii")  # 76-character lines, as MIME writes them
    return _fill(encoded, size)


# ---------------------------------------------------------------------------- generated kinds


class _Draws:
    """Deterministic draws from a SHAKE-256 stream (the same on every Python and machine)."""

    def __init__(self, seed: str, size: int) -> None:
        # About the bytes the builders take per character of output, read in blocks as needed.
        self._seed = seed.encode("ascii")
        self._block = max(4096, size)
        self._counter = 0
        self._buffer = b""
        self._at = 0

    def bytes(self, n: int) -> bytes:
        while self._at + n > len(self._buffer):
            stream = hashlib.shake_256(self._seed + self._counter.to_bytes(8, "little"))
            self._buffer = self._buffer[self._at :] + stream.digest(self._block)
            self._counter += 1
            self._at = 0
        out = self._buffer[self._at : self._at + n]
        self._at += n
        return out

    def below(self, n: int) -> int:
        """An integer in ``0..n`` (``n`` at most 2**32; the tiny modulo bias does not matter here)."""
        return int.from_bytes(self.bytes(4), "little") % n

    def pick(self, items: str | list[str] | tuple[str, ...]) -> str:
        return items[self.below(len(items))]

    def chance(self, percent: int) -> bool:
        return self.below(100) < percent


def _generated(build: Callable[[_Draws], str], seed: str, size: int) -> str:
    """Pieces from ``build`` until ``size`` characters, cut to exactly ``size``."""
    draws = _Draws(seed, size)
    parts: list[str] = []
    total = 0
    while total < size:
        piece = build(draws)
        parts.append(piece)
        total += len(piece)
    return "".join(parts)[:size]


@functools.cache
def _base64_random(size: int) -> str:
    data = hashlib.shake_256(b"strands-offload base64-random").digest(size * 3 // 4 + 3)
    return base64.b64encode(data).decode("ascii")[:size]


# Common Chinese characters, then kana and Hangul syllables drawn from their blocks by code point.
_HANZI = (
    "的一是不了人我在有他这为之大来以个中上们到说国和地也子时道出而要于就下得可你年生自会那后能对着事其里所去行"
    "过家十用发天如然作方成者多日都三小军二无同么经法当起与好看学进种将还分此心前面又定见只主没公从知本明因"
    "数据处理系统服务器错误请求时间用户订单状态完成配置文件网络连接超时重试返回结果查询参数接口版本更新日志记录"
    "東京大阪語文章句子常见汉字写開発環境設定確認変更削除追加検索表示機能問題解決報告"
)
_KANA = [chr(c) for c in range(0x3041, 0x3094)] + [chr(c) for c in range(0x30A1, 0x30F7)]
_HANGUL = [chr(0xAC00 + 28 * k) for k in range(0, 11172 // 28, 7)]  # syllables without a final consonant


def _cjk_mixed_line(d: _Draws) -> str:
    words: list[str] = []
    for _ in range(3 + d.below(6)):
        script = d.below(10)
        length = 1 + d.below(6)
        if script < 6:
            words.append("".join(d.pick(_HANZI) for _ in range(length)))
        elif script < 9:
            words.append("".join(d.pick(_KANA) for _ in range(length)))
        else:
            words.append("".join(d.pick(_HANGUL) for _ in range(length)))
        extra = d.below(12)
        if extra == 0:
            words.append(f"{d.below(10_000)}")
        elif extra == 1:
            words.append(f"({d.below(100)}.{d.below(100):02d}%)")
        elif extra == 2:
            words.append(f"2026-{1 + d.below(12):02d}-{1 + d.below(28):02d}")
        elif extra == 3:
            words.append(f"[{d.below(1000)}]")
        elif extra == 4:
            words.append(f"ID={d.below(10**6)}")
        elif extra == 5:
            words.append(" ")
        words.append(d.pick(",,,.:;!?/-#&*\"'"))
    return "".join(words) + "\n"


# Emoji by code point (no Unicode tables needed): faces, hands, hearts, objects, with their modifiers.
_EMOJI = [chr(c) for c in (*range(0x1F600, 0x1F64F), *range(0x1F440, 0x1F4FC, 3), *range(0x1F90C, 0x1F9FF, 5))]
_SKIN = [chr(c) for c in range(0x1F3FB, 0x1F400)]
_HANDS = [chr(c) for c in (0x1F44D, 0x1F44B, 0x1F44F, 0x1F64C, 0x1F64F, 0x1F91D, 0x270C)]
_SEQUENCES = [
    "\u2764\ufe0f",  # red heart with its emoji presentation selector
    "\u2728",
    "\u2705",
    "\U0001f468\u200d\U0001f469\u200d\U0001f467",  # family: ZWJ sequence
    "\U0001f469\u200d\U0001f4bb",
    "\U0001f3f3\ufe0f\u200d\U0001f308",
    "\U0001f1ef\U0001f1f5",  # flags: regional indicator pairs
    "\U0001f1fa\U0001f1f8",
    "\U0001f1e9\U0001f1ea",
    "\u263a\ufe0f",
]
_CHAT_WORDS = (
    "lol omg yes no maybe see you soon tonight can't wait love this thanks so much that's amazing haha "
    "where are we meeting I'm on my way running late again good morning happy birthday congrats"
).split()
_CHAT_NAMES = ("alex", "sam", "maya", "jo", "kenji", "lina", "noah")


def _emoji(d: _Draws) -> str:
    kind = d.below(10)
    if kind < 5:
        return d.pick(_EMOJI)
    if kind < 7:
        return d.pick(_HANDS) + d.pick(_SKIN)
    return d.pick(_SEQUENCES)


def _emoji_chat_line(d: _Draws) -> str:
    parts: list[str] = [f"[{d.below(24):02d}:{d.below(60):02d}] {d.pick(_CHAT_NAMES)}: "]
    for _ in range(2 + d.below(8)):
        if d.chance(55):
            parts.append(d.pick(_CHAT_WORDS) + d.pick(("", "", " ", "!", "!!", "?", "...")))
        else:
            parts.append("".join(_emoji(d) for _ in range(1 + d.below(4))))
        parts.append(" " if d.chance(80) else "")
    return "".join(parts).rstrip(" ") + "\n"


def _hexdump_block(d: _Draws) -> str:
    """16 lines of ``xxd`` output over bytes that are sometimes text, sometimes binary."""
    offset = d.below(1 << 24) & ~0xFF
    if d.chance(50):
        data = bytes(32 + d.below(95) for _ in range(256))
    else:
        data = d.bytes(256)
    lines = []
    for row in range(16):
        chunk = data[row * 16 : row * 16 + 16]
        groups = " ".join(chunk[i : i + 2].hex() for i in range(0, 16, 2))
        text = "".join(chr(b) if 32 <= b < 127 else "." for b in chunk)
        lines.append(f"{offset + row * 16:08x}: {groups}  {text}\n")
    return "".join(lines)


_JS_NAMES = [*"abcdefghijklmnopqrstuvwxyz", "e", "t", "n", "r", "i", "o", "_", "$"]
_JS_WORDS = ("length", "push", "call", "apply", "prototype", "exports", "default", "createElement", "forEach")


def _js_name(d: _Draws) -> str:
    name = d.pick(_JS_NAMES)
    return name + d.pick(_JS_NAMES) if d.chance(30) else name


def _js_value(d: _Draws, depth: int = 0) -> str:
    kind = d.below(9 if depth < 2 else 5)
    if kind == 0:
        return str(d.below(1000))
    if kind == 1:
        return f'"{d.pick(_JS_WORDS)}-{d.below(100)}"'
    if kind == 2:
        return f"{_js_name(d)}.{d.pick(_JS_WORDS)}"
    if kind in (3, 4):
        return _js_name(d)
    if kind == 5:
        operator = d.pick(("+", "-", "*", "===", "!==", "&&", "||", "<", ">>>"))
        return f"{_js_value(d, depth + 1)}{operator}{_js_value(d, depth + 1)}"
    if kind == 6:
        args = ",".join(_js_value(d, depth + 1) for _ in range(d.below(4)))
        return f"{_js_name(d)}({args})"
    if kind == 7:
        return "{" + ",".join(f"{d.pick(_JS_WORDS)}:{_js_value(d, depth + 1)}" for _ in range(1 + d.below(3))) + "}"
    return f"function({_js_name(d)},{_js_name(d)}){{return {_js_value(d, depth + 1)}}}"


def _js_statement(d: _Draws) -> str:
    kind = d.below(6)
    if kind == 0:
        return f"var {_js_name(d)}={_js_value(d)},{_js_name(d)}={_js_value(d)};"
    if kind == 1:
        n = _js_name(d)
        return f"for(var {n}=0;{n}<{_js_name(d)}.length;{n}++){{{_js_value(d)};}}"
    if kind == 2:
        return f"if({_js_value(d)}){{return {_js_value(d)}}}else{{{_js_name(d)}={_js_value(d)}}}"
    if kind == 3:
        return f"{_js_name(d)}.{d.pick(_JS_WORDS)}={_js_value(d)};"
    return f"{_js_value(d)};"


def _minified_js_module(d: _Draws) -> str:
    body = "".join(_js_statement(d) for _ in range(3 + d.below(8)))
    return f'!function({_js_name(d)},{_js_name(d)}){{"use strict";{body}}}({_js_name(d)},{_js_name(d)});'


@functools.cache
def _cjk_mixed(size: int) -> str:
    return _generated(_cjk_mixed_line, "cjk-mixed", size)


@functools.cache
def _emoji_chat(size: int) -> str:
    return _generated(_emoji_chat_line, "emoji-chat", size)


@functools.cache
def _hexdump(size: int) -> str:
    return _generated(_hexdump_block, "hexdump", size)


@functools.cache
def _minified_js(size: int) -> str:
    return _generated(_minified_js_module, "minified-js", size)


_MAKERS = {
    "code": _code,
    "prose": _prose,
    "log": _log,
    "json": _json,
    "cjk": _cjk,
    "base64": _base64,
    "base64-random": _base64_random,
    "cjk-mixed": _cjk_mixed,
    "emoji-chat": _emoji_chat,
    "hexdump": _hexdump,
    "minified-js": _minified_js,
}


def text(kind: str, size: int) -> str:
    """``size`` characters of text of ``kind`` (one of :data:`KINDS`)."""
    return _MAKERS[kind](size)
