"""tokenizer="auto": an OpenAI model gets its own encoding's exact counts; other models the default."""

from __future__ import annotations

from typing import Any

import pytest
from _agent_harness import run
from strands_offload.context_offloader import ContextOffloader
from strands_offload.context_offloader.plugin import _encoding_for_model
from strands_offload.demo.scripted_model import ScriptedModel

openai_module = pytest.importorskip("strands.models.openai", reason="needs the openai package")

TEXT = "\n".join(f"event {i}: user_{i % 17} logged in from 10.0.{i % 255}.{i % 7}" for i in range(3000))


@pytest.mark.parametrize(
    ("model_id", "encoding"),
    [
        ("gpt-4o-mini", "o200k_base"),
        ("gpt-4.1", "o200k_base"),
        ("gpt-4-turbo", "cl100k_base"),
        ("gpt-3.5-turbo", "cl100k_base"),
        ("my-local-llama", None),
    ],
)
def test_encoding_follows_the_openai_model_id(model_id: str, encoding: str | None) -> None:
    model = openai_module.OpenAIModel(client_args={"api_key": "unused"}, model_id=model_id)
    assert _encoding_for_model(model) == encoding


def test_non_openai_model_has_no_encoding() -> None:
    assert _encoding_for_model(ScriptedModel(lambda _m: None)) is None  # type: ignore[arg-type,return-value]


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
