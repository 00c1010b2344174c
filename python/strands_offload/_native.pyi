"""Typed stubs of the compiled module ``strands_offload._native``."""

__version__: str
