"""The retrieve_context spec: the reference's schema, and prose of the same length.

The SDK counts tool specs into every projected input (chars/2 of their JSON), so a description of
another length would move utilization, and with it when strategies fire.
"""

from __future__ import annotations

import json
from typing import Any

from strands._context_manager.retrieval_tool import _create_retrieval_tool
from strands_offload.context_manager.retrieval_tool import create_retrieval_tool


def test_schema_is_the_reference_and_the_spec_counts_the_same() -> None:
    stash: Any = object()
    theirs, ours = _create_retrieval_tool(stash).tool_spec, create_retrieval_tool(stash).tool_spec
    assert ours["name"] == theirs["name"] == "retrieve_context"
    assert ours["inputSchema"] == theirs["inputSchema"]
    assert json.dumps(ours["inputSchema"]) == json.dumps(theirs["inputSchema"])  # key order too
    assert ours["description"] != theirs["description"]
    assert len(json.dumps(ours)) == len(json.dumps(theirs))
