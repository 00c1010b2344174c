"""The Strands base model's token heuristic, written once.

Text counts ``ceil(characters / 4)`` tokens and JSON ``ceil(len(json.dumps(value)) / 2)``;
the reference's previews keep ``tokens * 4`` characters. The native core has the same
rule once too (``offload_core::tokens::heuristic_count``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from strands.models.model import Model

from . import _native, _seam
from ._native import TokenCounter, token_counter

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


# OpenAI model families by model id prefix, and the tiktoken encoding each uses.
_OPENAI_ENCODINGS = (
    (("gpt-4o", "gpt-4.1", "gpt-4.5", "gpt-5", "o1", "o3", "o4", "chatgpt-4o"), "o200k_base"),
    (("gpt-4", "gpt-3.5"), "cl100k_base"),
)


def counter_for(tokenizer: str | None, model: object) -> TokenCounter | None:
    """The token counter a ``tokenizer=`` setting means for ``model``, or None for the model's own counting.

    ``"auto"`` picks the encoding of an OpenAI model (strands' ``OpenAIModel`` with a model id of a
    known family) and means None for any other model; the offloader and the context manager both
    decide here.
    """
    if tokenizer is None:
        return None
    if tokenizer != "auto":
        return token_counter(tokenizer)
    try:
        from strands.models.openai import OpenAIModel
    except ImportError:  # the openai extra is not installed
        return None
    if not isinstance(model, OpenAIModel):
        return None
    config = model.get_config()
    model_id = str(config.get("model_id", "") if isinstance(config, dict) else "").lower()
    for prefixes, encoding in _OPENAI_ENCODINGS:
        if model_id.startswith(prefixes):
            return token_counter(encoding)
    return None


def block_tokens(block: Any, counter: TokenCounter) -> int:
    """``sdk_walk_tokens``, without the SDK's walk for the shapes the ledger counts most.

    A text block, or a tool result whose items are all text blocks, is counted natively: the SDK
    counts exactly those texts (chars/4, or BPE with an exact counter). Anything else takes the walk.
    """
    if type(block) is dict and len(block) == 1:
        count = _native.count_tokens if counter.exact else _chars_over_four
        text = block.get("text")
        if type(text) is str:
            return count(text, counter)
        result = block.get("toolResult")
        if type(result) is dict:
            items = result.get("content", [])
            if type(items) is list and all(
                type(item) is dict and len(item) == 1 and type(item.get("text")) is str for item in items
            ):
                return sum(count(item["text"], counter) for item in items)
    return sdk_walk_tokens(block, counter)


def _chars_over_four(text: str, _counter: TokenCounter) -> int:
    """The heuristic counter's count of ``text`` (code points / 4, rounded up), without a native call."""
    return text_tokens(len(text))


def sdk_walk_tokens(block: Any, counter: TokenCounter) -> int:
    """Tokens of a content block by the SDK's own block walk, measured by ``counter``.

    For the shapes the native meter leaves alone (subclasses, texts that are not ``str``): the
    SDK's walk decides what is counted and raises what it raises; the heuristic counter measures
    with the SDK's own text and JSON estimates, an exact one with BPE tokens of the text and of the
    single-line JSON (0 for a value ``json.dumps`` rejects).
    """
    walk = _seam.accelerate_fallback("_count_content_block_tokens")
    if not counter.exact:
        text_estimate = _seam.accelerate_fallback("_heuristic_estimate_text")
        json_estimate = _seam.accelerate_fallback("_heuristic_estimate_json")
        return int(walk(block, text_estimate, json_estimate))

    def text_tokens(text: str) -> int:
        return _native.count_tokens(text, counter)

    def json_tokens(value: Any) -> int:
        try:
            return _native.count_tokens(_native.json_dumps(value), counter)
        except (TypeError, ValueError):
            return 0

    return int(walk(block, text_tokens, json_tokens))
