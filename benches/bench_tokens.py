"""Token counting and preview throughput: strands_offload vs the tiktoken package.

Run: ``pytest benches/bench_tokens.py --benchmark-group-by=group``. Every group has a
``reference`` member (the tiktoken package, or the reference's own slicing) and a
``native`` member (strands_offload), measured in the same run on the same text. tiktoken's
``encode_ordinary`` runs on one thread; ``count_tokens`` splits a text over 128 KB across the
cores (as users call it), so on this 2-core machine the 1 MB and 10 MB counting groups compare two
threads of ours with one of tiktoken's. The counting groups have a third member,
``bpe-openai``: the crate we build on, used as it comes (its regex pre-tokenizer and
encoder, no fast paths), to show what our pre-tokenizer and single-token lookups add.
"""

from __future__ import annotations

import base64
import functools
import json
import random
from typing import Any

import corpora
import pytest
import strands_offload
from strands_offload import _native

MB = corpora.MB
STDLIB = corpora.STDLIB
_fill = corpora.fill
_code = corpora.code
_prose = corpora.prose
_logs = corpora.logs


def _json() -> str:
    rnd = random.Random(11)
    records = [
        {
            "id": i,
            "name": f"item-{i}",
            "description": " ".join(rnd.choice(["fast", "blue", "widget", "café", "router", "42"]) for _ in range(6)),
            "price": round(rnd.random() * 1000, 2),
            "tags": [rnd.choice(["a", "b", "c", "d"]) for _ in range(3)],
            "active": rnd.random() < 0.5,
            "parent": None if i % 3 else i // 3,
        }
        for i in range(6000)
    ]
    return _fill([json.dumps(records, indent=2)], MB)


def _cjk() -> str:
    files = sorted((STDLIB / "test" / "cjkencodings").glob("*-utf8.txt"))
    parts = [p.read_text(encoding="utf-8", errors="replace") for p in files]
    if not parts:
        parts = ["这是一个用于测试分词器的中文段落。日本語のテキストも含まれています。한국어 문장도 있습니다.\n"]
    return _fill(parts, MB // 3)  # ~1 MB of UTF-8


def _base64() -> str:
    # Random bytes from a fixed seed, base64-encoded in one line: no word is a token.
    return _base64_of(MB)


def _base64_of(size: int) -> str:
    rnd = random.Random(13)
    return base64.b64encode(rnd.randbytes(size * 3 // 4 + 3)).decode("ascii")[:size]


CORPORA = {
    "code": _code,
    "prose": _prose,
    "logs": _logs,
    "json": _json,
    "cjk": _cjk,
    "base64": _base64,
    # Generated kinds (the same text as the packaged bench's rows), 1 MB of UTF-8 each.
    **{kind: functools.partial(build, MB) for kind, build in corpora.GENERATED.items()},
}

# 10 MB texts of the kinds whose pieces are longest or least often one token.
CORPORA_10MB = {
    "prose": lambda: _fill([_prose()], 10 * MB),
    "cjk": lambda: _fill([_cjk()], 10 * MB // 3),  # ~10 MB of UTF-8
    "base64": lambda: _base64_of(10 * MB),
    **{kind: functools.partial(build, 10 * MB) for kind, build in corpora.GENERATED.items()},
}

# Medians of the counting groups are taken over at least this many rounds.
COUNT_ROUNDS = 7


@pytest.fixture(scope="module", params=list(CORPORA))
def corpus(request: pytest.FixtureRequest) -> tuple[str, str]:
    return request.param, CORPORA[request.param]()


# tiktoken's count of each (encoding, text), computed once for the members of a group.
_EXPECTED: dict[tuple[str, int, int], int] = {}


def _bench_count(benchmark: Any, enc: Any, text: str, encoding: str, member: str, rounds: int) -> None:
    key = (encoding, len(text), hash(text))
    if key not in _EXPECTED:
        _EXPECTED[key] = len(enc.encode_ordinary(text))
    expected = _EXPECTED[key]
    if member == "reference":
        fn: Any = lambda: len(enc.encode_ordinary(text))  # noqa: E731
    elif member == "bpe-openai":
        # The crate alone (its regex pre-tokenizer, no fast paths): shows why we add our own.
        # Only in a build with the bench feature (maturin develop --release --features bench).
        crate_count = getattr(_native, "_count_tokens_bpe_openai", None)
        if crate_count is None:
            pytest.skip("native module built without the 'bench' feature")
        fn = lambda: crate_count(text, encoding)  # noqa: E731
    else:
        fn = lambda: strands_offload.count_tokens(text, encoding)  # noqa: E731
    result = benchmark.pedantic(fn, rounds=rounds, warmup_rounds=1)
    assert result == expected


@pytest.mark.parametrize("encoding", ["cl100k_base", "o200k_base"])
@pytest.mark.parametrize("member", ["reference", "native", "bpe-openai"])
def test_count(
    benchmark: Any, tiktoken_encodings: dict[str, Any], corpus: tuple[str, str], encoding: str, member: str
) -> None:
    kind, text = corpus
    benchmark.group = f"count {encoding} {kind}"
    benchmark.name = member
    _bench_count(benchmark, tiktoken_encodings[encoding], text, encoding, member, rounds=3 * COUNT_ROUNDS)


@pytest.fixture(scope="module", params=list(CORPORA_10MB))
def corpus_10mb(request: pytest.FixtureRequest) -> tuple[str, str]:
    return request.param, CORPORA_10MB[request.param]()


@pytest.mark.parametrize("encoding", ["cl100k_base", "o200k_base"])
@pytest.mark.parametrize("member", ["reference", "native", "bpe-openai"])
def test_count_10mb(
    benchmark: Any, tiktoken_encodings: dict[str, Any], corpus_10mb: tuple[str, str], encoding: str, member: str
) -> None:
    kind, text = corpus_10mb
    benchmark.group = f"count {encoding} {kind} 10 MB"
    benchmark.name = member
    _bench_count(benchmark, tiktoken_encodings[encoding], text, encoding, member, rounds=COUNT_ROUNDS)


@pytest.mark.parametrize("member", ["reference", "native"])
def test_count_batch(benchmark: Any, tiktoken_encodings: dict[str, Any], member: str) -> None:
    texts = [CORPORA[kind]()[: MB // 4] for kind in ("code", "prose", "logs", "json", "cjk", "base64")] * 4
    benchmark.group = "count batch cl100k_base (20 texts, threads)"
    benchmark.name = member
    enc = tiktoken_encodings["cl100k_base"]
    expected = [len(t) for t in enc.encode_ordinary_batch(texts)]
    if member == "reference":
        result = benchmark(lambda: [len(t) for t in enc.encode_ordinary_batch(texts)])
    else:
        result = benchmark(strands_offload.count_tokens_batch, texts, "cl100k_base")
    assert result == expected


@pytest.fixture(scope="module")
def big_text() -> str:
    return _fill([_code(), _prose(), _logs()], 10 * MB)


@pytest.mark.parametrize("member", ["reference", "native"])
def test_over_threshold_10mb(benchmark: Any, tiktoken_encodings: dict[str, Any], big_text: str, member: str) -> None:
    # "Is this 10 MB tool result over 2,500 tokens?" tiktoken has to count it all.
    benchmark.group = "over 2500 tokens? cl100k_base 10 MB"
    benchmark.name = member
    enc = tiktoken_encodings["cl100k_base"]
    if member == "reference":
        result = benchmark.pedantic(lambda: len(enc.encode_ordinary(big_text)) > 2500, rounds=3)
    else:
        result = benchmark(lambda: strands_offload.count_tokens(big_text, "cl100k_base", limit=2500) > 2500)
    assert result is True


@pytest.mark.parametrize("member", ["reference", "native"])
def test_exact_head_preview_10mb(
    benchmark: Any, tiktoken_encodings: dict[str, Any], big_text: str, member: str
) -> None:
    # A 1,000-token head preview of a 10 MB text on exact token boundaries.
    benchmark.group = "head preview 1000 tokens cl100k_base 10 MB"
    benchmark.name = member
    enc = tiktoken_encodings["cl100k_base"]
    expected = enc.decode(enc.encode_ordinary(big_text)[:1000])
    if member == "reference":
        result = benchmark.pedantic(lambda: enc.decode(enc.encode_ordinary(big_text)[:1000]), rounds=3)
    else:
        result = benchmark(lambda: strands_offload.preview(big_text, 1000, encoding="cl100k_base").head)
    assert result == expected


@pytest.mark.parametrize("member", ["reference", "native"])
def test_exact_head_tail_preview_10mb_cjk(benchmark: Any, tiktoken_encodings: dict[str, Any], member: str) -> None:
    # Non-ASCII text: only windows at both ends are converted, never the whole string.
    text = _fill([_cjk(), _prose()[:100_000]], 10 * MB // 3)
    benchmark.group = "head_tail preview 1000 tokens cl100k_base 10 MB (CJK + prose)"
    benchmark.name = member
    enc = tiktoken_encodings["cl100k_base"]

    def reference() -> tuple[str, str]:
        ids = enc.encode_ordinary(text)
        return enc.decode(ids[:600]), enc.decode(ids[-400:])

    if member == "reference":
        benchmark.pedantic(reference, rounds=3)
    else:
        p = benchmark(lambda: strands_offload.preview(text, 1000, mode="head_tail", encoding="cl100k_base"))
        assert p.truncated


@pytest.mark.parametrize("member", ["reference", "native"])
def test_heuristic_truncate_10mb(benchmark: Any, big_text: str, member: str) -> None:
    # The reference's default path: chars/4 head_tail cut plus its notice.
    from strands._context_manager.methods.truncate import _build_preview

    benchmark.group = "heuristic head_tail truncate 10 MB"
    benchmark.name = member
    expected = _build_preview(big_text, 1, {"preview_tokens": 1000, "preview": "head_tail"})

    def native() -> str:
        p = strands_offload.preview(big_text, 1000, mode="head_tail")
        marker = f"[... {p.elided_chars:,} chars elided ...]"
        body = "\n\n".join(part for part in (p.head, marker, p.tail) if part)
        return f"[Truncated: 1 block, ~{p.token_count:,} tokens]\n\n{body}"

    if member == "reference":
        result = benchmark(_build_preview, big_text, 1, {"preview_tokens": 1000, "preview": "head_tail"})
    else:
        result = benchmark(native)
    assert result == expected
