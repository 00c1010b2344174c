"""Every import path users have today maps to ours by its prefix, with the same names and values."""

from __future__ import annotations

import dataclasses
import inspect

import pytest
import strands.experimental.context_manager as public_reference
from _cm_harness import REFERENCE, Impl

SUBMODULE_NAMES: dict[str, list[str]] = {
    "context_manager": ["ContextManager", "CONTEXT_MANAGER_PRESETS"],
    "types": ["ContextState", "ContextStrategy", "StashConfig", "ContextManagerConfig"],
    "presets": ["STRATEGY_PRESET_NAMES", "StrategyPresetName"],
    "stash": ["Stash", "STASH_PREFIX"],
    "retrieval_tool": ["RETRIEVAL_TOOL_NAME"],
    "methods.truncate": ["TruncateConfig"],
    "methods.summarize": ["SummarizeConfig"],
    "strategies.offload": ["Offload"],
    "strategies.offload.base": ["OffloadConditions", "OffloadTarget"],
    "strategies.offload.truncate": ["TruncateStrategy", "EmergencyTruncateStrategy"],
    "strategies.offload.summarize": ["SummarizeStrategy"],
    "strategies.offload.drop": ["DropStrategy"],
    "modes.agentic": [],
}
TYPED_DICT_KEYS = {
    "TruncateConfig": {"preview_tokens", "preview"},
    "SummarizeConfig": {"model", "system_prompt"},
    "StashConfig": {"storage", "retrieval_tool"},
    "ContextManagerConfig": {"strategies", "stash"},
    "OffloadConditions": {"threshold", "utilization", "preserve_recent"},
}


def test_public_names_match_reference(impl: Impl) -> None:
    assert sorted(impl.public.__all__) == sorted(REFERENCE.public.__all__)
    for name in REFERENCE.public.__all__:
        assert hasattr(impl.public, name), name


@pytest.mark.parametrize("submodule", list(SUBMODULE_NAMES))
def test_submodule_holds_the_reference_names(impl: Impl, submodule: str) -> None:
    module = impl.module(submodule)
    for name in SUBMODULE_NAMES[submodule]:
        assert hasattr(module, name), f"{module.__name__}.{name}"


def test_constants_match_reference(impl: Impl) -> None:
    assert impl.module("stash").STASH_PREFIX == "context"
    assert impl.module("retrieval_tool").RETRIEVAL_TOOL_NAME == "retrieve_context"
    assert impl.module("context_manager").CONTEXT_MANAGER_PRESETS == ("auto", "agentic")
    assert impl.module("presets").STRATEGY_PRESET_NAMES == REFERENCE.public.STRATEGY_PRESET_NAMES


def test_public_and_private_paths_name_the_same_objects(impl: Impl) -> None:
    assert impl.public.ContextManager is impl.module("context_manager").ContextManager
    assert impl.public.Offload is impl.module("strategies.offload").Offload
    assert impl.public.ContextState is impl.module("types").ContextState


def test_context_manager_is_a_reference_context_manager(impl: Impl) -> None:
    """The Agent accepts only instances of its own class (and refuses them in plugins= by isinstance)."""
    assert issubclass(impl.ContextManager, public_reference.ContextManager)
    parameters = inspect.signature(impl.ContextManager).parameters
    assert [(p.name, p.kind, p.default) for p in parameters.values()][:2] == [
        ("strategies", inspect.Parameter.KEYWORD_ONLY, None),
        ("stash", inspect.Parameter.KEYWORD_ONLY, None),
    ]


@pytest.mark.parametrize("name", list(TYPED_DICT_KEYS))
def test_config_dicts_have_the_reference_keys(impl: Impl, name: str) -> None:
    config = getattr(impl.public, name)
    assert set(config.__annotations__) == TYPED_DICT_KEYS[name]
    assert config.__total__ is False


def test_context_state_fields(impl: Impl) -> None:
    fields = {f.name: f.default for f in dataclasses.fields(impl.public.ContextState)}
    assert list(fields) == ["messages", "agent", "utilization", "overflow", "stash"]
    assert fields["overflow"] is False and fields["stash"] is None
