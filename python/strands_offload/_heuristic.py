"""The Strands base model's token heuristic, written once.

Text counts ``ceil(characters / 4)`` tokens and JSON ``ceil(len(json.dumps(value)) / 2)``;
the reference's previews keep ``tokens * 4`` characters. The native core has the same
rule once too (``offload_core::tokens::heuristic_count``).
"""

from __future__ import annotations

CHARS_PER_TOKEN = 4
JSON_CHARS_PER_TOKEN = 2


def text_tokens(characters: int) -> int:
    """Tokens the heuristic gives a text of ``characters`` code points."""
    return -(-characters // CHARS_PER_TOKEN)


def json_tokens(json_characters: int) -> int:
    """Tokens the heuristic gives a JSON value whose single-line ``json.dumps`` has this length."""
    return -(-json_characters // JSON_CHARS_PER_TOKEN)


def budget_chars(tokens: int) -> int:
    """Characters the reference keeps for a budget of ``tokens`` tokens."""
    return tokens * CHARS_PER_TOKEN
