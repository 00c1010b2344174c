"""The reduction recipe made incrementally (reusing the unchanged messages' part) equals the one made from scratch."""

from __future__ import annotations

import random
from typing import Any

import pytest
from strands_offload import _native
from strands_offload.context_manager._persist import ReductionLog, derive, drop_rule, truncate_rule


def _message(rng: random.Random, number: int) -> dict[str, Any]:
    # Every message carries a tracking id, as the SDK's do (what the log matches messages by).
    if number % 2:
        text = f"answer {number} " + "w " * rng.randint(1, 30)
        return {"role": "assistant", "content": [{"text": text}], "tracking_id": f"id-{number}"}
    result = {"toolUseId": f"t{number}", "status": "success", "content": [{"text": "r " * rng.randint(10, 3000)}]}
    return {"role": "user", "content": [{"toolResult": result}], "tracking_id": f"id-{number}"}


@pytest.mark.parametrize("seed", range(40))
def test_incremental_recipes_equal_whole_ones(seed: int) -> None:
    rng = random.Random(seed)
    rules = [truncate_rule({"preview_tokens": 100}, None, True), drop_rule(True)]
    incremental, whole = ReductionLog(rules), ReductionLog(rules)
    trail = _native.IdentityTrail()
    messages: list[dict[str, Any]] = []
    number = 0
    for _ in range(60):
        for _ in range(rng.randint(0, 3)):  # arrivals
            message = _message(rng, number)
            number += 1
            messages.append(message)
            incremental.arrived(message)
            whole.arrived(message)
        action = rng.random()
        if messages and action < 0.3:  # a preview made of a block, in place of it
            message = rng.choice(messages)
            block = message["content"][0]
            made = derive(rng.choice(rules), block, message.get("tracking_id", "unknown"), 0)
            if made is not None:
                message["content"][0] = made
        elif len(messages) > 3 and action < 0.4:  # messages removed, a marker message in their place
            start = rng.randrange(1, len(messages) - 2)
            marker = {"role": "assistant", "content": [{"text": "[summary]"}], "tracking_id": f"marker-{number}"}
            messages[start : start + 2] = [marker]
        elif messages and action < 0.5:  # a redaction in place, the same length
            message = rng.choice(messages)
            block = message["content"][0]
            if "toolResult" in block:
                text = block["toolResult"]["content"][0]
                text["text"] = "X" * len(text["text"])
            else:
                block["text"] = "Y" * len(block["text"])
        elif messages and action < 0.55:  # a marker carried by a copy of a message (its tracking id kept)
            index = rng.randrange(len(messages))
            copy_ = dict(messages[index])
            copy_["content"] = [*copy_["content"], {"text": "[marker]"}]
            messages[index] = copy_
        stable = trail.compare(messages)
        whole.reuse_nothing()
        assert incremental.recipe(messages, stable) == whole.recipe(messages)
