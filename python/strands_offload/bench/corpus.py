"""Benchmark inputs: real text found on this machine, and generated text where none is installed.

Kinds (each cut or repeated to the asked size, in characters):

* ``code``: the Python standard library's own ``.py`` sources;
* ``prose``: documentation under ``/usr/share/doc`` and licences under ``/usr/share/common-licenses``
  (compressed files are read too), falling back to the standard library's docstrings;
* ``log``: a generated service log (the demo's), with an error line every few thousand lines;
* ``json``: a generated API dump (records with nested objects, numbers, accented and CJK names);
* ``cjk``: Japanese and Chinese sentences made of common characters, with ASCII punctuation;
* ``base64``: the base64 text of an installed binary (the Python interpreter).

Everything is deterministic for a machine: same files, same seed, same text.
"""

from __future__ import annotations

import base64
import functools
import gzip
import random
import sys
import sysconfig
from collections.abc import Iterator
from pathlib import Path
from typing import Any

__all__ = ["KINDS", "SIZES", "json_document", "text"]

KINDS = ("code", "prose", "log", "json", "cjk", "base64")
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


_MAKERS = {"code": _code, "prose": _prose, "log": _log, "json": _json, "cjk": _cjk, "base64": _base64}


def text(kind: str, size: int) -> str:
    """``size`` characters of text of ``kind`` (one of :data:`KINDS`)."""
    return _MAKERS[kind](size)
