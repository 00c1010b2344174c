"""The identity pass the context manager makes once per model call (see ``_native.IdentityTrail``).

Every object a message holds (dict keys and values, list items, down to strings and numbers) is
compared by identity with the last call's walk, holding a reference to each, so no identity can be
reused by a newer object; the result is how many leading messages are unchanged. A change that did
not come through the pipeline (a tool, user code, a guardrail redaction in place) replaces some
object, and is seen. Native when the extension has it; the same walk in Python otherwise.
"""

from __future__ import annotations

from typing import Any

from .. import _native

__all__ = ["IdentityTrail", "PyIdentityTrail"]

_MAX_DEPTH = 512


def _walk(message: Any, out: list[Any]) -> None:
    stack: list[tuple[Any, int]] = [(message, 0)]
    while stack:
        node, depth = stack.pop()
        if depth > _MAX_DEPTH:
            out.append(object())  # never the same as another call's: the message reads as changed
            continue
        out.append(node)
        if isinstance(node, dict):
            for key, value in reversed(list(node.items())):
                stack.append((value, depth + 1))
                stack.append((key, depth + 1))
        elif isinstance(node, (list, tuple)):
            stack.extend((item, depth + 1) for item in reversed(node))


class PyIdentityTrail:
    """``_native.IdentityTrail`` in Python (the reference the native one is tested against)."""

    def __init__(self) -> None:
        self._nodes: list[Any] = []
        self._starts: list[int] = []

    def _known(self) -> int:
        return max(0, len(self._starts) - 1)

    def compare(self, messages: list[Any]) -> int:
        nodes: list[Any] = []
        starts: list[int] = []
        unchanged: int | None = None
        known = self._known()
        for index, message in enumerate(messages):
            start = len(nodes)
            starts.append(start)
            _walk(message, nodes)
            if unchanged is None:
                if index >= known:
                    unchanged = index
                else:
                    old = self._nodes[self._starts[index] : self._starts[index + 1]]
                    new = nodes[start:]
                    if len(old) != len(new) or any(a is not b for a, b in zip(old, new, strict=True)):
                        unchanged = index
        starts.append(len(nodes))
        first = unchanged if unchanged is not None else min(len(messages), known)
        self._nodes, self._starts = nodes, starts
        return first

    def update_from(self, messages: list[Any], start: int) -> None:
        keep = min(start, self._known(), len(messages))
        del self._nodes[self._starts[keep] if keep < len(self._starts) else 0 :]
        del self._starts[keep:]
        for message in messages[keep:]:
            self._starts.append(len(self._nodes))
            _walk(message, self._nodes)
        self._starts.append(len(self._nodes))

    def clear(self) -> None:
        self._nodes.clear()
        self._starts.clear()

    def __len__(self) -> int:
        return self._known()


IdentityTrail: Any = getattr(_native, "IdentityTrail", PyIdentityTrail)
