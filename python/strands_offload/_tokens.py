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

from typing import Literal, NamedTuple

from . import _native

PreviewMode = Literal["head", "tail", "head_tail"]

__all__ = [
    "Preview",
    "PreviewMode",
    "count_tokens",
    "count_tokens_batch",
    "decode",
    "encode",
    "preview",
    "preview_bounds",
]

count_tokens = _native.count_tokens
count_tokens_batch = _native.count_tokens_batch
encode = _native.encode
decode = _native.decode
preview_bounds = _native.preview_bounds


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
    encoding: str = "heuristic",
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
    head_end, tail_start, total, token_count = _native.preview_bounds(
        text, tokens, mode=mode, encoding=encoding, head_share=head_share, count=count
    )
    tail = text[tail_start:] if tail_start < total else ""
    return Preview(text[:head_end], tail, head_end, tail_start, total, token_count)
