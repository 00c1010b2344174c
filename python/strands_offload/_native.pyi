"""Typed stubs of the compiled module ``strands_offload._native``."""

from typing import final

__version__: str

@final
class KeywordScorer:
    """Counts distinct query words among the words of lower-cased texts (Python ``re`` word rules)."""

    def __new__(cls, words: list[str]) -> KeywordScorer: ...
    def score(self, key: str, text: str) -> int: ...
    def __len__(self) -> int: ...
