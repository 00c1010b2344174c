"""Typed stubs of the compiled module ``strands_offload._native``."""

__version__: str

# grep
from typing import final

# PyO3 lists every added name in __all__; merge with the other areas' names.
__all__ = ["Matcher", "TextIndex", "__version__", "search"]

@final
class TextIndex:
    """A text (str or UTF-8 bytes) held once with its line index."""

    def __new__(cls, data: str | bytes) -> TextIndex: ...
    @property
    def line_count(self) -> int: ...
    @property
    def is_empty(self) -> bool: ...
    @property
    def is_ascii(self) -> bool: ...
    @property
    def byte_length(self) -> int: ...

@final
class Matcher:
    """A compiled grep pattern: a literal or a translated regular expression."""

    @staticmethod
    def literal(needle: bytes) -> Matcher: ...
    @staticmethod
    def regex(
        linear: str | None,
        linear_needs_ascii_text: bool,
        backtracking: str,
        prefilter: str,
        surrogate_exact: bool,
    ) -> Matcher: ...

def search(
    index: TextIndex,
    pattern: bytes | None,
    matcher: Matcher | None,
    line_range: tuple[int, int, str, str] | None,
    context_lines: int,
    max_chars: int,
) -> str: ...
