"""Relevance: a long tool result becomes the chunks of it that answer the question.

The shape is the one proposed upstream for the next strands release (``Offload.relevance``,
strands PR #4275, design 0019), so code written for it runs here: ``RelevanceConfig``, the
``Reranker`` protocol, ``RerankerError`` and ``BedrockReranker``. One difference, on purpose: the
default reranker is this package's native BM25 (no network, no credentials, the tool output never
leaves the host); ``BedrockReranker`` is there for those who choose it. See
``docs/design/relevance.md``.

For each targeted tool result:

* the text is its ``text`` items and its ``json`` items (written with ``indent=2``), joined by
  newlines; a result with no text is left alone;
* the query is the newest user message with text, a newline and the JSON of the call's input, cut
  to its last 2,000 characters (the input's first 2,000 characters alone when the input is that
  long); a ``Reranker`` gets it as is, the native default gets its two parts and counts the
  input, in total, as one word of the question;
* the text is cut into chunks of at most ``chunk_tokens`` x 4 characters (see ``_chunks``), scored
  by the reranker, and the relevant ones are kept within ``preview_tokens`` x 4 characters;
* the result becomes ``[Relevance: tool result, ~{tokens} tokens]``, a blank line, the preview and
  the stash references (images and documents stay in the stash only).

A reranker that fails, answers anything but one finite score in ``[0, 1]`` per chunk, or is asked
with an empty query raises ``RerankerError``: the result is then left as it was.
"""

from __future__ import annotations

import json
import logging
import math
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from strands.experimental.context_manager import OffloadConditions, OffloadTarget
from typing_extensions import TypedDict

from .... import _native
from ...methods.truncate import CHARS_PER_TOKEN
from ...ranking import MAX_QUERY_CHARS, BM25Ranker, Ranker, checked_scores
from ...stash import format_refs
from ...types import ContextState
from ._chunks import Chunks, assemble, select
from .base import BaseOffloadStrategy

if TYPE_CHECKING:
    from strands.agent.agent import Agent

__all__ = ["RelevanceConfig", "RelevanceStrategy", "Reranker", "RerankerError"]

logger = logging.getLogger(__name__)

DEFAULT_RELEVANCE_THRESHOLD = 0.5
DEFAULT_CHUNK_TOKENS = 2500
DEFAULT_PREVIEW_TOKENS = 1000
HEADER_PREFIX = "[Relevance: tool result"


class RerankerError(RuntimeError):
    """A reranker failed or gave an unusable answer; the tool result it was scoring stays as it was."""


@runtime_checkable
class Reranker(Ranker, Protocol):
    """Scores chunks of a tool result by their relevance to a query.

    Attributes:
        max_sources_per_query: How many chunks one request of the reranker takes at most
            (``BedrockReranker`` sends larger lists in batches of this size).
    """

    max_sources_per_query: int

    async def score(self, query: str, texts: Sequence[str]) -> list[float]:
        """One score in ``[0, 1]`` per chunk, in order: higher is more relevant."""
        ...


class RelevanceConfig(TypedDict, total=False):
    """Configuration of ``Offload.relevance``.

    Attributes:
        reranker: What scores the chunks (default: the native BM25 ranker, on this host).
        relevance_threshold: Chunks scoring at least this (0-1, default 0.5) are candidates.
        chunk_tokens: Chunk size, in tokens of 4 characters (default 2,500; at least 1).
        preview_tokens: The preview's budget, in tokens of 4 characters (default 1,000).
        summarize_overflow: Accepted for compatibility with the proposal; no effect yet (relevant
            chunks that do not fit the budget are left out, not summarized).
    """

    reranker: Reranker
    relevance_threshold: float
    chunk_tokens: int
    preview_tokens: int
    summarize_overflow: bool


def _number(config: Mapping[str, Any], key: str, default: float) -> float:
    value = config.get(key, default)
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise ValueError(f"{key} must be a finite number, not {value!r}")
    return float(value)


def result_text(result: Mapping[str, Any]) -> str:
    """The text a relevance preview is made from: text items, and JSON items indented by 2."""
    parts: list[str] = []
    for item in result.get("content", []):
        if "text" in item:
            parts.append(item["text"])
        elif "json" in item:
            parts.append(_native.json_dumps(item["json"], indent=2))
    return "\n".join(parts)


def build_query(messages: Sequence[Any], tool_use_id: str) -> str:
    """The query for the result of call ``tool_use_id``: the newest user text and the call's input."""
    return _joined(*query_parts(messages, tool_use_id))


def _joined(question: str, call_input: str) -> str:
    """The query of its two parts (see :func:`query_parts`)."""
    if not call_input:
        return question
    if len(call_input) >= MAX_QUERY_CHARS:
        return call_input
    return f"{question}\n{call_input}"


def query_parts(messages: Sequence[Any], tool_use_id: str) -> tuple[str, str]:
    """The query of :func:`build_query` in its two parts: the question's part and the call input's.

    Joined by a newline (when both are there) they are the query exactly: cut to its last 2,000
    characters, the cut falls in the question; an input of 2,000 characters or more is the whole
    query (its first 2,000). The native reranker weighs the parts apart; a ``Reranker`` gets the
    joined query.
    """
    question = ""
    for message in reversed(messages):
        if message.get("role") != "user":
            continue
        texts = [block["text"] for block in message.get("content", []) if "text" in block and len(block) == 1]
        if any(text.strip() for text in texts):
            question = "\n".join(texts)
            break
    call_input = ""
    for message in reversed(messages):
        if message.get("role") != "assistant":
            continue
        use = next(
            (b["toolUse"] for b in message.get("content", []) if b.get("toolUse", {}).get("toolUseId") == tool_use_id),
            None,
        )
        if use is not None:
            call_input = json.dumps(use.get("input"), ensure_ascii=False, default=str)
            break
    if len(call_input) >= MAX_QUERY_CHARS:
        return "", call_input[:MAX_QUERY_CHARS]
    if not call_input:
        return question[-MAX_QUERY_CHARS:], ""
    # The input and its newline fit; the question keeps what is left of the budget, its end.
    room = MAX_QUERY_CHARS - len(call_input) - 1
    return (question[-room:] if room > 0 else ""), call_input


class RelevanceStrategy(BaseOffloadStrategy):
    """Keeps the chunks of a long tool result a reranker finds relevant to the question.

    Args:
        target: Which tool results (only tool results are ever rewritten).
        config: See :class:`RelevanceConfig`.
        conditions: When (see ``.when()``). With ``utilization``, the results are rewritten once the
            window is that full (oldest first past ``preserve_recent``), not removed.

    Raises:
        ValueError: For a threshold outside [0, 1], ``chunk_tokens`` below 1, a negative
            ``preview_tokens``, or a ``threshold`` condition not above ``preview_tokens``.
        TypeError: For a reranker that is not a :class:`Reranker`.
    """

    def __init__(
        self,
        target: OffloadTarget | None = None,
        config: RelevanceConfig | None = None,
        conditions: OffloadConditions | None = None,
    ) -> None:
        super().__init__(target, conditions)
        given: Mapping[str, Any] = config or {}
        self._config: RelevanceConfig = dict(given)  # type: ignore[assignment]
        threshold = _number(given, "relevance_threshold", DEFAULT_RELEVANCE_THRESHOLD)
        if not 0.0 <= threshold <= 1.0:
            raise ValueError(f"relevance_threshold must be in [0, 1], not {threshold}")
        chunk_tokens = _number(given, "chunk_tokens", DEFAULT_CHUNK_TOKENS)
        if chunk_tokens < 1:
            raise ValueError(f"chunk_tokens must be at least 1, not {given.get('chunk_tokens')!r}")
        preview_tokens = _number(given, "preview_tokens", DEFAULT_PREVIEW_TOKENS)
        if preview_tokens < 0:
            raise ValueError(f"preview_tokens must not be negative, not {given.get('preview_tokens')!r}")
        reranker = given.get("reranker")
        if reranker is not None and not isinstance(reranker, Reranker):
            raise TypeError(
                f"reranker must have max_sources_per_query and async score(query, chunks), "
                f"not {type(reranker).__name__}"
            )
        limit = (conditions or {}).get("threshold")
        if isinstance(limit, (int, float)) and limit <= preview_tokens:
            raise ValueError(
                f"threshold ({limit}) must be greater than preview_tokens ({given.get('preview_tokens', 1000)}) "
                "so that a preview is not rewritten again"
            )
        self._threshold_score = threshold
        self._chunk_chars = int(chunk_tokens) * CHARS_PER_TOKEN
        self._budget_chars = int(preview_tokens) * CHARS_PER_TOKEN
        self._preview_tokens = int(preview_tokens)
        self._reranker: Reranker | None = reranker

    @property
    def name(self) -> str:
        """``offload:relevance``."""
        return "offload:relevance"

    @property
    def reranker(self) -> Reranker | None:
        """The configured reranker (``None``: the native BM25 default)."""
        return self._reranker

    def _rebuild(self, conditions: OffloadConditions) -> RelevanceStrategy:
        clone = RelevanceStrategy(self._target, self._config, conditions)
        clone._encoding = self._encoding
        return clone

    def _expected_freed(self, tokens: int) -> int:
        return max(0, tokens - self._preview_tokens)

    async def apply(self, context: ContextState) -> bool:
        """One pass; with ``utilization``, results are rewritten (not removed) once the window is that full."""
        if not self._is_message_level:
            return await super().apply(context)
        self._stash = context.stash  # type: ignore[assignment]
        assert self._utilization_threshold is not None
        if not context.overflow and context.utilization < self._utilization_threshold:
            return False
        return await self._apply_per_block(context, self._measure_of(context))

    def _matches_block(self, block: Mapping[str, Any], message: Mapping[str, Any], names: Mapping[str, str]) -> bool:
        if "toolResult" not in block:
            return False
        return super()._matches_block(block, message, names)

    async def _replace_block(
        self, block: Any, tokens: int, message: Any, agent: Agent, stash_refs: list[str]
    ) -> Any | None:
        result = block.get("toolResult")
        if result is None:
            return None
        preview = await self.preview(result, agent.messages)
        if preview is None:
            return None
        refs = format_refs(stash_refs)
        text = f"{HEADER_PREFIX}, ~{tokens:,} tokens]\n\n{preview}"
        if refs:
            text += f"\n\n[Stashed]{refs}"
        logger.debug(
            "tool_use_id=<%s>, tokens=<%s> | tool result cut to its relevant chunks", result["toolUseId"], tokens
        )
        return {
            "toolResult": {"toolUseId": result["toolUseId"], "status": result["status"], "content": [{"text": text}]}
        }

    async def preview(self, result: Mapping[str, Any], messages: Sequence[Any]) -> str | None:
        """The relevance preview of ``result`` in the conversation ``messages`` (``None``: leave it)."""
        text = result_text(result)
        if not text:
            return None
        contents = result.get("content", [])
        if len(contents) == 1 and contents[0].get("text", "").startswith(HEADER_PREFIX):
            return None  # already a relevance preview
        if len(text) <= self._chunk_chars and len(text) <= self._budget_chars:
            return None  # one chunk within the budget: the text is its own preview
        question, call_input = query_parts(messages, str(result.get("toolUseId", "")))
        try:
            chunks, scores = await self._scored(text, question, call_input)
        except RerankerError:
            logger.warning(
                "tool_use_id=<%s> | reranker failed, tool result left as it was", result.get("toolUseId"), exc_info=True
            )
            return None
        kept = select(chunks, scores, self._threshold_score, self._budget_chars)
        return assemble(chunks, kept, self._budget_chars)

    async def _scored(self, text: str, question: str, call_input: str) -> tuple[Chunks, list[float]]:
        """The chunks of ``text`` and their checked scores for the query of ``question`` and ``call_input``."""
        query = _joined(question, call_input)
        if not query.strip():
            raise RerankerError("the query is empty (no user text and no tool input)")
        reranker = self._reranker
        if reranker is None or type(reranker) is BM25Ranker:
            # The native default: BM25 over the chunks in one native call, the question's terms
            # weighing more than the call input's (the input, in total, counts as one term of the
            # question; see docs/design/relevance.md).
            chunks = Chunks.of(text, self._chunk_chars, question, call_input)
            assert chunks.native_scores is not None
            return chunks, chunks.native_scores
        chunks = Chunks.of(text, self._chunk_chars)
        try:
            answer = await reranker.score(query, chunks.texts())
        except RerankerError:
            raise
        except Exception as error:
            raise RerankerError(f"the reranker failed: {type(error).__name__}: {error}") from error
        try:
            return chunks, checked_scores(answer, len(chunks))
        except ValueError as error:
            raise RerankerError(str(error).replace("a ranker", "the reranker")) from None
