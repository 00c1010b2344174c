"""strands-offload: a Rust-accelerated drop-in for the context offloading of Strands Agents.

Switch from the reference by replacing the import prefix, for example
``strands.vended_plugins.context_offloader`` becomes ``strands_offload.context_offloader``.
The native hot path (token counting, previews, grep, JSON text) is exposed here too.
"""

from importlib.metadata import PackageNotFoundError, version

from . import _native

# json, jsonpath
from ._native import json_dumps, json_dumps_len, json_query

try:
    __version__ = version("strands-offload")
except PackageNotFoundError:  # running from a source tree without metadata
    __version__ = _native.__version__

__all__ = [
    "__version__",
    # json
    "json_dumps",
    "json_dumps_len",
    # jsonpath
    "json_query",
]
