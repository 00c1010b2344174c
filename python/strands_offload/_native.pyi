"""Typed stubs of the compiled module ``strands_offload._native``."""

__version__: str
__all__ = ["__version__"]

# json
__all__ += ["json_dumps", "json_dumps_len"]

def json_dumps(obj: object, *, indent: int | str | None = None) -> str:
    """Serialize ``obj`` exactly as ``json.dumps(obj, indent=indent)`` does with its other defaults."""

def json_dumps_len(obj: object) -> int:
    """Length of ``json.dumps(obj)`` (single-line form) computed without building the text."""

# jsonpath
__all__ += ["json_query"]

def json_query(data: bytes, query: str, *, max_chars: int = 10000) -> str:
    """Evaluate a JSONPath ``query`` on the JSON document ``data``; the matches as indented JSON.

    Raises ``ValueError`` when ``data`` is not JSON or ``query`` does not parse.
    """
