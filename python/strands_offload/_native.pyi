"""Typed stubs of the compiled module ``strands_offload._native``."""

__version__: str

# tokens
from collections.abc import Iterable, Sequence

# PyO3 fills the module's __all__ with everything added to it; stubtest compares the lists.
# (Lead: merge the other areas' names into this one list.)
__all__ = [
    "__version__",
    "count_tokens",
    "count_tokens_batch",
    "decode",
    "encode",
    "preview_bounds",
    "_count_tokens_bpe_openai",
]

def count_tokens(text: str, encoding: str = "cl100k_base", *, limit: int | None = None) -> int: ...
def count_tokens_batch(texts: Iterable[str], encoding: str = "cl100k_base") -> list[int]: ...
def encode(text: str, encoding: str = "cl100k_base") -> list[int]: ...
def decode(tokens: Sequence[int], encoding: str = "cl100k_base") -> str: ...
def preview_bounds(
    text: str,
    tokens: int,
    *,
    mode: str = "head",
    encoding: str = "heuristic",
    head_share: float = 0.6,
    count: bool = False,
) -> tuple[int, int, int, int | None]: ...
def _count_tokens_bpe_openai(text: str, encoding: str = "cl100k_base") -> int: ...
