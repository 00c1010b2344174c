"""The one definition of a cache-invalidating edit, case by case, on the recorder the manager reports to.

An edit invalidates a provider's prompt cache when it changes a message the previous model request
of the same agent sent, and the agent's model caches prompts (by its config, or a ``cachePoint``
block in what was sent).
"""

from __future__ import annotations

from typing import Any

import pytest
from strands import Agent
from strands_offload._ledger import Ledger
from strands_offload.context_manager._edits import EditRecorder
from strands_offload.demo.scripted_model import Reply, ScriptedModel

PREVIEW = {"text": "[Truncated: ...]"}


def _agent(**config: Any) -> Agent:
    model = ScriptedModel(lambda _messages: Reply("ok"))
    model.update_config(**config)
    return Agent(model=model, callback_handler=None)


def _conversation(cache_point: bool = False) -> list[dict[str, Any]]:
    first: list[dict[str, Any]] = [{"text": "x" * 400}]
    if cache_point:
        first.append({"cachePoint": {"type": "default"}})
    return [{"role": "user", "content": first}, {"role": "assistant", "content": [{"text": "y" * 400}]}]


def _replace_first(recorder: EditRecorder, agent: Agent, message: dict[str, Any]) -> None:
    old = message["content"][0]
    message["content"][0] = PREVIEW
    recorder.blocks_replaced(agent, "offload:truncate", [(message, old, PREVIEW, 100)], 0)


@pytest.mark.parametrize(
    ("config", "cache_point", "sent_before", "counted"),
    [
        ({"cache_config": {"strategy": "auto"}}, False, True, True),
        ({"cache_prompt": "default"}, False, True, True),
        ({}, True, True, True),  # a cache point block in what was sent
        ({}, False, True, False),  # no caching: an edit costs no cache
        ({"cache_config": {"strategy": "auto"}}, False, False, False),  # nothing sent yet
    ],
    ids=["cache-config", "cache-prompt", "cache-point-block", "no-caching", "first-request"],
)
def test_an_edit_of_a_sent_message_counts_when_the_model_caches(
    config: dict[str, Any], cache_point: bool, sent_before: bool, counted: bool
) -> None:
    agent = _agent(**config)
    recorder = EditRecorder(Ledger(), None)
    messages = _conversation(cache_point)
    if sent_before:
        recorder.request_sent(agent, messages)
    _replace_first(recorder, agent, messages[0])
    savings = recorder.ledger.savings(agent)
    assert savings.edits == 1 and savings.cache_invalidating_edits == int(counted)


def test_a_message_that_arrived_after_the_request_is_not_cached_yet() -> None:
    agent = _agent(cache_config={"strategy": "auto"})
    recorder = EditRecorder(Ledger(), None)
    messages = _conversation()
    recorder.request_sent(agent, messages)
    arrived = {"role": "user", "content": [{"text": "z" * 400}]}
    equal_to_sent = {"role": "user", "content": [{"text": "x" * 400}]}  # equal, but not what was sent
    _replace_first(recorder, agent, arrived)
    _replace_first(recorder, agent, equal_to_sent)
    assert recorder.ledger.savings(agent).cache_invalidating_edits == 0
    recorder.messages_removed(agent, "offload:summarize", [messages[0]], [{"text": "[Summarized]"}], 0)
    assert recorder.ledger.savings(agent).cache_invalidating_edits == 1


def test_each_agent_is_judged_by_its_own_previous_request() -> None:
    first, second = _agent(cache_config={"strategy": "auto"}), _agent(cache_config={"strategy": "auto"})
    recorder = EditRecorder(Ledger(), None)
    messages = _conversation()
    recorder.request_sent(first, messages)
    recorder.request_sent(second, _conversation())
    _replace_first(recorder, second, messages[0])  # sent by the first agent, not the second
    _replace_first(recorder, first, messages[1])
    assert recorder.ledger.savings(second).cache_invalidating_edits == 0
    assert recorder.ledger.savings(first).cache_invalidating_edits == 1
    assert recorder.ledger.savings().edits == 2


@pytest.mark.parametrize(
    ("model_id", "counted"),
    [("anthropic.claude-sonnet-4-20250514-v1:0", True), ("amazon.nova-pro-v1:0", False)],
    ids=["claude", "nova"],
)
def test_a_cache_config_bedrock_does_not_act_on_invalidates_nothing(model_id: str, counted: bool) -> None:
    from strands.models.bedrock import BedrockModel
    from strands.models.model import CacheConfig

    # "auto" places cache points only for Claude models on Bedrock: elsewhere no cache point is sent.
    model = BedrockModel(model_id=model_id, region_name="us-east-1", cache_config=CacheConfig(strategy="auto"))
    agent = Agent(model=model, callback_handler=None)
    recorder = EditRecorder(Ledger(), None)
    messages = _conversation()
    recorder.request_sent(agent, messages)
    _replace_first(recorder, agent, messages[0])
    assert recorder.ledger.savings(agent).cache_invalidating_edits == int(counted)
