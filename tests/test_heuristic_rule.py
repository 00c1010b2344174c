"""One rule decides whether a model counts with the SDK's heuristic, for every provider class.

The offloader and the context manager both skip calling ``model.count_tokens`` when
``uses_base_heuristic`` says the model would answer with the base chars/4 heuristic. For each
provider model class of the installed SDK that imports here, the rule is checked against what
the class's ``count_tokens`` does: where the rule says "heuristic", the model's own answer on
sample conversations equals the base method's; where it says otherwise, the class overrides the
count (a network call, which this test does not make).
"""

from __future__ import annotations

import asyncio
import importlib
from typing import Any

import pytest
from strands.models.model import Model
from strands_offload._heuristic import uses_base_heuristic

_SAMPLES: list[list[Any]] = [
    [{"role": "user", "content": [{"text": "hello there, how many tokens?"}]}],
    [
        {"role": "user", "content": [{"text": "x" * 401}]},
        {"role": "assistant", "content": [{"toolUse": {"toolUseId": "t1", "name": "f", "input": {"q": [1, 2, "é"]}}}]},
        {
            "role": "user",
            "content": [{"toolResult": {"toolUseId": "t1", "content": [{"json": {"rows": list(range(50))}}]}}],
        },
    ],
]

# (module, class, constructor keywords, the rule's expected answer)
_PROVIDERS = [
    ("strands.models.bedrock", "BedrockModel", {"model_id": "m", "region_name": "us-east-1"}, True),
    (
        "strands.models.bedrock",
        "BedrockModel",
        {"model_id": "m", "region_name": "us-east-1", "use_native_token_count": True},
        False,
    ),
    ("strands.models.anthropic", "AnthropicModel", {"model_id": "m", "max_tokens": 10}, True),
    ("strands.models.openai", "OpenAIModel", {"model_id": "m", "client_args": {"api_key": "k"}}, True),
    (
        "strands.models.openai_responses",
        "OpenAIResponsesModel",
        {"model_id": "m", "client_args": {"api_key": "k"}},
        False,
    ),
    ("strands.models.llamacpp", "LlamaCppModel", {"base_url": "http://127.0.0.1:9"}, False),
]


@pytest.mark.parametrize(
    ("module", "name", "kwargs", "expected"),
    _PROVIDERS,
    ids=[f"{name}{'-native' if kw.get('use_native_token_count') else ''}" for _, name, kw, _ in _PROVIDERS],
)
def test_the_rule_matches_what_each_provider_counts_with(
    module: str, name: str, kwargs: dict[str, Any], expected: bool
) -> None:
    try:
        cls = getattr(importlib.import_module(module), name)
    except ImportError:
        pytest.skip(f"{module} needs a provider SDK that is not installed")
    model = cls(**kwargs)
    assert uses_base_heuristic(model) is expected
    if expected:
        for messages in _SAMPLES:
            own = asyncio.run(model.count_tokens(messages))
            base = asyncio.run(Model.count_tokens(model, messages))
            assert own == base
    else:
        assert type(model).count_tokens is not Model.count_tokens


def test_offloader_and_context_manager_share_the_rule() -> None:
    from strands_offload.context_manager import _measure
    from strands_offload.context_offloader import plugin

    assert _measure.uses_base_heuristic is uses_base_heuristic
    assert plugin.uses_base_heuristic is uses_base_heuristic
