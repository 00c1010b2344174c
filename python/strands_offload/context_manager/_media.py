"""``media_tokens=``: images, documents and videos counted as the provider bills them.

The SDK's estimate counts media as 0 tokens, and its projection of the next request (the last
reported usage plus the estimate of the messages after it) so misses every image added since the
last response. With the option on, this module is the one place the correction is made: the
media of the messages after the usage baseline (all of them on a cold start) are counted with the
provider's rule (``_native.media_tokens``) and added to the projection, and the meter's counts of
whole conversations include their media. Per-block thresholds keep counting text only
(truncating cannot free media). Where the provider's own counting is on
(``use_native_token_count``), the provider already counts media and nothing is added.

The rules and the model-id table are in ``docs/design/media-tokens.md``. The manager registers its
setting per agent (:func:`bind`); everything that projects or measures for an agent asks
:func:`rule_of`.
"""

from __future__ import annotations

import logging
import re
import weakref
from collections.abc import Mapping, Sequence
from typing import Any

from .. import _native, _seam

__all__ = [
    "MEDIA_TOKENS_CHOICES",
    "baseline_start",
    "bind",
    "check_option",
    "fit_summarizer_blocks",
    "media_after_baseline",
    "placeholder",
    "projected_input_tokens",
    "protected_from",
    "resolve",
    "rule_of",
    "stash_refs",
]

logger = logging.getLogger(__name__)

MEDIA_TOKENS_CHOICES: tuple[str, ...] = ("auto", "anthropic", "openai", "gemini")

_MEDIA_KINDS = ("image", "document", "video")


def check_option(value: object) -> str | None:
    """``value`` when it is a valid ``media_tokens`` setting; ``ValueError`` listing the choices otherwise."""
    if value is None or (isinstance(value, str) and value in MEDIA_TOKENS_CHOICES):
        return value
    choices = ", ".join(repr(choice) for choice in MEDIA_TOKENS_CHOICES)
    raise ValueError(f"media_tokens must be one of {choices} or None, not {value!r}")


# ------------------------------------------------------------------ choosing the rule

# Bedrock: "<region group>.anthropic.<model>" (us., eu., apac., global., us-gov., ...) or "anthropic.<model>".
_BEDROCK_ANTHROPIC = re.compile(r"^(?:[a-z]{2,6}(?:-[a-z]+)?\.)?anthropic\.")

# OpenAI families, most specific first: (model id prefixes, rule).
_OPENAI_FAMILIES: tuple[tuple[tuple[str, ...], str], ...] = (
    (("gpt-4o-mini",), "openai-tile-2833"),
    (("gpt-4.1-mini", "gpt-5-mini"), "openai-patch-1.62"),
    (("gpt-4.1-nano", "gpt-5-nano"), "openai-patch-2.46"),
    (("o4-mini",), "openai-patch-1.72"),
    (("computer-use-preview",), "openai-tile-65"),
    (("gpt-5",), "openai-tile-70"),
    (("o1", "o3"), "openai-tile-75"),
    (("gpt-4o", "gpt-4.1", "gpt-4.5", "chatgpt-4o", "gpt-4-turbo", "gpt-4-vision"), "openai-tile-85"),
)
_OPENAI_DEFAULT = "openai-tile-85"


def _model_id(model: Any) -> str:
    try:
        config = model.get_config()
    except Exception:
        config = getattr(model, "config", None)
    model_id = config.get("model_id") if isinstance(config, Mapping) else getattr(config, "model_id", None)
    return model_id.lower() if isinstance(model_id, str) else ""


def _class_names(model: Any) -> set[str]:
    return {f"{cls.__module__}.{cls.__qualname__}" for cls in type(model).__mro__}


def _names_anthropic_model(model_id: str) -> bool:
    """A Bedrock id, cross-region id, or model / inference-profile ARN naming an Anthropic model."""
    tail = model_id.rsplit("/", 1)[-1]  # ARNs and provider-prefixed ids end with the model's id
    return bool(_BEDROCK_ANTHROPIC.match(tail))


def _openai_rule(model_id: str) -> str | None:
    tail = model_id.rsplit("/", 1)[-1]
    for prefixes, rule in _OPENAI_FAMILIES:
        if tail.startswith(prefixes):
            return rule
    return None


def _counts_media_itself(model: Any) -> bool:
    """Whether the model's ``count_tokens`` is the provider's own (which counts media)."""
    try:
        config = model.get_config()
    except Exception:
        config = getattr(model, "config", None)
    return isinstance(config, Mapping) and config.get("use_native_token_count") is True


def resolve(option: str | None, model: Any) -> str | None:
    """The native rule name ``option`` means for ``model`` (``None``: no media counting)."""
    if option is None or _counts_media_itself(model):
        return None
    model_id = _model_id(model)
    if option == "anthropic":
        return "anthropic"
    if option == "gemini":
        return "gemini"
    if option == "openai":
        return _openai_rule(model_id) or _OPENAI_DEFAULT
    # "auto": by class, then by model id.
    classes = _class_names(model)
    if "strands.models.anthropic.AnthropicModel" in classes or _names_anthropic_model(model_id):
        return "anthropic"
    if "strands.models.gemini.GeminiModel" in classes:
        return "gemini"
    if classes & {"strands.models.openai.OpenAIModel", "strands.models.openai_responses.OpenAIResponsesModel"}:
        return _openai_rule(model_id)
    return None


# ------------------------------------------------------------------ per agent

_OPTIONS: weakref.WeakKeyDictionary[Any, str] = weakref.WeakKeyDictionary()


def bind(agent: Any, option: str | None) -> None:
    """Record ``agent``'s ``media_tokens`` setting (``None`` removes it)."""
    try:
        if option is None:
            _OPTIONS.pop(agent, None)
        else:
            _OPTIONS[agent] = option
    except TypeError:  # an agent that cannot be weakly referenced or hashed: no media counting
        logger.warning("agent=<%s> | media_tokens needs a hashable agent; media not counted", type(agent).__name__)


def rule_of(agent: Any) -> str | None:
    """The rule for ``agent``'s current model, or ``None`` when media are not counted for it."""
    try:
        option = _OPTIONS.get(agent)
    except TypeError:
        return None
    return None if option is None else resolve(option, agent.model)


def media_tokens(messages: Sequence[Any], rule: str | None) -> int:
    """Tokens of the media in ``messages`` under ``rule`` (0 without a rule)."""
    if rule is None or not messages:
        return 0
    return int(_native.media_tokens(messages if isinstance(messages, list) else list(messages), rule))


def baseline_start(messages: Sequence[Any]) -> int:
    """Where the messages the event loop's projection estimates start (after the last reported usage)."""
    if not _seam.available("input-projection"):
        return 0
    for index in range(len(messages) - 1, -1, -1):
        message = messages[index]
        if message.get("role") == "assistant" and message.get("metadata", {}).get("usage"):
            return index + 1
    return 0


def _after_baseline(messages: Sequence[Any]) -> Sequence[Any]:
    """The messages the event loop's projection estimates (those after the last reported usage)."""
    start = baseline_start(messages)
    return messages[start:] if start else messages


def media_after_baseline(agent: Any, messages: Sequence[Any] | None = None) -> int:
    """Media tokens the event loop's projection misses for ``messages`` (default: the agent's)."""
    rule = rule_of(agent)
    if rule is None:
        return 0
    return media_tokens(_after_baseline(agent.messages if messages is None else messages), rule)


async def projected_input_tokens(agent: Any, messages: list[Any] | None = None) -> int:
    """The event loop's projection of a request holding ``messages``, with the media it misses."""
    tokens = await _seam.projected_input_tokens(agent, messages)
    return tokens + media_after_baseline(agent, messages)


# ------------------------------------------------------------------ what frees media


def _describe(block: Mapping[str, Any], rule: str) -> tuple[str, int]:
    """What a placeholder says of a media block: kind, format, size; and its tokens."""
    kind = next((k for k in _MEDIA_KINDS if k in block), "media")
    value = block.get(kind)
    value = value if isinstance(value, Mapping) else {}
    fmt = value.get("format")
    parts = [f"{kind} {fmt}" if isinstance(fmt, str) else kind]
    source = value.get("source")
    data = source.get("bytes") if isinstance(source, Mapping) else None
    if kind == "image" and isinstance(data, (bytes, str)):
        size = _native.image_size(data)
        if size is not None:
            parts.append(f"{size[0]}x{size[1]}")
    elif kind == "document" and isinstance(data, (bytes, str)):
        pages = _native.pdf_page_count(data)
        if pages is not None:
            parts.append(f"{pages} page{'s' if pages != 1 else ''}")
    return ", ".join(parts), int(_native.media_block_tokens(block, rule))


def placeholder(block: Mapping[str, Any], rule: str, refs: Sequence[str] = ()) -> dict[str, str]:
    """The text block that stands for a media block: what it was, its size, its tokens, where it is kept."""
    what, tokens = _describe(block, rule)
    kept = f", stashed as {', '.join(refs)}" if refs else ""
    return {"text": f"[{what}, ~{tokens:,} tokens, not shown{kept}]"}


def is_media(block: Any) -> bool:
    """Whether ``block`` is an image, document or video block."""
    return isinstance(block, Mapping) and any(kind in block for kind in _MEDIA_KINDS)


def stash_refs(messages: Sequence[Any]) -> dict[int, str]:
    """The stash reference of each media block of ``messages``, by the block's identity."""
    refs: dict[int, str] = {}
    for message in messages:
        for index, block in enumerate(message.get("content", ())):
            if is_media(block):
                refs[id(block)] = f"{message.get('tracking_id', 'unknown')}_{index}"
            result = block.get("toolResult") if isinstance(block, Mapping) else None
            if isinstance(result, Mapping):
                for j, item in enumerate(result.get("content", ())):
                    if is_media(item):
                        refs[id(item)] = f"{result.get('toolUseId')}_{j}"
    return refs


def fit_summarizer_blocks(blocks: list[Any], rule: str, room: int, refs: Mapping[int, str] | None = None) -> list[Any]:
    """``blocks`` (a summarizer request's) with media kept, in order, while their tokens fit ``room``.

    The others become placeholders (naming their stash reference from ``refs``, by block identity):
    the summarizer request stays within the window.
    """
    fitted: list[Any] = []
    left = room
    for block in blocks:
        if not is_media(block):
            fitted.append(block)
            continue
        tokens = int(_native.media_block_tokens(block, rule))
        if tokens <= left:
            fitted.append(block)
            left -= tokens
        else:
            ref = refs.get(id(block)) if refs else None
            fitted.append(placeholder(block, rule, [ref] if ref else ()))
            left = -1  # in order: once one is left out, so are the later ones
    return fitted


def _holds_media_result(message: Mapping[str, Any]) -> bool:
    if message.get("role") != "user":
        return False
    for block in message.get("content", ()):
        result = block.get("toolResult") if isinstance(block, Mapping) else None
        if isinstance(result, Mapping) and any(is_media(item) for item in result.get("content", ())):
            return True
    return False


def protected_from(messages: Sequence[Any]) -> int | None:
    """Position of the call whose result is the newest tool result with media (``None``: no such result).

    An utilization-driven pass removes nothing from there on: the model needs what it just asked for.
    """
    for index in range(len(messages) - 1, -1, -1):
        if _holds_media_result(messages[index]):
            return max(0, index - 1)  # the assistant message that called the tool, and what follows
    return None
