"""Message-list surgery shared by the strategies: pins, pair-safe removal, markers, alternation.

The pipeline edits ``agent.messages`` in place and finds messages by identity, so nothing here
copies the list.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any


def has_pin(message: Mapping[str, Any]) -> bool:
    """Whether ``message`` carries ``metadata.custom.pinned is True``."""
    metadata = message.get("metadata")
    return metadata is not None and metadata.get("custom", {}).get("pinned") is True


def _call_ids(message: Mapping[str, Any]) -> set[str]:
    ids: set[str] = set()
    for block in message.get("content", []):
        if isinstance(block, dict):
            if "toolUse" in block:
                found = block["toolUse"].get("toolUseId")
            elif "toolResult" in block:
                found = block["toolResult"].get("toolUseId")
            else:
                continue
            if found:
                ids.add(found)
    return ids


def is_pinned(messages: list[Any], index: int) -> bool:
    """Whether message ``index`` is pinned, itself or through the adjacent half of its tool call."""
    if has_pin(messages[index]):
        return True
    neighbours = [messages[i] for i in (index - 1, index + 1) if 0 <= i < len(messages) and has_pin(messages[i])]
    if not neighbours:
        return False
    own = _call_ids(messages[index])
    return bool(own) and any(own & _call_ids(other) for other in neighbours)


def _holds(message: Mapping[str, Any], kind: str) -> bool:
    return any(kind in block for block in message["content"])


def removable_with_partner(messages: list[Any], index: int) -> list[Any]:
    """Message ``index`` and the other half of its tool call, or nothing when that cannot go.

    Message 0 and the last message (the one the next call answers) never go; a call or result
    whose partner is one of them stays too.
    """
    last = len(messages) - 1
    if index <= 0 or index >= last:
        return []
    message = messages[index]
    group = [message]
    if _holds(message, "toolResult") and _holds(messages[index - 1], "toolUse"):
        if index - 1 == 0:
            return []
        group.append(messages[index - 1])
    if _holds(message, "toolUse") and _holds(messages[index + 1], "toolResult"):
        if index + 1 == last:
            return []
        group.append(messages[index + 1])
    return group


def remove_with_partners(messages: list[Any], chosen: Iterable[Any]) -> tuple[int, int]:
    """Remove ``chosen`` messages (and their call partners) in place.

    Returns:
        How many messages went, and the lowest index that went (``len(messages)`` when none).
    """
    position = {id(message): i for i, message in enumerate(messages)}
    doomed: set[int] = set()
    for message in chosen:
        index = position.get(id(message))
        if index is None:
            continue
        doomed.update(position[id(m)] for m in removable_with_partner(messages, index))
    if not doomed:
        return 0, len(messages)
    for index in sorted(doomed, reverse=True):
        del messages[index]
    return len(doomed), min(doomed)


def removed_messages(before: list[Any], after: list[Any]) -> list[Any]:
    """The messages of ``before`` that ``after`` no longer holds (by identity), in order."""
    kept = {id(message) for message in after}
    return [message for message in before if id(message) not in kept]


def place_marker(messages: list[Any], index: int, text: str) -> None:
    """Leave ``text`` where messages were removed, as assistant content.

    It joins the assistant message just before the gap (else just after it) as a new last block,
    on a copy that keeps the tracking id; otherwise it becomes an assistant message of its own.
    Message 0 is never a carrier.
    """
    index = max(1, min(index, len(messages)))
    for carrier_index in (index - 1, index):
        if 0 < carrier_index < len(messages) and messages[carrier_index]["role"] == "assistant":
            carrier = dict(messages[carrier_index])
            carrier["content"] = [*carrier["content"], {"text": text}]
            messages[carrier_index] = carrier
            return
    messages.insert(index, {"role": "assistant", "content": [{"text": text}]})


def restore_alternation(messages: list[Any]) -> None:
    """Merge every run of same-role neighbours into one message, in place.

    The merged message keeps the first one's tracking id; it is pinned when any part was, and
    carries no other metadata.
    """
    kept = 0
    for message in list(messages):
        if kept and messages[kept - 1]["role"] == message["role"]:
            first = messages[kept - 1]
            merged: dict[str, Any] = {"role": first["role"], "content": [*first["content"], *message["content"]]}
            if "tracking_id" in first:
                merged["tracking_id"] = first["tracking_id"]
            if has_pin(first) or has_pin(message):
                merged["metadata"] = {"custom": {"pinned": True}}
            messages[kept - 1] = merged
        else:
            messages[kept] = message
            kept += 1
    del messages[kept:]
