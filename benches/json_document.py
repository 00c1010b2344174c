"""A synthetic ~10 MB JSON document shaped like a real API dump, for the JSON benches."""

from __future__ import annotations

import random
from typing import Any

_WORDS = (
    "alpha beta gamma delta request response status pending shipped order customer "
    "invoice total amount région café naïve straße 東京 данные 🚀 ✓ note summary"
).split()


def _sentence(rng: random.Random, n: int) -> str:
    return " ".join(rng.choice(_WORDS) for _ in range(n))


def _record(rng: random.Random, i: int) -> dict[str, Any]:
    return {
        "id": i,
        "uuid": f"{rng.getrandbits(64):016x}-{rng.getrandbits(32):08x}",
        "name": _sentence(rng, 3).title(),
        "email": f"user{i}@example.com",
        "active": rng.random() < 0.7,
        "score": rng.random() * 100,
        "balance": round(rng.uniform(-1e4, 1e6), 2),
        "ratio": rng.random() / 1e6,
        "tags": [rng.choice(_WORDS) for _ in range(rng.randint(0, 5))],
        "address": {
            "street": f"{rng.randint(1, 9999)} {_sentence(rng, 2)} St.",
            "city": rng.choice(["Paris", "Zürich", "São Paulo", "東京", "New York"]),
            "zip": f"{rng.randint(0, 99999):05d}",
            "geo": {"lat": rng.uniform(-90, 90), "lng": rng.uniform(-180, 180)},
        },
        "orders": [
            {
                "order_id": rng.getrandbits(40),
                "items": rng.randint(1, 20),
                "price": round(rng.uniform(1, 500), 2),
                "status": rng.choice(["pending", "shipped", "delivered", "cancelled"]),
                "note": _sentence(rng, rng.randint(0, 8)) or None,
            }
            for _ in range(rng.randint(0, 4))
        ],
        "description": _sentence(rng, rng.randint(5, 25)) + '\n"quoted"\tend',
        "meta": {"created": 1_700_000_000 + i, "version": rng.randint(1, 9), "flags": []},
    }


def build_document(target_bytes: int = 10_000_000, seed: int = 7) -> list[dict[str, Any]]:
    """Return a list of records whose compact ``json.dumps`` is about ``target_bytes`` long."""
    rng = random.Random(seed)
    sample = [_record(rng, i) for i in range(200)]
    import json

    per_record = len(json.dumps(sample)) / len(sample)
    count = max(1, int(target_bytes / per_record))
    rng = random.Random(seed)
    return [_record(rng, i) for i in range(count)]


_CJK = (
    "東京都 大阪 データ 検索 結果 注文 顧客 請求書 合計 金額 状態 発送済み 保留中 配達 "
    "北京 上海 数据 订单 客户 서울 데이터 주문"
).split()


def build_cjk_document(target_bytes: int = 10_000_000, seed: int = 7) -> list[dict[str, Any]]:
    """Records whose strings are mostly CJK: ensure_ascii output is about twice orjson's UTF-8."""
    rng = random.Random(seed)

    def text(n: int) -> str:
        return "".join(rng.choice(_CJK) for _ in range(n))

    def record(i: int) -> dict[str, Any]:
        return {"id": i, "名前": text(2), "説明": text(rng.randint(5, 30)), "タグ": [text(1) for _ in range(3)]}

    import json

    per_record = len(json.dumps([record(i) for i in range(200)])) / 200
    rng = random.Random(seed)
    return [record(i) for i in range(max(1, int(target_bytes / per_record)))]
