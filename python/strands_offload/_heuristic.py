"""The Strands base model's token heuristic, written once.

Text counts ``ceil(characters / 4)`` tokens and JSON ``ceil(len(json.dumps(value)) / 2)``;
the reference's previews keep ``tokens * 4`` characters. The native core has the same
rule once too (``offload_core::tokens::heuristic_count``).
"""

from __future__ import annotations

from collections.abc import Mapping

from strands.models.model import Model

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


# Providers whose count_tokens hands over to the base heuristic unless native counting is enabled.
_FALLS_BACK_UNLESS_NATIVE = {
    ("strands.models.bedrock", "BedrockModel"),
    ("strands.models.anthropic", "AnthropicModel"),
}


def uses_base_heuristic(model: object) -> bool:
    """Whether ``model.count_tokens`` ends in the SDK's chars/4 heuristic for any input.

    The one rule by which both the offloader and the context manager decide to count here
    instead of calling the model: the base method itself, or a provider override known to
    hand over to it (Bedrock and Anthropic, unless their native counting is switched on).
    """
    if getattr(type(model), "count_tokens", None) is Model.count_tokens:
        return True
    for cls in type(model).__mro__:
        if "count_tokens" in vars(cls):
            if (cls.__module__, cls.__qualname__) not in _FALLS_BACK_UNLESS_NATIVE:
                return False
            config = getattr(model, "config", None)
            return not (isinstance(config, Mapping) and config.get("use_native_token_count") is True)
    return False
