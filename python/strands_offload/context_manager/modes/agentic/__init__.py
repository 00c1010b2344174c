"""The agentic mode: the model manages its own context with tools and sees its token usage.

The tools (``summarize_context``, ``truncate_context``, ``pin_context``) and the usage middleware
are the SDK's own, taken through the seam module: ``ContextManager.from_strategy("agentic")``
registers them on the agent it is bound to, exactly as ``Agent(context_manager="agentic")`` does.
"""

from __future__ import annotations

from typing import Any

from ...._seam import agentic_tools, token_usage_middleware

__all__ = ["agentic_tools", "create_token_usage_middleware"]


def create_token_usage_middleware() -> Any:
    """The middleware that shows the model its context usage before each call."""
    return token_usage_middleware()
