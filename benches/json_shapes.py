"""Six seeded JSON documents of other shapes, each 10,000,000 bytes of compact ``json.dumps`` (within 5%).

The API records (``json_document.build_document``) are what the plugin benches use; a writer
tuned on them alone can be slow where tool results look otherwise. The shapes here stress the
per-value costs separately:

- ``api``: the API records (mixed keys, strings, numbers, nested objects);
- ``chartable``: a character table, a record per code point: one-character and short name
  strings, many nulls, small ints (the fixed cost per string and per key);
- ``cjk``: records whose strings are mostly CJK (the ``\\uXXXX`` escape path);
- ``events``: nested event records: ids, URLs, ISO times, booleans, short messages;
- ``floats``: series of floats of every magnitude (the shortest round-trip formatting);
- ``floatrecs``: small records of four doubles each (``t``, ``v``, ``lo``, ``hi``) over every
  magnitude: tiny, huge, subnormal, negative zero, whole numbers, short and 17-digit mantissas
  (the fixed cost per float and per key beside the formatting).

Every builder is deterministic for a seed and independent of the Python version (no Unicode
database: the character table draws its code points and names itself).
"""

from __future__ import annotations

import json
import math
import random
import struct
from collections.abc import Callable, Iterator
from typing import Any

from json_document import build_cjk_document, build_document

TARGET = 10_000_000


def _fill(records: Iterator[Any], target: int) -> list[Any]:
    """Take records until their compact list reaches ``target`` bytes (within one record)."""
    out: list[Any] = []
    size = 2  # "[]"
    for record in records:
        size += len(json.dumps(record)) + (2 if out else 0)
        out.append(record)
        if size >= target:
            break
    return out


_CATEGORIES = ("Lu", "Ll", "Lo", "Mn", "Nd", "Po", "Sm", "So", "Zs", "Cc")
_NAME_WORDS = (
    "LATIN CAPITAL SMALL LETTER WITH ACUTE GRAVE DIAERESIS CYRILLIC GREEK ARABIC HEBREW CJK "
    "UNIFIED IDEOGRAPH HIRAGANA KATAKANA DIGIT SIGN MARK COMBINING BOX DRAWINGS LIGHT HEAVY "
    "ARROW MATHEMATICAL BOLD ITALIC SCRIPT FRAKTUR DOUBLE STRUCK EMOJI MODIFIER TONE"
).split()


def _chartable(rng: random.Random) -> Iterator[dict[str, Any]]:
    cp = 0x20
    while True:
        cp += rng.choice((1, 1, 1, 2, 7))
        if 0xD800 <= cp <= 0xDFFF:  # no lone surrogates: a str of one is not a character
            cp = 0xE000
        cp %= 0x110000
        category = rng.choice(_CATEGORIES)
        yield {
            "cp": cp,
            "char": chr(cp),
            "name": " ".join(rng.choice(_NAME_WORDS) for _ in range(rng.randint(1, 4))),
            "category": category,
            "combining": rng.choice((0, 0, 0, 230, 220)),
            "bidi": rng.choice(("L", "R", "AL", "EN", "ON", "NSM")),
            "decomposition": rng.choice((None, None, None, f"{cp - 1:04X} 0301")),
            "decimal": rng.randint(0, 9) if category == "Nd" else None,
            "numeric": None,
            "mirrored": rng.random() < 0.05,
            "upper": chr(cp - 32) if category == "Ll" and cp > 0x60 and not 0xD800 <= cp - 32 <= 0xDFFF else None,
            "lower": None,
        }


_EVENT_TYPES = ("PushEvent", "IssuesEvent", "PullRequestEvent", "WatchEvent", "ForkEvent", "CreateEvent")
_ACTIONS = ("opened", "closed", "reopened", "started", "created", "synchronize")
_MESSAGES = (
    "Fix typo",
    "Bump version to 2.4.1",
    "Merge branch 'main' into feature",
    "Add retry on timeout",
    "Update README.md",
    "WIP",
    'Handle empty "items" list',
    "Refactor parser\n\nSplit the tokenizer out.",
)


def _events(rng: random.Random) -> Iterator[dict[str, Any]]:
    i = 20_000_000_000
    while True:
        i += rng.randint(1, 50)
        user = rng.randint(1, 5_000_000)
        login = f"user{user}"
        repo = f"{login}/project-{rng.randint(1, 400)}"
        commits = [
            {
                "sha": f"{rng.getrandbits(160):040x}",
                "author": {"email": f"{login}@users.noreply.example.com", "name": login.title()},
                "message": rng.choice(_MESSAGES),
                "distinct": rng.random() < 0.9,
                "url": f"https://api.example.com/repos/{repo}/commits/{rng.getrandbits(64):016x}",
            }
            for _ in range(rng.randint(0, 3))
        ]
        yield {
            "id": str(i),
            "type": rng.choice(_EVENT_TYPES),
            "actor": {
                "id": user,
                "login": login,
                "display_login": login,
                "gravatar_id": "",
                "url": f"https://api.example.com/users/{login}",
                "avatar_url": f"https://avatars.example.com/u/{user}?",
            },
            "repo": {"id": rng.randint(1, 900_000_000), "name": repo, "url": f"https://api.example.com/repos/{repo}"},
            "payload": {
                "action": rng.choice(_ACTIONS),
                "push_id": rng.getrandbits(33),
                "size": len(commits),
                "ref": "refs/heads/main" if rng.random() < 0.8 else None,
                "commits": commits,
            },
            "public": rng.random() < 0.95,
            "created_at": (
                f"2026-{rng.randint(1, 12):02d}-{rng.randint(1, 28):02d}T"
                f"{rng.randint(0, 23):02d}:{rng.randint(0, 59):02d}:{rng.randint(0, 59):02d}Z"
            ),
        }


def _float(rng: random.Random) -> float:
    kind = rng.random()
    if kind < 0.3:
        return rng.uniform(-1, 1)  # 17 significant digits
    if kind < 0.5:
        return round(rng.uniform(-1000, 1000), rng.randint(0, 4))  # short decimals
    if kind < 0.6:
        return float(rng.randint(-100_000, 100_000))  # integral: "12.0"
    if kind < 0.9:
        return rng.uniform(0.5, 1) * 10.0 ** rng.randint(-300, 300)  # e-notation both ways
    return rng.choice((0.0, -0.0, 0.1, 1e16, 1e-5, 5e-324, 1.7976931348623157e308))


def _floats(rng: random.Random) -> Iterator[dict[str, Any]]:
    n = 0
    while True:
        n += 1
        yield {"series": f"s{n}", "points": [_float(rng) for _ in range(rng.randint(50, 400))]}


_EDGE_DOUBLES = (
    0.0,
    -0.0,
    5e-324,
    -5e-324,
    2.2250738585072014e-308,  # the smallest normal
    2.225073858507201e-308,  # the largest subnormal
    1.7976931348623157e308,
    -1.7976931348623157e308,
    1e16,  # the first repr in e-notation above
    9999999999999998.0,  # the last positional one below it
    1e-5,  # the first repr in e-notation below
    0.0001,  # the last positional one above it
    9.999999999999999e-05,
    1e22,
    1e23,
    0.1,
    0.30000000000000004,
)


def _any_double(rng: random.Random) -> float:
    """A finite double from a mix over every magnitude (only random's integer-based draws, which
    give the same values on every Python version)."""
    kind = rng.random()
    if kind < 0.2:  # uniform bit patterns: every exponent, 17 significant digits mostly
        while True:
            value: float = struct.unpack("<d", rng.getrandbits(64).to_bytes(8, "little"))[0]
            if math.isfinite(value):
                return value
    if kind < 0.3:  # subnormal
        bits = rng.getrandbits(52) | (rng.getrandbits(1) << 63)
        return float(struct.unpack("<d", bits.to_bytes(8, "little"))[0])
    if kind < 0.45:  # whole numbers, small and past 2**53 (e-notation from 1e16)
        if rng.random() < 0.7:
            return float(rng.randint(-1_000_000, 1_000_000))
        return float(rng.randint(-(10**20), 10**20))
    if kind < 0.7:  # short mantissas at every magnitude: "1.25e-300", "0.003", "42.5"
        return float(f"{'-' if rng.random() < 0.3 else ''}{rng.randint(1, 9999)}e{rng.randint(-327, 305)}")
    if kind < 0.95:  # 17-digit mantissas near the positional range
        return (rng.getrandbits(53) / 2**53 - 0.5) * 10.0 ** rng.randint(-8, 18)
    return rng.choice(_EDGE_DOUBLES)


def _floatrecs(rng: random.Random) -> Iterator[dict[str, Any]]:
    n = 0
    while True:
        n += 1
        yield {"t": 1_700_000_000 + n / 8, "v": _any_double(rng), "lo": _any_double(rng), "hi": _any_double(rng)}


def _api(target: int, seed: int) -> list[Any]:
    return build_document(target, seed)


def _cjk(target: int, seed: int) -> list[Any]:
    return build_cjk_document(target, seed)


def _filled(records: Callable[[random.Random], Iterator[Any]]) -> Callable[[int, int], list[Any]]:
    return lambda target, seed: _fill(records(random.Random(seed)), target)


SHAPES: dict[str, Callable[[int, int], list[Any]]] = {
    "api": _api,
    "chartable": _filled(_chartable),
    "cjk": _cjk,
    "events": _filled(_events),
    "floats": _filled(_floats),
    "floatrecs": _filled(_floatrecs),
}


def build_shape(shape: str, target: int = TARGET, seed: int = 7) -> list[Any]:
    """The ``shape`` document of about ``target`` compact bytes."""
    return SHAPES[shape](target, seed)
