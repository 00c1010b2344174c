"""Token counting and token-boundary previews, on top of the native core.

Encodings:

* ``"cl100k_base"`` and ``"o200k_base"``: exact BPE, the same ids and counts as
  tiktoken's ``encode_ordinary``.
* ``"heuristic"``: ceil(code points / 4), the estimate the Strands base model uses for
  text; previews cut at ``tokens * 4`` code points, byte for byte like the reference's
  offloader (head) and context manager (head_tail with a 0.6 head share).

Exact cuts: the head is the longest prefix made of the first ``k <= tokens`` tokens of
the text's encoding whose bytes end on a character boundary (encoded on its own it still
fits the budget); the tail is the longest suffix made of the last ``k`` tokens that starts
on a character boundary (a suffix encoded on its own may split into different tokens,
because pre-tokenization runs left to right). Only windows at the kept ends are read:
they are trusted up to a position where every pre-tokenizer piece provably ends (after a
newline before an ASCII letter or digit, or after a letter before a space or common
punctuation); a text with no such position near its ends is read whole.

Lone surrogates: Python strings may hold surrogate code points that UTF-8 cannot
represent. The exact encodings treat them as tiktoken does: a high surrogate directly
followed by a low one counts as the character the pair encodes, every other surrogate as
U+FFFD. The heuristic counts code points of the string as Python does (``len``), so each
surrogate counts as one. Preview offsets are always code points of the original string,
and previews are slices of it, so surrogates come back unchanged.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Literal, NamedTuple

from . import _native
from ._native import TokenCounter, token_counter

PreviewMode = Literal["head", "tail", "head_tail"]

__all__ = [
    "Preview",
    "PreviewMode",
    "TokenCounter",
    "count_tokens",
    "count_tokens_batch",
    "decode",
    "encode",
    "preview",
    "preview_bounds",
    "token_counter",
]


# The public functions take encoding names and resolve each into its shared counter object
# (token_counter); the package's own code resolves a name once, when it is configured, and passes
# the counter on, which resolving leaves as it is.


def resolve(encoding: str | TokenCounter) -> TokenCounter:
    """The shared counter of an encoding name; a counter is returned as it is."""
    return encoding if isinstance(encoding, TokenCounter) else token_counter(encoding)


def count_tokens(text: str, encoding: str | TokenCounter = "cl100k_base", *, limit: int | None = None) -> int:
    """Counts the tokens of ``text``.

    ``encoding`` is ``"cl100k_base"`` (default) or ``"o200k_base"`` for exact counts equal to
    tiktoken's ``encode_ordinary``, or ``"heuristic"`` for ceil(code points / 4). With ``limit``,
    counting stops once the count passes it and ``limit + 1`` is returned, so the cost follows the
    limit, not the text. Lone surrogates count as tiktoken counts them (as U+FFFD; a high+low pair
    as the character it encodes); the heuristic counts code points as ``len()`` does.
    """
    return _native.count_tokens(text, resolve(encoding), limit=limit)


def count_tokens_batch(texts: Iterable[str], encoding: str | TokenCounter = "cl100k_base") -> list[int]:
    """Counts the tokens of every text of an iterable, in parallel with the GIL released."""
    return _native.count_tokens_batch(texts, resolve(encoding))


def encode(text: str, encoding: str | TokenCounter = "cl100k_base") -> list[int]:
    """Token ids of ``text``, the same as tiktoken's ``encode_ordinary`` (special tokens are plain text).

    ``encoding`` is ``"cl100k_base"`` (default) or ``"o200k_base"``.
    """
    return _native.encode(text, resolve(encoding))


def decode(tokens: Sequence[int], encoding: str | TokenCounter = "cl100k_base") -> str:
    """Text of token ids, like tiktoken's ``decode``.

    Byte sequences that are not valid UTF-8 become U+FFFD as ``bytes.decode(errors="replace")``
    does; special token ids decode to their names; an unknown id raises ``KeyError``.
    """
    return _native.decode(tokens, resolve(encoding))


def preview_bounds(
    text: str,
    tokens: int,
    *,
    mode: str = "head",
    encoding: str | TokenCounter = "heuristic",
    head_share: float = 0.6,
    count: bool = False,
) -> tuple[int, int, int, int | None]:
    """Preview cut points, in code points of the original string (see :func:`preview`).

    Returns ``(head_end, tail_start, total, token_count)``: keep ``text[:head_end]`` and
    ``text[tail_start:]``; ``head_end == tail_start == total`` means the text fits whole.
    ``token_count`` is the heuristic count for ``"heuristic"``, the exact count when ``count`` is
    true, else ``None``.
    """
    return _native.preview_bounds(
        text, tokens, mode=mode, encoding=resolve(encoding), head_share=head_share, count=count
    )


class Preview(NamedTuple):
    """A preview of a text: the kept head and tail, and what was left out between them.

    Attributes:
        head: The kept start of the text (the whole text when nothing was cut).
        tail: The kept end of the text (empty when the text fits or for head previews).
        head_end: Code-point offset where the head stops.
        tail_start: Code-point offset where the tail starts.
        total_chars: Code points of the whole text.
        token_count: The heuristic count for ``"heuristic"``; for exact encodings the
            exact count when it was asked for, else ``None``.
    """

    head: str
    tail: str
    head_end: int
    tail_start: int
    total_chars: int
    token_count: int | None

    @property
    def elided_chars(self) -> int:
        """Code points left out between head and tail."""
        return self.tail_start - self.head_end

    @property
    def truncated(self) -> bool:
        """Whether anything was left out."""
        return self.tail_start > self.head_end


_MAX_NATIVE_TOKENS = 2**63 - 1


def preview(
    text: str,
    tokens: int,
    *,
    mode: PreviewMode = "head",
    encoding: str | TokenCounter = "heuristic",
    head_share: float = 0.6,
    count: bool = False,
) -> Preview:
    """Cuts a preview of ``text`` that fits in ``tokens`` tokens.

    A text that fits is kept whole in ``head``. Otherwise ``"head"`` keeps the start,
    ``"tail"`` the end, and ``"head_tail"`` both, giving ``int(tokens * head_share)`` of
    the budget to the head and the rest to the tail. With exact encodings, cuts fall on
    token boundaries and never inside a character; the work is proportional to the
    preview, not to the text.

    Args:
        text: The text to preview.
        tokens: The token budget (non-negative).
        mode: Which part(s) to keep.
        encoding: ``"heuristic"`` (default, the reference's chars/4 cuts),
            ``"cl100k_base"`` or ``"o200k_base"``.
        head_share: Share of the budget for the head in ``"head_tail"`` mode, 0 to 1.
        count: For exact encodings, also count all tokens of the text (costs a full pass).

    Returns:
        The preview, with the offsets that produced it.

    Raises:
        ValueError: On an unknown mode or encoding, a negative budget or a share
            outside 0 to 1.
    """
    if isinstance(tokens, int) and tokens > _MAX_NATIVE_TOKENS:
        # The core takes a 64-bit budget; any larger one keeps every text whole, as this one does.
        tokens = _MAX_NATIVE_TOKENS
    head_end, tail_start, total, token_count = preview_bounds(
        text, tokens, mode=mode, encoding=encoding, head_share=head_share, count=count
    )
    tail = text[tail_start:] if tail_start < total else ""
    return Preview(text[:head_end], tail, head_end, tail_start, total, token_count)
