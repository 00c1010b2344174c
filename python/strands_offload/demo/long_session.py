"""The second demo scene: a long session that the context manager keeps inside the window.

An analyst agent pages through an orders API, one large JSON page per tool call. The context
manager truncates each page on arrival (the original goes to the stash), summarizes the oldest
messages when the window is 85% full, and the model later greps a stashed page back through
``retrieve_context``. The same script runs with the reference's ``ContextManager`` and ours, so
the two conversations can be compared message for message.
"""

from __future__ import annotations

import json
import random
import re
import time
from collections.abc import AsyncIterable, Callable
from dataclasses import dataclass
from typing import Any

from strands import Agent, tool
from strands.types.content import Messages
from strands.types.streaming import StreamEvent

from .scripted_model import Reply, ScriptedModel, ToolCall

WINDOW = 8_000
PAGES = 12
_REF = re.compile(r"\[ref: ([^\]]+)\]")
_CITIES = ("Lisbon", "Osaka", "Lagos", "Quito", "Tallinn", "Perth")


def orders_page(page: int, rows: int = 60) -> dict[str, Any]:
    """A deterministic page of an orders API (about 10 KB of JSON)."""
    rng = random.Random(page)
    orders = []
    for i in range(rows):
        number = page * rows + i
        status = "failed" if number % 17 == 3 else rng.choice(("shipped", "delivered", "pending"))
        orders.append(
            {
                "id": f"ord_{number:06d}",
                "customer": f"cus_{rng.randrange(10**6):06d}",
                "city": rng.choice(_CITIES),
                "status": status,
                "total_cents": rng.randrange(500, 90_000),
                "created_at": f"2026-11-{1 + number % 28:02d}T{number % 24:02d}:00:00Z",
                "note": "payment declined by issuer" if status == "failed" else "",
            }
        )
    return {"page": page, "next": page + 1 if page < PAGES else None, "orders": orders}


def _summary_request(messages: Messages) -> bool:
    content = messages[0]["content"] if messages else []
    return bool(content) and content[0].get("text") == "<content>"


def session_script() -> Callable[[Messages], Reply]:
    """Fetch every page, then find the failed orders again in a stashed page, then answer."""

    def script(messages: Messages) -> Reply:
        if _summary_request(messages):
            blocks = len(messages[0]["content"]) - 2
            return Reply(f"Pages fetched so far were scanned; {blocks} blocks condensed; failed orders are rare.")
        last = messages[-1]
        results = [b["toolResult"] for b in last["content"] if "toolResult" in b] if last["role"] == "user" else []
        if not results:
            return Reply("Fetching the first page.", [ToolCall("fetch_orders", {"page": 1}, "tu_page_01")])
        done = results[0]["toolUseId"]
        if done.startswith("tu_page_"):
            page = int(done.rsplit("_", 1)[1])
            if page < PAGES:
                call = ToolCall("fetch_orders", {"page": page + 1}, f"tu_page_{page + 1:02d}")
                return Reply(f"Page {page} read.", [call])
            refs = [r for m in messages for b in m["content"] if "toolResult" in b for r in _REF.findall(str(b))]
            if refs:
                call = ToolCall("retrieve_context", {"reference": refs[0], "pattern": "declined"}, "tu_grep")
                return Reply("Checking the failed orders in the first stashed page.", [call])
            return Reply("All pages read; nothing was offloaded.")
        header = "\n".join(item.get("text", "") for item in results[0]["content"]).split("\n", 1)[0]
        return Reply(f"Done. The stashed page search says: {header}")

    return script


class _MeteredModel(ScriptedModel):
    """The scripted model, remembering the input size of each agent-loop call (not summaries)."""

    def __init__(self, script: Callable[[Messages], Reply]) -> None:
        super().__init__(script)
        self.usage: list[int] = []

    async def stream(self, messages: Messages, *args: Any, **kwargs: Any) -> AsyncIterable[StreamEvent]:
        if not _summary_request(messages):
            self.usage.append(await self.count_tokens(messages))
        async for event in super().stream(messages, *args, **kwargs):
            yield event


@dataclass
class SessionRun:
    """What one run of the long session produced."""

    messages: Messages
    usage: list[int]
    seconds: float
    answer: str


def run_long_session(manager: Any) -> SessionRun:
    """Run the session with ``manager`` as the agent's context manager."""

    @tool
    def fetch_orders(page: int) -> dict[str, Any]:
        """Return one page of the orders API."""
        return {"status": "success", "content": [{"json": orders_page(page)}]}

    model = _MeteredModel(session_script())
    model.update_config(context_window_limit=WINDOW)
    agent = Agent(model=model, tools=[fetch_orders], context_manager=manager, callback_handler=None)
    started = time.perf_counter()
    answer = agent("Which orders failed this month?")
    seconds = time.perf_counter() - started
    return SessionRun(agent.messages, model.usage, seconds, str(answer).strip())


def canonical(messages: Messages) -> str:
    """The conversation as comparable JSON (tracking ids and usage metadata left out)."""
    kept = [{"role": m["role"], "content": m["content"]} for m in messages]
    return json.dumps(kept, sort_keys=True, default=repr)
