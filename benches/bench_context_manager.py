"""The context manager's pipeline on each model call, and stashing a 10 MB JSON result.

Both pipelines are the default ``ContextManager()`` (truncate large tool results, summarize at 85%
utilization, the emergency truncation last) bound to a real Agent whose model keeps the SDK's base
``count_tokens``. A round is one pipeline run, driven directly (``_run`` for ours,
``_run_strategies`` for the reference) with the projected tokens the agent would pass; the
conversation fills half the model's window, so summarization and the emergency step only measure.

* ``cm_steady_json_N``: N messages, half of them tool results of ~2 KB of API JSON, the rest
  text; no strategy acts (the state stays the same from round to round).
* ``cm_acting_json_N``: the same conversation whose newest tool result is a fresh ~13 KB JSON
  result (already stashed, as on arrival): truncation replaces it by a preview, the pipeline then
  measures the conversation again. Each round gets a fresh copy of that message in ``setup``.
* ``cm_steady_text_N``: text-only conversations of N messages.
* ``cm_stash_10mb_json``: ``Stash.store_message`` of one message holding a ~10 MB JSON tool
  result (the document of ``bench_json.py``) into in-memory storage, from the message to the
  stored bytes; a fresh copy of the message each round (``native-cached``: the same message
  every round; ``native``: each round also times one round of the reference just before ours,
  for a ratio from the same stretch of time, see ``paired.py``).

The coroutines are driven by hand (no event loop): nothing in these runs waits on I/O, and an
event loop's own cost per call would blur the smaller cases.

Run: ``pytest benches/bench_context_manager.py --benchmark-group-by=group``
"""

from __future__ import annotations

import functools
import gc
import json
import pickle
import random
import sys
from collections.abc import Callable, Coroutine
from pathlib import Path
from typing import Any

import pytest
import strands.storage as ref_storage
import strands_offload.storage as our_storage
from strands import Agent
from strands._context_manager.stash import Stash as RefStash
from strands.experimental.context_manager import ContextManager as RefContextManager
from strands_offload.context_manager import ContextManager
from strands_offload.context_manager.stash import Stash
from strands_offload.demo.scripted_model import Reply, ScriptedModel

sys.path.insert(0, str(Path(__file__).parent))

from json_document import build_document  # noqa: E402
from paired import Paired  # noqa: E402

SIZES = [50, 200, 1000]
ROUNDS = {50: 60, 200: 30, 1000: 12}

# --------------------------------------------------------------------------------------------------
# Conversations

_WORDS = (
    "the service returned a page of orders for the account and I will check the shipping status "
    "of each one before summarising totals refunds and open issues per customer region"
).split()
_NAMES = ["Ana Souza", "Kenji Watanabe", "Léa Martin", "Omar Haddad", "Priya Nair", "John O'Neil", "Zoë Müller"]
_CITIES = ["Lisbon", "Osaka", "Lyon", "Cairo", "Pune", "Dublin", "Zürich"]
_STATUSES = ["pending", "paid", "shipped", "delivered", "refunded"]


def _prose(rng: random.Random, chars: int) -> str:
    words: list[str] = []
    size = 0
    while size < chars:
        word = rng.choice(_WORDS)
        words.append(word)
        size += len(word) + 1
    return " ".join(words).capitalize() + "."


def _timestamp(rng: random.Random) -> str:
    return (
        f"2025-{rng.randint(1, 12):02d}-{rng.randint(1, 28):02d}T"
        f"{rng.randint(0, 23):02d}:{rng.randint(0, 59):02d}:{rng.randint(0, 59):02d}Z"
    )


def _order(rng: random.Random) -> dict[str, Any]:
    """One record of an orders API: string ids, urls and timestamps, booleans, ints, one float."""
    order_id = f"ord_{rng.getrandbits(48):012x}"
    customer_id = f"cus_{rng.getrandbits(40):010x}"
    name = rng.choice(_NAMES)
    return {
        "id": order_id,
        "url": f"https://api.example.com/v2/orders/{order_id}",
        "customer": {
            "id": customer_id,
            "name": name,
            "email": f"{name.split()[0].lower()}.{rng.randint(1, 999)}@example.com",
            "city": rng.choice(_CITIES),
        },
        "status": rng.choice(_STATUSES),
        "created_at": _timestamp(rng),
        "updated_at": _timestamp(rng),
        "paid": rng.random() < 0.8,
        "gift": rng.random() < 0.1,
        "items": rng.randint(1, 9),
        "total_cents": rng.randint(500, 250_000),
        "currency": rng.choice(["EUR", "USD", "JPY"]),
        "weight_kg": round(rng.uniform(0.1, 25.0), 2),
    }


def _page(rng: random.Random, records: int) -> Any:
    """A page of an orders API as a tool gets it: parsed from the response body."""
    page = rng.randint(1, 40)
    body = {
        "data": [_order(rng) for _ in range(records)],
        "page": page,
        "per_page": records,
        "total": rng.randint(400, 5000),
        "has_more": True,
        "next_url": f"https://api.example.com/v2/orders?page={page + 1}&cursor={rng.getrandbits(64):016x}",
    }
    return json.loads(json.dumps(body))


def _tool_call(rng: random.Random, number: int) -> dict[str, Any]:
    return {
        "role": "assistant",
        "content": [
            {"text": _prose(rng, rng.randint(80, 400))},
            {
                "toolUse": {
                    "toolUseId": f"tooluse_{number:05d}",
                    "name": "list_orders",
                    "input": {"page": rng.randint(1, 40), "status": rng.choice(_STATUSES), "limit": 6},
                }
            },
        ],
    }


def _tool_result(number: int, value: Any) -> dict[str, Any]:
    return {
        "role": "user",
        "content": [{"toolResult": {"toolUseId": f"tooluse_{number:05d}", "status": "success", "content": [value]}}],
    }


def json_conversation(size: int, seed: int = 1) -> list[dict[str, Any]]:
    """``size`` messages: a request, then calls and their ~2 KB JSON results (a closing answer if even)."""
    rng = random.Random(seed)
    messages: list[dict[str, Any]] = [{"role": "user", "content": [{"text": _prose(rng, 300)}]}]
    number = 0
    while len(messages) + 2 <= size:
        messages.append(_tool_call(rng, number))
        messages.append(_tool_result(number, {"json": _page(rng, 5)}))
        number += 1
    if len(messages) < size:
        messages.append({"role": "assistant", "content": [{"text": _prose(rng, 600)}]})
    return messages


def text_conversation(size: int, seed: int = 2) -> list[dict[str, Any]]:
    """``size`` alternating text messages: short questions, answers up to ~2.5 KB."""
    rng = random.Random(seed)
    messages: list[dict[str, Any]] = []
    for i in range(size):
        role = "user" if i % 2 == 0 else "assistant"
        chars = rng.randint(60, 600) if role == "user" else rng.randint(300, 2500)
        messages.append({"role": role, "content": [{"text": _prose(rng, chars)}]})
    return messages


def oversized_result(messages: list[dict[str, Any]]) -> tuple[int, dict[str, Any]]:
    """Index of the newest tool result and a fresh, ~13 KB JSON result for the same call."""
    index = max(i for i, m in enumerate(messages) if "toolResult" in m["content"][0])
    number = int(messages[index]["content"][0]["toolResult"]["toolUseId"].rsplit("_", 1)[1])
    return index, _tool_result(number, {"json": _page(random.Random(index), 40)})


# --------------------------------------------------------------------------------------------------
# Driving the pipelines


def drive(coroutine: Coroutine[Any, Any, Any]) -> Any:
    """Run a coroutine that never waits on I/O to its end, without an event loop."""
    try:
        coroutine.send(None)
    except StopIteration as done:
        return done.value
    coroutine.close()
    raise RuntimeError("the coroutine waited on something: drive it with an event loop")


def _model() -> ScriptedModel:
    return ScriptedModel(lambda _messages: Reply("ok"))  # keeps the SDK's base count_tokens


class Pipeline:
    """One implementation's ContextManager() bound to an Agent, run as on each model call."""

    def __init__(self, member: str, messages: list[dict[str, Any]], manager: Any = None) -> None:
        self.model = _model()
        if manager is None:
            manager = RefContextManager() if member == "reference" else ContextManager()
        self.manager: Any = manager
        self.agent = Agent(
            model=self.model, messages=list(messages), context_manager=self.manager, callback_handler=None
        )
        # Each one's whole model-call hook: ours also keeps the savings ledger's books.
        if member == "reference":
            self.run_pipeline = self.manager._run_strategies
        else:
            self.run_pipeline = lambda agent, tokens: self.manager._model_call(agent, {}, tokens)
        self.reset(messages)
        drive(self.run_pipeline(self.agent, self.tokens))  # the backfill of the stash happens once, here

    def reset(self, messages: list[dict[str, Any]]) -> None:
        """Make ``messages`` the conversation, half the window full."""
        self.agent.messages = messages
        self.tokens = drive(self.model.count_tokens(messages))
        self.model.update_config(context_window_limit=2 * self.tokens)

    def __call__(self) -> bool:
        return bool(drive(self.run_pipeline(self.agent, self.tokens)))


@functools.cache
def conversation(kind: str, size: int) -> list[dict[str, Any]]:
    return json_conversation(size) if kind == "json" else text_conversation(size)


# --------------------------------------------------------------------------------------------------
# Benches


class Acting:
    """A pipeline given a fresh oversized tool result (stashed as on arrival) before each call."""

    def __init__(self, member: str, size: int, manager: Any = None) -> None:
        self.base = conversation("json", size)
        self.index, _ = oversized_result(self.base)
        self.pipeline = Pipeline(member, list(self.base), manager)

    def prepare(self) -> None:
        messages = list(self.base)
        messages[self.index] = oversized_result(self.base)[1]
        drive(self.pipeline.manager.stash.store_message(messages[self.index]))  # as on arrival
        self.pipeline.reset(messages)

    def __call__(self, _: object = None) -> bool:
        return self.pipeline()


def _bench_pipeline(
    benchmark: Any, member: str, make: Callable[[str], Any], rounds: int, prepare: bool = False
) -> bool:
    """Rounds of ``make(member)()``; ours alternate with the reference's (``paired.py``).

    With ``prepare``, each call (either member's) first gets its fresh input, untimed.
    """
    subject = make(member)
    counterpart = None
    if member == "native":
        reference = make("reference")
        counterpart = Paired("reference", reference.prepare if prepare else lambda: None, lambda _: reference())

    def setup() -> None:
        if counterpart is not None:
            counterpart.round()
        if prepare:
            subject.prepare()
        gc.collect(0)  # a collection the building of this round would trigger is not the pipeline's

    acted = benchmark.pedantic(subject, setup=setup, rounds=rounds, warmup_rounds=1)
    if counterpart is not None:
        counterpart.record(benchmark, rounds)
    return bool(acted)


@pytest.mark.parametrize("size", SIZES)
@pytest.mark.parametrize("member", ["reference", "native"])
def test_steady_json(benchmark: Any, member: str, size: int) -> None:
    benchmark.group = f"cm_steady_json_{size}"
    acted = _bench_pipeline(benchmark, member, lambda m: Pipeline(m, list(conversation("json", size))), ROUNDS[size])
    assert acted is False


@pytest.mark.parametrize("size", SIZES)
@pytest.mark.parametrize("member", ["reference", "native"])
def test_acting_json(benchmark: Any, member: str, size: int) -> None:
    benchmark.group = f"cm_acting_json_{size}"
    made: list[Acting] = []

    def make(m: str) -> Acting:
        made.append(Acting(m, size))
        return made[-1]

    acted = _bench_pipeline(benchmark, member, make, ROUNDS[size], prepare=True)
    assert acted is True
    acting = made[0]
    message = acting.pipeline.agent.messages[acting.index]
    assert "[Stashed]" in message["content"][0]["toolResult"]["content"][0]["text"]


@pytest.mark.parametrize("size", SIZES)
@pytest.mark.parametrize("member", ["reference", "native"])
def test_steady_text(benchmark: Any, member: str, size: int) -> None:
    benchmark.group = f"cm_steady_text_{size}"
    make = lambda m: Pipeline(m, list(conversation("text", size)))  # noqa: E731
    acted = _bench_pipeline(benchmark, member, make, ROUNDS[size] * 2)
    assert acted is False


@functools.cache
def big_document_pickle() -> bytes:
    return pickle.dumps(build_document(10_000_000))


STASH_ROUNDS = 9


def _store(stash: Any, message: dict[str, Any]) -> None:
    drive(stash.store_message(message))


@pytest.mark.parametrize("member", ["reference", "native", "native-cached"])
def test_stash_10mb_json(benchmark: Any, member: str) -> None:
    """Each round stashes a fresh copy, as a tool result is stashed once, when it arrives.

    ``native-cached`` stashes the same message every round: CPython then keeps the UTF-8 of its
    non-ASCII strings from the first round (the reference's cost does not change that way).
    """
    benchmark.group = "cm_stash_10mb_json"
    raw = big_document_pickle()
    if member == "reference":
        storage: Any = ref_storage.InMemoryStorage()
        stash: Any = RefStash(storage, "bench-session", "bench-agent")
    else:
        storage = our_storage.InMemoryStorage()
        stash = Stash(storage, "bench-session", "bench-agent")
    held: list[dict[str, Any]] = []
    # ``native``: each round of ours follows one round of the reference (see paired.py).
    reference_rounds = (
        Paired(
            "reference",
            lambda: _tool_result(0, {"json": pickle.loads(raw)}),
            functools.partial(_store, RefStash(ref_storage.InMemoryStorage(), "bench-session", "bench-agent")),
        )
        if member == "native"
        else None
    )

    def setup() -> tuple[tuple[dict[str, Any]], dict[str, Any]]:
        if reference_rounds is not None:
            reference_rounds.round()
        if not held or member != "native-cached":
            held.clear()  # the previous round's document goes here, not in the timed call
            held.append(_tool_result(0, {"json": pickle.loads(raw)}))
            gc.collect(0)
        return (held[0],), {}

    benchmark.pedantic(functools.partial(_store, stash), setup=setup, rounds=STASH_ROUNDS, warmup_rounds=1)
    if reference_rounds is not None:
        reference_rounds.record(benchmark, STASH_ROUNDS)
    stored = drive(storage.read("context/bench-session/scopes/agent/bench-agent/tooluse_00000_0"))
    assert stored == json.dumps(held[0]["content"][0]["toolResult"]["content"][0]).encode()
