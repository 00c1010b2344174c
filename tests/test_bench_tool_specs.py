"""The seeded catalog and queries of ``benches/tool_specs.py`` have the shape its figures claim."""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

from strands_offload._native import rank_terms
from strands_offload.demo.scripted_model import Reply, ScriptedModel

sys.path.insert(0, str(Path(__file__).parents[1] / "benches"))

import tool_specs  # noqa: E402


def test_catalog_and_queries() -> None:
    specs = tool_specs.catalog()
    assert len(specs) == 150 and specs == tool_specs.catalog()  # seeded
    tokens = asyncio.run(ScriptedModel(lambda m: Reply()).count_tokens([], tool_specs=specs))
    assert 40_000 <= tokens <= 60_000
    asked = tool_specs.queries(specs)
    assert len(asked) == 300 and asked == tool_specs.queries(specs)
    by_name = {spec["name"]: spec for spec in specs}
    non_lexical = [(text, name) for text, name, lexical in asked if not lexical]
    assert len(non_lexical) >= 150
    for text, name in non_lexical:
        surface = set(rank_terms(f"{name} {by_name[name]['description']}"))
        assert not set(rank_terms(text)) & surface, text
