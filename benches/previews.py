"""Do previews hold the answer? Relevance and shape previews against the positional one.

A seeded generator (``random.Random``; it knows nothing of any ranker) writes (tool result,
question) pairs of four kinds: JSON API dumps (``indent=2``), CSV exports, HTML pages converted to
text, and service logs, 10 KB to 10 MB. Each answer is a literal that occurs once in its result,
past its first 2,000 tokens (8,000 characters). Questions name the field or the entity; for most
JSON, log and page pairs they share no word with the answer's line (the entity sits on a nearby
line: the order's id above its address, the failing request's error line above its cause, the
section's heading above its paragraph). Whether a question shares a word with the answer's line is
measured (lower-cased runs of letters and digits), not taken from the generator's intent.

Figures:

* relevance: ``Offload.relevance`` with the native reranker, ``chunk_tokens=250``,
  ``preview_tokens=1000``; the share of pairs whose answer is inside the preview, overall and for
  the no-shared-word pairs, beside the positional (``head_tail``) preview of the same budget;
* shape (JSON and log pairs): the share whose shape preview, at the same budget, carries what leads
  to the answer: for JSON a JSONPath that, with its indices made wildcards, is the answer's path
  (``$.data[*].ship_to``; evaluated with ``json_query`` to check it selects the answer), for logs the
  line number of the answer's line or of the error line just above it;
* timing: a relevance preview (chunking, scoring, selection, rendering) of a 10 MB and a 100 KB
  JSON result, as a text item and as a ``json`` item (the ``indent=2`` rendering included), median
  of 5 runs. Timings depend on the machine and its load; the recall figures are deterministic.

Run once: ``python benches/previews.py`` (about a minute).
"""

from __future__ import annotations

import asyncio
import json
import random
import re
import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from strands_offload import json_query
from strands_offload._shape import shape_preview
from strands_offload.context_manager.methods.truncate import build_preview
from strands_offload.context_manager.strategies.offload.relevance import RelevanceStrategy

SEED = 20261205
PAIRS_PER_KIND = 76
CHUNK_TOKENS = 250
PREVIEW_TOKENS = 1000
BUDGET = PREVIEW_TOKENS * 4
HEAD_CHARS = 8000
_WORD = re.compile(r"[a-z0-9]+")

FIRST = "Ada Ben Cleo Dev Emil Fay Gus Hana Ivo Jun Kai Lena Milo Nora Otto Pia Quin Rosa Sami Tess".split()
LAST = "Abbot Brook Crane Drake Ellis Frost Grant Hale Irving Jones Kerr Lowe Moss Nash Oakes Price".split()
STREETS = "Elm Oak Birch Cedar Maple Willow Aspen Rowan Alder Hazel Linden Spruce Quay Harbour Mill".split()
SUFFIX = "Street Road Lane Avenue Way Close Drive Terrace".split()
CITIES = "Leith Bergen Ghent Lyon Porto Turku Bremen Malmo Cork Basel Graz Split Tartu Riga Brno".split()
SERVICES = "checkout payments catalog search auth inventory shipping".split()
UPSTREAMS = "acquirer gateway ledger vault broker relay switch".split()
WAREHOUSES = "Reno Tilburg Leipzig Dallas Osaka Lyon Perth".split()
PRODUCTS = "bolt washer bracket hinge clamp spring gasket valve fitting coupling".split()
VERBS = "Replacing Cleaning Calibrating Mounting Pairing Resetting Updating Testing Storing Aligning".split()
PARTS = (
    "fan filter|depth sensor|remote|display|battery|charger|antenna|lens|pump|valve|belt|heater|"
    "keypad|speaker|hinge|gasket|bracket|cable|socket|relay|fuse|motor|drum|nozzle|tray"
).split("|")
QUALIFIERS = "front rear upper lower left right inner outer main spare".split()


def words(text: str) -> set[str]:
    """The words a question and a line are compared by (independent of any ranker's terms)."""
    return set(_WORD.findall(text.lower()))


@dataclass
class Pair:
    kind: str
    text: str
    question: str
    call_input: dict[str, Any]
    answer: str
    answer_line: int  # 1-based line of the answer in ``text``
    path: str | None = None  # JSON: the answer's JSONPath

    @property
    def shares_a_word(self) -> bool:
        line = self.text.splitlines()[self.answer_line - 1]
        return bool(words(self.question) & words(line))


def _size(rng: random.Random) -> int:
    return int(10_000 * (200 ** rng.random()))  # 10 KB .. 2 MB, log-uniform


def _line_of(text: str, literal: str) -> int:
    return text.count("\n", 0, text.index(literal)) + 1


# ----------------------------------------------------------------------------- generators


def json_pair(rng: random.Random, size: int, no_shared: bool) -> Pair:
    records = []
    count = max(40, size // 330)
    ids = rng.sample(range(100000, 999999), count)
    for i in range(count):
        number = rng.randint(1, 999)
        records.append(
            {
                "id": f"ORD-{ids[i]}",
                "customer": {"name": f"{rng.choice(FIRST)} {rng.choice(LAST)}", "tier": rng.choice(["gold", "basic"])},
                "status": rng.choice(["shipped", "packed", "held", "returned"]),
                "items": rng.randint(1, 9),
                "ship_to": f"{number} {rng.choice(STREETS)} {rng.choice(SUFFIX)}, {rng.choice(CITIES)} {i}",
                "carrier": rng.choice(["DHL", "UPS", "PostNord", "GLS"]),
            }
        )
    document = {"data": records, "meta": {"page": 1, "total": count}}
    text = json.dumps(document, indent=2)
    while True:
        target = rng.randrange(count // 4, count)
        answer = records[target]["ship_to"]
        if text.index(answer) > HEAD_CHARS and text.count(answer) == 1:
            break
    order = records[target]["id"]
    question = (
        f"Where is order {order} being delivered?" if no_shared else f"What is the ship_to address of order {order}?"
    )
    return Pair(
        "json",
        text,
        question,
        {"endpoint": "/v2/orders", "page": "all"},
        answer,
        _line_of(text, answer),
        f"$.data[{target}].ship_to",
    )


def log_pair(rng: random.Random, size: int, no_shared: bool) -> Pair:
    lines: list[str] = []
    seconds = 0
    events: list[int] = []
    target_request = ""
    answer = ""
    length = 0
    errors = rng.randint(2, 12)
    error_at = sorted(rng.sample(range(1, 1000), errors))
    position = 0
    while length < size:
        seconds += rng.randint(0, 3)
        clock = f"{10 + seconds // 3600 % 12:02d}:{seconds // 60 % 60:02d}:{seconds % 60:02d}"
        stamp = f"2024-05-01T{clock}.{rng.randint(0, 999):03d}Z"
        service = rng.choice(SERVICES)
        request = f"r-{rng.getrandbits(24):06x}"
        position += 1
        if error_at and position * 1000 // max(1, size // 95) >= error_at[0]:
            error_at.pop(0)
            upstream = f"{rng.choice(UPSTREAMS)}-{rng.choice(['eu', 'us', 'ap'])}-{rng.randint(1, 99)}"
            lines.append(f"{stamp} ERROR [{service}] req={request} charge failed status=502")
            lines.append(f"    caused by: GatewayTimeout upstream={upstream} after {rng.randint(5, 60) * 1000} ms")
            events.append(len(lines))
            if len(lines) * 100 > HEAD_CHARS and (not answer or rng.random() < 0.5):
                target_request, answer = request, upstream
        elif rng.random() < 0.01:
            lines.append(f"{stamp} WARN  [{service}] req={request} slow response latency_ms={rng.randint(900, 5000)}")
        else:
            lines.append(
                f"{stamp} INFO  [{service}] req={request} path=/api/{rng.choice(PRODUCTS)} status=200 "
                f"latency_ms={rng.randint(3, 400)}"
            )
        length += len(lines[-1]) + 1
    text = "\n".join(lines)
    if not answer or text.count(answer) != 1 or text.index(answer) < HEAD_CHARS:
        return log_pair(rng, size, no_shared)
    question = (
        f"Why did request {target_request} not go through?"
        if no_shared
        else f"Which upstream caused the failure of request {target_request}?"
    )
    return Pair("log", text, question, {"service": "all", "since": "6h"}, answer, _line_of(text, answer))


def csv_pair(rng: random.Random, size: int, no_shared: bool) -> Pair:
    rows = ["sku,product,warehouse,bin,qty,unit_price,supplier"]
    count = max(60, size // 60)
    skus = rng.sample(range(100000, 999999), count)
    bins: list[str] = []
    for i in range(count):
        bin_code = f"B{i:05d}-{rng.randint(10, 99)}"
        bins.append(bin_code)
        rows.append(
            f"SKU-{skus[i]},{rng.choice(PRODUCTS)} {rng.randint(2, 40)}mm,{rng.choice(WAREHOUSES)},{bin_code},"
            f"{rng.randint(0, 900)},{rng.randint(1, 9999) / 100:.2f},{rng.choice(LAST)} Supply"
        )
    text = "\n".join(rows)
    while True:
        target = rng.randrange(count // 4, count)
        if text.index(bins[target]) > HEAD_CHARS:
            break
    question = f"In which bin is SKU-{skus[target]} stored?"
    return Pair("csv", text, question, {"table": "inventory", "format": "csv"}, bins[target], target + 2)


def html_pair(rng: random.Random, size: int, no_shared: bool) -> Pair:
    nav = "Home | Products | Support | Downloads | Community | Contact\nSearch the docs...\nSign in | Cart (0)\n"
    blocks = [nav, "# Model R7 Field Unit: Service Manual\n"]
    parts: list[tuple[str, str]] = []
    length = sum(map(len, blocks))
    titles = [f"{v} the {q} {p}" for v in VERBS for q in QUALIFIERS for p in PARTS]
    rng.shuffle(titles)
    number = 0
    while length < size:
        # A manual's section titles are unique; a long page runs out of them and repeats, numbered.
        title = titles[number % len(titles)] + (f" ({number // len(titles) + 1})" if number >= len(titles) else "")
        number += 1
        part = f"XR-{rng.randint(1000, 9999)}-{chr(65 + number % 26)}{number}"
        filler = " ".join(rng.choice(PRODUCTS + STREETS) for _ in range(30))
        body = (
            f"\n## {title}\n"
            f"Read these steps fully before you begin; keep the unit unplugged.\n"
            f"Use only part {part}; other parts void warranty.\n"
            f"Notes: {filler}\n"
        )
        parts.append((title, part))
        blocks.append(body)
        length += len(body)
    blocks.append("\nFooter: Terms | Privacy | Cookies | (c) 2024 Example Devices\n")
    text = "".join(blocks)
    while True:
        heading, answer = parts[rng.randrange(len(parts) // 4, len(parts))]
        if text.index(answer) > HEAD_CHARS and text.count(answer) == 1:
            break
    if not no_shared:
        question = f'Which part number should be used for "{heading}"?'
    elif rng.random() < 0.5:
        # Names the document as well: its title chunk (which the URL in the call's input matches
        # too) then competes with the section's; kept to show that weakness of word matching.
        question = f'What does the manual require for "{heading}"?'
    else:
        question = f'What is required for "{heading}"?'
    url = {"url": "https://docs.example.com/r7/service-manual"}
    return Pair("html", text, question, url, answer, _line_of(text, answer))


GENERATORS: dict[str, Callable[[random.Random, int, bool], Pair]] = {
    "json": json_pair,
    "csv": csv_pair,
    "html": html_pair,
    "log": log_pair,
}


def pairs(seed: int = SEED) -> list[Pair]:
    """The seeded pairs: 76 per kind, sizes 10 KB-2 MB, and one 10 MB pair per kind."""
    rng = random.Random(seed)
    out: list[Pair] = []
    for make in GENERATORS.values():
        for index in range(PAIRS_PER_KIND):
            size = 10_000_000 if index == 0 else _size(rng)
            out.append(make(rng, size, rng.random() < 0.7))
    return out


# ----------------------------------------------------------------------------- measures


def _messages(pair: Pair) -> list[dict[str, Any]]:
    return [
        {"role": "user", "content": [{"text": pair.question}]},
        {"role": "assistant", "content": [{"toolUse": {"toolUseId": "t1", "name": "fetch", "input": pair.call_input}}]},
        {
            "role": "user",
            "content": [{"toolResult": {"toolUseId": "t1", "status": "success", "content": [{"text": pair.text}]}}],
        },
    ]


def relevance_hit(strategy: RelevanceStrategy, pair: Pair) -> bool:
    messages = _messages(pair)
    preview = asyncio.run(strategy.preview(messages[2]["content"][0]["toolResult"], messages))
    return preview is not None and pair.answer in preview


def question_only_hit(strategy: RelevanceStrategy, pair: Pair) -> bool:
    """Diagnostic, not the strategy's query: the question alone, without the call's input."""
    messages = _messages(pair)
    result = messages[2]["content"][0]["toolResult"]
    preview = asyncio.run(strategy.preview(result, [messages[0], messages[2]]))
    return preview is not None and pair.answer in preview


def positional_hit(pair: Pair) -> bool:
    return pair.answer in build_preview(pair.text, 1, {"preview_tokens": PREVIEW_TOKENS})


_SHAPE_NODE = re.compile(r"^L(\d+) (\$.*?): ", re.MULTILINE)
_SHAPE_LINE = re.compile(r"^L(\d+)[: ]", re.MULTILINE)


def shape_leads(pair: Pair) -> bool:
    shape = shape_preview(pair.text, BUDGET)
    if shape is None:
        return False
    if pair.kind == "json":
        assert pair.path is not None
        wanted = re.sub(r"\[\d+\]", "[*]", pair.path)
        paths = {re.sub(r"\[\d+\]", "[*]", m.group(2)) for m in _SHAPE_NODE.finditer(shape)}
        if wanted not in paths:
            return False
        return pair.answer in json_query(pair.text.encode(), wanted, max_chars=len(pair.text) * 2)
    shown = {int(m.group(1)) for m in _SHAPE_LINE.finditer(shape)}
    return pair.answer_line in shown or pair.answer_line - 1 in shown


def _median_ms(work: Callable[[], object], runs: int = 5) -> float:
    times = []
    for _ in range(runs):
        started = time.perf_counter()
        work()
        times.append((time.perf_counter() - started) * 1000)
    return statistics.median(times)


def _preview_ms(strategy: RelevanceStrategy, result: dict[str, Any], messages: list[dict[str, Any]]) -> float:
    return _median_ms(lambda: asyncio.run(strategy.preview(result, messages)))


def timing() -> list[tuple[str, float]]:
    rng = random.Random(SEED + 1)
    rows = []
    for size in (10_000_000, 100_000):
        pair = json_pair(rng, size * 14 // 10, True)  # the generator's size is of the compact records
        label = f"{len(pair.text) / 1e6:.1f} MB" if size > 1e6 else f"{len(pair.text) / 1e3:.0f} KB"
        document = json.loads(pair.text)
        messages = _messages(pair)
        text_result = messages[2]["content"][0]["toolResult"]
        json_result = {"toolUseId": "t1", "status": "success", "content": [{"json": document}]}
        for config_label, config in (("defaults", {}), ("chunk_tokens=250", {"chunk_tokens": CHUNK_TOKENS})):
            strategy = RelevanceStrategy("tool_results", config)  # type: ignore[arg-type]
            assert asyncio.run(strategy.preview(text_result, messages)) is not None  # a preview is made
            rows.append((f"{label} JSON, text item, {config_label}", _preview_ms(strategy, text_result, messages)))
            rows.append(
                (
                    f"{label} JSON, json item (indent=2 rendering included), {config_label}",
                    _preview_ms(strategy, json_result, messages),
                )
            )
    return rows


def main() -> None:
    started = time.perf_counter()
    generated = pairs()
    strategy = RelevanceStrategy("tool_results", {"chunk_tokens": CHUNK_TOKENS, "preview_tokens": PREVIEW_TOKENS})
    results = [
        (pair, relevance_hit(strategy, pair), positional_hit(pair), question_only_hit(strategy, pair))
        for pair in generated
    ]
    no_shared = [r for r in results if not r[0].shares_a_word]
    print(
        f"{len(generated)} pairs ({len(no_shared)} with no word shared with the answer's line), "
        f"sizes {min(len(p.text) for p in generated):,}-{max(len(p.text) for p in generated):,} characters\n"
    )
    print(
        "| pairs | count | relevance (native, 250/1000) | positional head_tail, same budget "
        "| diagnostic: relevance, question alone as the query |"
    )
    print("|---|---:|---:|---:|---:|")

    def row(label: str, chosen: list[tuple[Pair, bool, bool, bool]]) -> None:
        if chosen:
            hit, positional, alone = (sum(r[k] for r in chosen) / len(chosen) for k in (1, 2, 3))
            print(f"| {label} | {len(chosen)} | {hit:.1%} | {positional:.1%} | {alone:.1%} |")

    row("all", results)
    row("no shared word", no_shared)
    row("shared word", [r for r in results if r[0].shares_a_word])
    for kind in GENERATORS:
        row(kind, [r for r in results if r[0].kind == kind])
    print()
    print("| pairs | count | shape preview leads to the answer |")
    print("|---|---:|---:|")
    shaped = [(pair, shape_leads(pair)) for pair in generated if pair.kind in ("json", "log")]
    print(f"| JSON and log | {len(shaped)} | {sum(s[1] for s in shaped) / len(shaped):.1%} |")
    for kind in ("json", "log"):
        chosen = [s for s in shaped if s[0].kind == kind]
        print(f"| {kind} | {len(chosen)} | {sum(s[1] for s in chosen) / len(chosen):.1%} |")
    print()
    print("| relevance preview (median of 5; shared machine) | ms |")
    print("|---|---:|")
    for label, ms in timing():
        print(f"| {label} | {ms:.1f} |")
    print(f"\n(run took {time.perf_counter() - started:.0f} s)")


if __name__ == "__main__":
    main()
