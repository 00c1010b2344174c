"""Configuration and state types of the context manager.

The types are the SDK's own public ones (``strands.experimental.context_manager``), re-exported:
strategies written against either package see the same ``ContextState``, the TypedDicts check
the same keys, and ``isinstance(x, ContextStrategy)`` answers alike. The block predicates are ours.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from strands.experimental.context_manager import (
    ContextManagerConfig,
    ContextState,
    ContextStrategy,
    StashConfig,
)

__all__ = [
    "ContextManagerConfig",
    "ContextState",
    "ContextStrategy",
    "StashConfig",
    "is_text_block",
    "is_tool_result_block",
    "is_tool_use_block",
]


def is_tool_result_block(block: Mapping[str, Any]) -> bool:
    """Whether ``block`` carries a tool result."""
    return "toolResult" in block


def is_tool_use_block(block: Mapping[str, Any]) -> bool:
    """Whether ``block`` carries a tool call."""
    return "toolUse" in block


def is_text_block(block: Mapping[str, Any]) -> bool:
    """Whether ``block`` is plain text: a ``text`` key and no tool use or result beside it."""
    return "text" in block and "toolResult" not in block and "toolUse" not in block
