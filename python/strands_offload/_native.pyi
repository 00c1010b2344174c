"""Typed stubs of the compiled module ``strands_offload._native``."""

from collections.abc import Callable, Iterable, Sequence
from typing import Protocol, final

__version__: str
__all__ = ["__version__", "_fast_paths"]

# errors (all ValueError subclasses)
__all__ += [
    "InvalidJsonDocument",
    "InvalidJsonQuery",
    "JsonQueryTooExpensive",
    "PatternTooExpensive",
    "UntranslatablePattern",
]

class UntranslatablePattern(ValueError):
    """A pattern Python accepts but the native engines cannot match with the same meaning."""

class PatternTooExpensive(ValueError):
    """A pattern that needs more work than the bounded engines allow on this text."""

class InvalidJsonQuery(ValueError):
    """A JSONPath query that does not parse."""

class JsonQueryTooExpensive(ValueError):
    """A JSONPath query that selects too many values or needs too much work on this document."""

class InvalidJsonDocument(ValueError):
    """Stored content that a JSON query was asked of is not valid JSON."""

# json
__all__ += [
    "json_dumps",
    "json_dumps_len",
    "json_dumps_utf8",
    "json_dumps_utf8_with_len",
    "_json_dumps_exact",
    "_json_dumps_len_exact",
    "_json_reads_str_in_place",
    "_json_reads_items_in_place",
    "_json_reads_numbers_in_place",
]

def json_dumps(obj: object, *, indent: int | str | None = None) -> str:
    """Serialize ``obj`` exactly as ``json.dumps(obj, indent=indent)`` does with its other defaults."""

def json_dumps_len(obj: object) -> int:
    """Length of ``json.dumps(obj)`` (single-line form) computed without building the text."""

def json_dumps_utf8(obj: object, *, indent: int | str | None = None) -> bytes:
    """``json_dumps(obj, indent=indent).encode("utf-8")`` without the intermediate ``str``."""

def json_dumps_utf8_with_len(obj: object, *, indent: int | str | None = None, prefix: bytes = b"") -> tuple[bytes, int]:
    """``(prefix + json_dumps_utf8(obj, indent=indent), json_dumps_len(obj))`` from one walk of ``obj``."""

def _json_dumps_exact(obj: object, *, indent: int | str | None = None) -> str | None:
    """``json_dumps`` when every value and key is of an exact built-in type, else ``None`` (``json`` answers)."""

def _json_dumps_len_exact(obj: object) -> int | None:
    """``json_dumps_len`` under the rule of ``_json_dumps_exact``."""

def _fast_paths() -> str:
    """Vector fast paths compiled in: ``"x86_64"``, ``"aarch64"`` or ``"portable"``."""

def _json_reads_str_in_place() -> bool:
    """Whether ``str`` characters are read in place (known layout, probed at import)."""

def _json_reads_items_in_place() -> bool:
    """Whether list and tuple items and dict members are read from the objects (layouts probed at import)."""

def _json_reads_numbers_in_place() -> bool:
    """Whether exact ints (below 2**60) and floats are read from the objects (layouts probed at import)."""

# the block meter
__all__ += ["BlockMeter"]

@final
class BlockMeter:
    """Measures message blocks and tool results with one counter (heuristic or exact BPE).

    Block counts of blocks carrying JSON, and the stored form of tool-result JSON values, are
    remembered by identity until :meth:`clear`. Methods return ``None`` when a message, block or
    item has a shape left to the SDK's own walk.
    """

    def __new__(cls, counter: TokenCounter, *, prefix: bytes = b"", exact_json: bool = False) -> BlockMeter: ...
    @property
    def prefix(self) -> bytes: ...
    def block(self, block: object) -> int | None: ...
    def messages(self, messages: object) -> int | None: ...
    def over(self, messages: object, floor: int) -> list[int] | None: ...
    def result(self, content: object, *, limit: int | None = None, sample: int | None = None) -> int | None: ...
    def stored(self, value: object) -> bytes: ...
    def take_seconds(self) -> float:
        """Seconds spent counting in ``block``, ``messages`` and ``over`` since the last take."""
    def clear(self) -> None: ...
    def __len__(self) -> int: ...

# the identity pass of each model call (the context manager)
__all__ += ["IdentityTrail"]

@final
class IdentityTrail:
    """Every object of every message, by identity (references held), compared with the next call's walk."""

    def __init__(self) -> None: ...
    def compare(self, messages: list[object]) -> int:
        """How many leading messages hold exactly the objects remembered; then remembers ``messages``."""
    def update_from(self, messages: list[object], start: int) -> None:
        """Remember ``messages``, walking only from ``start`` on (the ones before taken as remembered)."""
    def clear(self) -> None: ...
    def __len__(self) -> int: ...

# the savings ledger
__all__ += ["has_cache_point", "holds_any"]

def holds_any(messages: list[object], touched: tuple[object, ...]) -> bool:
    """Whether one of ``touched`` is (by identity) one of ``messages``."""

def has_cache_point(messages: list[object]) -> bool:
    """Whether a block of ``messages`` holds a ``cachePoint`` key."""

# media (images, documents, videos) counted as providers bill them
__all__ += [
    "MEDIA_RULES",
    "image_size",
    "image_tokens",
    "media_block_tokens",
    "media_cap",
    "media_tokens",
    "pdf_page_count",
]

MEDIA_RULES: tuple[str, ...]
"""The media rule names (see ``docs/design/media-tokens.md``)."""

def media_tokens(messages: object, rule: str) -> int:
    """Tokens of the images, documents and videos of ``messages`` (top level or in tool results) under ``rule``.

    Never raises on content: what cannot be read costs the rule's cap. ``ValueError`` for an unknown rule.
    """

def media_block_tokens(block: object, rule: str) -> int:
    """Tokens of the media of one content block under ``rule`` (0 when it holds none)."""

def image_tokens(data: bytes | str | None, rule: str, *, detail: str = "high") -> int:
    """Tokens of an image (bytes or base64 text; ``None``: not at hand, the cap); ``detail`` for OpenAI's tile rule."""

def image_size(data: object) -> tuple[int, int] | None:
    """The width and height an image's header declares (PNG, JPEG, GIF, WebP), or ``None``."""

def pdf_page_count(data: object) -> int | None:
    """A PDF's page count from its page tree (bounded scan, clamped to 1,000), or ``None``."""

def media_cap(rule: str) -> int:
    """What one item that cannot be sized costs under ``rule`` (the rule's most for an image)."""

# tokens
__all__ += [
    "TokenCounter",
    "_count_tokens_in_parts",
    "count_tokens",
    "count_tokens_batch",
    "decode",
    "encode",
    "joined_head_end",
    "preview_bounds",
    "token_counter",
]

@final
class TokenCounter:
    """How tokens are counted: an exact BPE vocabulary or the chars/4 heuristic (one shared object per name)."""

    @property
    def name(self) -> str: ...
    @property
    def exact(self) -> bool: ...

def token_counter(name: str) -> TokenCounter:
    """The shared counter of ``"cl100k_base"``, ``"o200k_base"`` or ``"heuristic"``; ``ValueError`` otherwise."""

def count_tokens(text: str, encoding: TokenCounter, *, limit: int | None = None) -> int: ...
def count_tokens_batch(texts: Iterable[str], encoding: TokenCounter) -> list[int]: ...
def _count_tokens_in_parts(text: str, encoding: TokenCounter, parts: int) -> int:
    """Exact count with ``text`` cut into about ``parts`` parts on their own threads (tests only)."""

def encode(text: str, encoding: TokenCounter) -> list[int]: ...
def decode(tokens: Sequence[int], encoding: TokenCounter) -> str: ...
def preview_bounds(
    text: str,
    tokens: int,
    *,
    mode: str,
    encoding: TokenCounter,
    head_share: float,
    count: bool,
) -> tuple[int, int, int, int | None]: ...
def joined_head_end(parts: list[str | memoryview], tokens: int, *, encoding: TokenCounter) -> int:
    r"""``preview_bounds("\n".join(parts), tokens, ...)[0]`` without joining the parts."""

# grep
__all__ += ["Matcher", "TextIndex", "search", "search_bytes"]

@final
class TextIndex:
    """A text (str or UTF-8 bytes) held once with its line index."""

    def __new__(cls, data: str | bytes, offset: int = 0) -> TextIndex: ...
    @property
    def line_count(self) -> int: ...
    @property
    def is_empty(self) -> bool: ...
    @property
    def is_ascii(self) -> bool: ...
    @property
    def byte_length(self) -> int: ...
    @property
    def longest_line_bytes(self) -> int: ...

class _RegexTranslation(Protocol):
    """What ``Matcher.regex`` reads: the attributes of ``strands_offload._pattern.Translation``."""

    @property
    def linear(self) -> str | None: ...
    @property
    def linear_needs_ascii_text(self) -> bool: ...
    @property
    def backtracking(self) -> str: ...
    @property
    def prefilter(self) -> str: ...
    @property
    def surrogate_exact(self) -> bool: ...
    @property
    def min_chars(self) -> int: ...

@final
class Matcher:
    """A compiled grep pattern: a literal or a translated regular expression."""

    @staticmethod
    def literal(needle: bytes) -> Matcher: ...
    @staticmethod
    def run(ranges: list[tuple[int, int]], min: int, surrogate_exact: bool) -> Matcher: ...
    @staticmethod
    def regex(translation: _RegexTranslation) -> Matcher:
        """A translated pattern (``strands_offload._pattern.Translation``, or any object with its attributes)."""

def search(
    index: TextIndex,
    pattern: bytes | None,
    matcher: Matcher | None,
    line_span: tuple[int, int, str] | None,
    context_lines: int,
    max_chars: int,
) -> str:
    """One grep or listing; ``line_span`` is ``(first, last, label)``, 0-based, checked by the caller."""

def search_bytes(data: bytes, pattern: bytes, matcher: Matcher, context_lines: int, max_chars: int) -> str: ...

# keyword search
__all__ += ["KeywordScorer", "WordTable"]

@final
class WordTable:
    r"""Which code points are word characters (Python ``re`` ``\w``) for one Unicode version."""

    def __new__(cls, ranges: list[tuple[int, int]]) -> WordTable: ...
    @staticmethod
    def shipped(unicode_version: str) -> WordTable | None: ...
    @staticmethod
    def shipped_versions() -> list[str]: ...
    def ranges(self) -> list[tuple[int, int]]: ...
    def is_word_char(self, c: str) -> bool: ...
    def __len__(self) -> int: ...

@final
class KeywordScorer:
    """Counts distinct query words among the words of lower-cased texts (Python ``re`` word rules)."""

    def __new__(cls, words: list[str], table: WordTable) -> KeywordScorer: ...
    def score(self, key: str, text: str) -> int: ...
    def __len__(self) -> int: ...

# jsonpath
__all__ += ["json_query"]

def json_query(data: bytes, query: str, *, max_chars: int = 10000, trailing_comma_errors: bool = False) -> str:
    """Evaluate a JSONPath ``query`` on the JSON document ``data``; the matches as indented JSON.

    Raises ``ValueError`` when ``data`` is not JSON or ``query`` does not parse; document errors
    carry ``json.loads``'s text, in CPython 3.13's wording of trailing commas when
    ``trailing_comma_errors`` is true (``strands_offload.json_query`` picks the running one).
    """

# ranking of short documents (tool definitions, previews)
__all__ += ["Bm25Ranker", "rank_terms"]

@final
class Bm25Ranker:
    """BM25 scores of texts for a query; the index is rebuilt only when the texts change (content hash)."""

    def __new__(cls) -> Bm25Ranker: ...
    def score(self, query: str, texts: list[str]) -> list[float]:
        """One score in ``[0, 1]`` per text (the best match 1, no match 0), with the GIL released."""
    @property
    def builds(self) -> int:
        """How many times the index was built."""

def rank_terms(text: str) -> list[str]:
    """The terms ``Bm25Ranker`` ranks ``text`` by: split on case and separators, folded, stemmed, no stop words."""

# relevance previews: verbatim chunks of a long text, scored with BM25
__all__ += ["content_hash", "relevance_chunks"]

def content_hash(data: bytes) -> int:
    """A 64-bit hash of ``data`` (not cryptographic); ``Offload.dedupe`` compares results by it first."""

def relevance_chunks(
    text: str, max_chars: int, query: str | None = None, tool_input: str | None = None
) -> tuple[list[int], list[int], list[int], list[float] | None]:
    """``text`` in chunks of at most ``max_chars`` characters, each ending after a newline if it can.

    Their start offsets, first and last lines (1-based), and with ``query`` their BM25 scores divided
    by the best (``Bm25Ranker``'s scores of the chunk texts). With ``tool_input`` too, ``query`` is the
    question and the input's terms weigh less: the input as a whole counts as one term of the
    question. The GIL is released.
    """

# the turn under accelerate(): the event loop's deep copies, the tracer's message events
__all__ += ["_deep_copy", "_span_json", "_span_json_ok", "_span_message_events"]

def _deep_copy(obj: object, fallback: Callable[[object, dict[int, object]], object]) -> object:
    """``copy.deepcopy(obj)``, with dicts, lists and tuples copied natively.

    The immutable scalars are shared; any other value (and containers nested deeper than 128 levels)
    is given to ``fallback(value, memo)`` with the memo of the copy so far.
    """

def _span_json(obj: object, *, max_depth: int) -> str | None:
    """The strands tracer's ``serialize(obj)`` text, or ``None`` when its own code must answer."""

def _span_json_ok(obj: object, *, max_depth: int) -> bool:
    """Whether ``_span_json(obj, max_depth=max_depth)`` gives a text, without writing it."""

def _span_message_events(
    messages: object, *, write: bool, max_depth: int, write_from: int = 0
) -> tuple[list[tuple[str, str, str]], int]:
    """The tracer's per-message events for the longest prefix of ``messages`` known here.

    Returns the events (name, redaction attribute, text) of the prefix's messages from ``write_from``
    on (the earlier ones only checked) and the prefix's length.
    """
