"""tokenizer="auto": an OpenAI model gets its own encoding's exact counts; other models the default."""

from __future__ import annotations

from typing import Any

import pytest
from _agent_harness import run
from strands_offload._heuristic import counter_for
from strands_offload._native import token_counter
from strands_offload.context_offloader import ContextOffloader
from strands_offload.demo.scripted_model import ScriptedModel

openai_module = pytest.importorskip("strands.models.openai", reason="needs the openai package")

TEXT = "\n".join(f"event {i}: user_{i % 17} logged in from 10.0.{i % 255}.{i % 7}" for i in range(3000))


@pytest.mark.parametrize(
    ("model_id", "encoding"),
    [
        ("gpt-4o-mini", "o200k_base"),
        ("gpt-4.1", "o200k_base"),
        ("gpt-4.5-preview", "o200k_base"),
        ("GPT-5", "o200k_base"),
        ("gpt-4-turbo", "cl100k_base"),
        ("gpt-3.5-turbo", "cl100k_base"),
        ("my-local-llama", None),
    ],
)
def test_encoding_follows_the_openai_model_id(model_id: str, encoding: str | None) -> None:
    model = openai_module.OpenAIModel(client_args={"api_key": "unused"}, model_id=model_id)
    # One rule for the offloader and the context manager (both resolve tokenizer= here).
    counter = counter_for("auto", model)
    assert (counter.name if counter is not None else None) == encoding
    assert counter_for("cl100k_base", model) is counter_for("cl100k_base", None) is token_counter("cl100k_base")
    assert counter_for(None, model) is None


def test_non_openai_model_has_no_encoding() -> None:
    assert counter_for("auto", ScriptedModel(lambda _m: None)) is None


def test_auto_counts_exactly_for_an_openai_model(tiktoken_offline: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    import tiktoken

    # An OpenAI model whose replies come from the script instead of the API.
    class ScriptedOpenAI(openai_module.OpenAIModel):  # type: ignore[misc,name-defined]
        def __init__(self, script: Any) -> None:
            super().__init__(client_args={"api_key": "unused"}, model_id="gpt-4o")
            self._scripted = ScriptedModel(script)

        def stream(self, messages: Any, *args: Any, **kwargs: Any) -> Any:
            return self._scripted.stream(messages, *args, **kwargs)

    import _agent_harness

    monkeypatch.setattr(_agent_harness, "ScriptedModel", ScriptedOpenAI)
    _, results = run(ContextOffloader(tokenizer="auto"), [{"text": TEXT}])
    exact = len(tiktoken.get_encoding("o200k_base").encode_ordinary(TEXT))
    assert results[0]["content"][0]["text"].startswith(f"[Offloaded: 1 blocks, ~{exact:,} tokens]")
    assert exact != -(-len(TEXT) // 4)  # differs from the chars/4 estimate the default would print
