r"""Relevance previews: a text cut into verbatim chunks, the relevant ones kept within a budget.

The chunking (and the default scoring) is native (``_native.relevance_chunks``): a chunk holds at
most ``max_chars`` characters, ends just after a newline where its window holds one (a longer line
is cut by character), and the chunks concatenate back to the text exactly. Here the chunks a
ranker scored are selected and put back together:

* selection: chunks scoring at or over the threshold, best first (ties by position), each taken
  while it fits the budget, every candidate considered; with none over the threshold, the single
  best; a best chunk alone over the budget is kept alone (and cut by the assembly);
* assembly: kept chunks in source order, ``\\n[... {n} lines omitted ...]\\n`` between chunks
  that are not adjacent (left out when it does not fit); when the budget runs out, the last chunk
  is cut at a line boundary (else by character) and a closing marker counts the lines from the cut
  to the end of the text. The result is never longer than the budget.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from .... import _native

__all__ = ["Chunks", "assemble", "omitted_marker", "select"]


def omitted_marker(lines: int) -> str:
    """The marker between two kept chunks that are not adjacent."""
    return f"\n[... {lines} lines omitted ...]\n"


def _closing_marker(lines: int) -> str:
    return f"[... {lines} lines omitted ...]"


@dataclass(frozen=True)
class Chunks:
    """The chunks of ``text``: start offsets, first and last lines (1-based), and native scores."""

    text: str
    starts: list[int]
    first_lines: list[int]
    last_lines: list[int]
    native_scores: list[float] | None = None

    @classmethod
    def of(cls, text: str, max_chars: int, query: str | None = None, tool_input: str | None = None) -> Chunks:
        """``text`` chunked; with ``query``, the chunks' native BM25 scores too (the GIL released).

        With ``tool_input`` as well, ``query`` is the question and the input's terms weigh less
        (in total as much as one term of the question).
        """
        starts, firsts, lasts, scores = _native.relevance_chunks(text, max(1, max_chars), query, tool_input)
        return cls(text, starts, firsts, lasts, scores)

    def __len__(self) -> int:
        return len(self.starts)

    def end(self, index: int) -> int:
        """One past the last character of chunk ``index``."""
        return self.starts[index + 1] if index + 1 < len(self.starts) else len(self.text)

    def size(self, index: int) -> int:
        """Characters of chunk ``index``."""
        return self.end(index) - self.starts[index]

    def chunk(self, index: int) -> str:
        """The text of chunk ``index``."""
        return self.text[self.starts[index] : self.end(index)]

    def texts(self) -> list[str]:
        """Every chunk's text, in order."""
        return [self.chunk(i) for i in range(len(self.starts))]

    @property
    def total_lines(self) -> int:
        """The line the text's last character is on."""
        return self.last_lines[-1] if self.last_lines else 0


def select(chunks: Chunks, scores: Sequence[float], threshold: float, budget: int) -> list[int]:
    """The indices of the chunks to keep, in source order (see the module docstring)."""
    candidates = sorted((i for i, score in enumerate(scores) if score >= threshold), key=lambda i: (-scores[i], i))
    if not candidates:
        best = max(range(len(scores)), key=lambda i: (scores[i], -i))
        return [best]
    kept: list[int] = []
    used = 0
    for index in candidates:
        size = chunks.size(index)
        if used + size <= budget:
            kept.append(index)
            used += size
    if not kept:
        kept = [candidates[0]]  # the best alone, over the budget: cut by the assembly
    return sorted(kept)


def _lines_from(chunks: Chunks, index: int, offset: int) -> int:
    """Lines from character ``offset`` of chunk ``index`` to the end of the text (0 at the end)."""
    position = chunks.starts[index] + offset
    if position >= len(chunks.text):
        return 0
    line = chunks.first_lines[index] + chunks.text.count("\n", chunks.starts[index], position)
    return chunks.total_lines - line + 1


def _cut(chunks: Chunks, index: int, room: int) -> str:
    """Chunk ``index`` cut to at most ``room`` characters with its closing marker, or ``""``."""
    text = chunks.chunk(index)
    # The marker's length depends on the count; the count from the chunk's start is the largest.
    reserve = len(_closing_marker(_lines_from(chunks, index, 0))) + 1
    avail = room - reserve
    if avail <= 0:
        return ""
    head = text[:avail]
    newline = head.rfind("\n")
    cut = head[: newline + 1] if newline >= 0 else head
    if not cut:
        return ""
    marker = _closing_marker(_lines_from(chunks, index, len(cut)))
    return cut + marker if cut.endswith("\n") else f"{cut}\n{marker}"


def assemble(chunks: Chunks, kept: Sequence[int], budget: int) -> str:
    """The kept chunks in source order, with markers, never longer than ``budget`` characters."""
    out: list[str] = []
    used = 0
    previous: int | None = None
    for index in kept:
        chunk = chunks.chunk(index)
        gap = ""
        if previous is not None and index != previous + 1:
            gap = omitted_marker(max(0, chunks.first_lines[index] - chunks.last_lines[previous] - 1))
        if used + len(gap) + len(chunk) <= budget:
            out.append(gap + chunk)
            used += len(gap) + len(chunk)
        elif gap and used + len(chunk) <= budget:
            out.append(chunk)  # the marker does not fit; the chunk does
            used += len(chunk)
        else:
            if gap and used + len(gap) < budget:
                cut = _cut(chunks, index, budget - used - len(gap))
                if cut:
                    out.append(gap + cut)
                    break
            cut = _cut(chunks, index, budget - used)
            if cut:
                out.append(cut)
            break
        previous = index
    return "".join(out)
