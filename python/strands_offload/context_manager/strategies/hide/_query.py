"""What a turn asks for: the query tool definitions are ranked against, and acknowledgements.

The query is the text of the newest user message that has text (a user turn holding only tool
results is the loop's, not the user's). A turn whose content words, after :data:`STOP_WORDS`, are
all in :data:`ACKNOWLEDGEMENTS` ("yes", "ok, go ahead", "thanks!") asks for nothing new: the tools
of the previous turn stay.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

__all__ = ["ACKNOWLEDGEMENTS", "STOP_WORDS", "is_acknowledgement", "latest_user_text"]

#: Words that only agree, thank or tell the agent to go on.
ACKNOWLEDGEMENTS: frozenset[str] = frozenset(
    {
        "absolutely", "agree", "agreed", "ahead", "alright", "approve", "approved", "awesome", "carry",
        "confirm", "confirmed", "continue", "cool", "correct", "definitely", "do", "done", "exactly",
        "fine", "go", "good", "great", "k", "kk", "lgtm", "nice", "ok", "okay", "on", "perfect",
        "please", "pls", "proceed", "right", "sounds", "sure", "thank", "thanks", "thx", "ty", "y",
        "yeah", "yep", "yes", "yup",
    }
)  # fmt: skip

#: Function words left out before a turn is judged an acknowledgement.
STOP_WORDS: frozenset[str] = frozenset(
    {
        "a", "all", "am", "an", "and", "are", "as", "at", "be", "but", "by", "for", "i", "if", "in",
        "is", "it", "its", "let", "lets", "me", "much", "my", "now", "of", "so", "that", "the", "then",
        "this", "to", "very", "we", "with", "you", "your",
    }
)  # fmt: skip

_WORD = re.compile(r"[^\W_]+(?:'[^\W_]+)?")


def latest_user_text(messages: Sequence[Mapping[str, Any]]) -> str | None:
    """The text of the newest user message that has any (``None`` when none has)."""
    for message in reversed(messages):
        if message.get("role") != "user":
            continue
        content = message.get("content")
        if not isinstance(content, list):
            continue
        texts = [block["text"] for block in content if isinstance(block, dict) and isinstance(block.get("text"), str)]
        if any(text.strip() for text in texts):
            return "\n".join(texts)
    return None


def is_acknowledgement(text: str) -> bool:
    """Whether every content word of ``text`` is an acknowledgement (also when it has none)."""
    words = [word.replace("'", "") for word in _WORD.findall(text.casefold())]
    return all(word in ACKNOWLEDGEMENTS for word in words if word not in STOP_WORDS)
