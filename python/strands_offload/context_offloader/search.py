"""Grep and line-range retrieval over offloaded text, at the reference's module path.

Both names run in the native core; see ``strands_offload.search_content``.
"""

from .._search import is_searchable_content as _is_searchable_content
from .._search import search_content as _search_content

__all__ = ["_is_searchable_content", "_search_content"]
