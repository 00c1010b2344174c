"""The functions accelerate() puts in place of strands-agents' own, each built around the original.

Every replacement answers natively only for the inputs where the native answer is known to be the
original's, byte for byte: exact built-in types, the usual call shapes. Anything else (a subclass,
an unusual argument, a pattern the native grep cannot answer with its Python meaning, a value the
native JSON writer declines) is handed to the original function, which then gives its own answer
or its own error.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

from .. import _heuristic, _native
from .._search import search_content as native_search
from ._json import dumps_len, json_is_stdlib, native_dumps

__all__ = ["make_encode", "make_estimate", "make_search"]

_SEARCH_OPTIONS = frozenset({"pattern", "line_range", "context_lines", "max_chars"})
# The reference's range errors: the native grep words them identically, so they need no second pass.
_RANGE_ERROR = "line_range.start ("


def _wraps(original: Callable[..., Any], replacement: Callable[..., Any]) -> Callable[..., Any]:
    # Name, docs and __wrapped__ of the original: introspection (and the seam's probe) sees the SDK's.
    return functools.update_wrapper(replacement, original)


def _plain_range(line_range: object) -> bool:
    return line_range is None or (
        type(line_range) is tuple and len(line_range) == 2 and type(line_range[0]) is int and type(line_range[1]) is int
    )


def make_search(original: Callable[..., str]) -> Callable[..., str]:
    """A drop-in for the offloader's ``_search_content`` answered by the native grep.

    Args:
        original: The SDK's ``_search_content``.

    Returns:
        The replacement.
    """

    def search_content(*args: Any, **kwargs: Any) -> str:
        if len(args) == 1 and type(args[0]) is str and kwargs.keys() <= _SEARCH_OPTIONS:
            pattern = kwargs.get("pattern")
            line_range = kwargs.get("line_range")
            context_lines = kwargs.get("context_lines", 5)
            max_chars = kwargs.get("max_chars", 10_000)
            if (
                (pattern is None or type(pattern) is str)
                and _plain_range(line_range)
                and type(context_lines) is int
                and type(max_chars) is int
            ):
                try:
                    return native_search(
                        args[0],
                        pattern=pattern,
                        line_range=line_range,
                        context_lines=context_lines,
                        max_chars=max_chars,
                    )
                except ValueError as error:
                    if type(error) is ValueError and str(error).startswith(_RANGE_ERROR):
                        raise
                    # A pattern the native grep declines (or one past its work budget): Python's re answers.
        return original(*args, **kwargs)

    return _wraps(original, search_content)


def make_encode(original: Callable[[object], bytes]) -> Callable[[object], bytes]:
    """A drop-in for the stash's ``_encode`` (compact JSON, bytes as base64, UTF-8).

    Values holding bytes (images, documents) go to the original, whose encoder writes them as base64.

    Args:
        original: The SDK's ``_encode``.

    Returns:
        The replacement.
    """

    def encode(*args: Any, **kwargs: Any) -> bytes:
        if len(args) == 1 and not kwargs:
            text = native_dumps(args[0])
            if text is not None:
                return text.encode("ascii")  # ensure_ascii output
        return original(*args, **kwargs)

    return _wraps(original, encode)


def make_estimate(
    original: Callable[..., int],
    count_block: Callable[..., int],
    text_estimate: Callable[[Any], int],
    json_estimate: Callable[[Any], int],
) -> Callable[..., int]:
    """A drop-in for the base model's heuristic token estimate (text chars/4, JSON chars/2).

    The messages are measured in one pass of the native block meter when every block has the usual
    shape (exact dicts and lists, ``str`` texts, JSON of exact built-in types); otherwise the SDK's
    own block walk decides what is counted, with texts measured here and JSON lengths from the
    native writer where its answer is ``json``'s. Whatever is not plainly a ``str`` or plain JSON is
    measured by the SDK's functions.

    Args:
        original: The SDK's ``_estimate_tokens_with_heuristic``.
        count_block: The SDK's per-block walk, taking the text and JSON measures.
        text_estimate: The SDK's text measure.
        json_estimate: The SDK's JSON measure.

    Returns:
        The replacement.
    """
    heuristic = _native.token_counter("heuristic")

    def text_tokens(text: Any) -> int:
        if type(text) is str:
            return _heuristic.text_tokens(len(text))
        return text_estimate(text)

    def json_tokens(value: Any) -> int:
        length = dumps_len(value)
        if length is None:
            return json_estimate(value)  # json's answer: 0 for what it rejects, or its error
        return _heuristic.json_tokens(length)

    def block_tokens(block: Any) -> int:
        if type(block) is dict and len(block) == 1 and type(text := block.get("text")) is str:
            return _heuristic.text_tokens(len(text))
        return count_block(block, text_tokens, json_tokens)

    def estimate(
        messages: Any, tool_specs: Any = None, system_prompt: Any = None, system_prompt_content: Any = None
    ) -> int:
        # Same order as the SDK (system prompt, messages, tool specs), so the first error is the same one.
        total = 0
        if system_prompt_content:
            for block in system_prompt_content:
                if "text" in block:
                    total += text_tokens(block["text"])
        elif system_prompt:
            total += text_tokens(system_prompt)
        counted = None
        if json_is_stdlib():
            # One native pass over the conversation; None leaves it to the SDK's walk, block by block.
            counted = _native.BlockMeter(heuristic, exact_json=True).messages(messages)
        if counted is None:
            for message in messages:
                for block in message["content"]:
                    total += block_tokens(block)
        else:
            total += counted
        if tool_specs:
            for spec in tool_specs:
                total += json_tokens(spec)
        return total

    return _wraps(original, estimate)
