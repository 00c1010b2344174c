"""The json stand-in accelerate() installs: json.dumps's answer for every input, errors included."""

from __future__ import annotations

import collections
import decimal
import enum
import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from strands_offload import _native
from strands_offload._accelerate import _json
from strands_offload._accelerate._json import INDENT_DEPTH, dumps, dumps_len, native_dumps, stand_in


class IterList(list):  # type: ignore[type-arg]
    def __iter__(self) -> Any:
        return iter([9])


class IterTuple(tuple):  # type: ignore[type-arg]
    def __iter__(self) -> Any:
        return iter([7, 7])


class ItemsDict(dict):  # type: ignore[type-arg]
    def items(self) -> Any:
        return [("overridden", True)]


class LenDict(dict):  # type: ignore[type-arg]
    def __len__(self) -> int:
        return 0


class LenList(list):  # type: ignore[type-arg]
    def __len__(self) -> int:
        return 0


class PlainList(list):  # type: ignore[type-arg]
    pass


class Colour(enum.IntEnum):
    RED = 1


class Name(str):
    pass


def outcome(function: Any, *args: Any, **kwargs: Any) -> tuple[str, str]:
    """The result, or the exception's type and message."""
    try:
        return "ok", function(*args, **kwargs)
    except Exception as error:
        return type(error).__name__, str(error)


def same_as_json(value: Any, **options: Any) -> None:
    assert outcome(dumps, value, **options) == outcome(json.dumps, value, **options)


# ---------------------------------------------------------------------------- generated values

_floats = st.floats(allow_nan=True, allow_infinity=True) | st.sampled_from([0.0, -0.0, 1e16, 1e-7, 5e-324])
_texts = st.text(st.characters(codec=None), max_size=20) | st.sampled_from(
    ["\ud800", "a\udfffb", "\x00\x1f\x7f", "é東😀"]
)
_keys = _texts | st.integers() | _floats | st.booleans() | st.none()
_scalars = st.none() | st.booleans() | st.integers() | st.integers(min_value=2**64) | _floats | _texts
_odd = st.sampled_from(
    [b"bytes", {1, 2}, object(), decimal.Decimal("1.5"), Colour.RED, Name("sub"), complex(1, 2), (1, "t")]
)


def _containers(children: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    lists = st.lists(children, max_size=5)
    return (
        lists
        | lists.map(tuple)
        | st.dictionaries(_keys, children, max_size=5)
        | lists.map(IterList)
        | lists.map(IterTuple)
        | lists.map(LenList)
        | lists.map(PlainList)
        | st.dictionaries(_texts, children, max_size=3).map(ItemsDict)
        | st.dictionaries(_texts, children, max_size=3).map(LenDict)
        | st.dictionaries(_texts, children, max_size=3).map(collections.OrderedDict)
        | st.dictionaries(st.tuples(st.integers()), children, max_size=2)
    )


json_values = st.recursive(_scalars | _odd, _containers, max_leaves=25)
plain_json = st.recursive(
    _scalars,
    lambda children: st.lists(children, max_size=5) | st.dictionaries(_keys, children, max_size=5),
    max_leaves=40,
)
indents = st.sampled_from([None, None, 0, 1, 2, 4, "", " ", "\t", "--", -1, True, 2.0, "\n"])
options = st.fixed_dictionaries(
    {},
    optional={
        "indent": indents,
        "ensure_ascii": st.sampled_from([True, False, 1]),
        "sort_keys": st.booleans(),
        "separators": st.sampled_from([None, (",", ":"), (", ", ": ")]),
        "allow_nan": st.booleans(),
        "check_circular": st.just(True),
        "skipkeys": st.booleans(),
        "default": st.sampled_from([None, repr]),
        "cls": st.sampled_from([None, json.JSONEncoder]),
    },
)


@settings(max_examples=600)
@given(value=json_values, opts=options)
def test_dumps_is_json_dumps_for_generated_values_and_options(value: Any, opts: dict[str, Any]) -> None:
    same_as_json(value, **opts)


@settings(max_examples=300)
@given(value=plain_json, indent=st.sampled_from([None, 2, "\t"]))
def test_plain_values_are_answered_natively(value: Any, indent: Any) -> None:
    native = native_dumps(value, indent)
    expected = outcome(json.dumps, value, indent=indent)
    if expected[0] == "ok":
        assert native == expected[1]
    else:
        assert native is None


@settings(max_examples=300)
@given(value=json_values)
def test_dumps_len_is_the_length_of_json_dumps_or_declines(value: Any) -> None:
    length = dumps_len(value)
    expected = outcome(json.dumps, value)
    if length is not None:
        assert expected == ("ok", expected[1]) and length == len(expected[1])


# ---------------------------------------------------------------------------- named cases


@pytest.mark.parametrize(
    "value",
    [
        IterList([1]),
        IterTuple((1,)),
        ItemsDict(a=1),
        LenDict(a=1),
        LenList([1]),
        [IterList([1, 2])],
        {"x": ItemsDict(b=2)},
        {"x": LenDict(b=2)},
        collections.defaultdict(list, a=[1]),
        Colour.RED,
        {Name("k"): Name("v")},
        {"k": float("nan"), "j": float("-inf")},
        {(1, 2): 3},
        {1.5: "a", True: "b", None: "c", 10**30: "d"},
        {decimal.Decimal(1): 1},
        [b"raw"],
        {"s": {1, 2}},
    ],
    ids=repr,
)
@pytest.mark.parametrize("indent", [None, 2])
def test_subclasses_and_rejected_values_get_json_answer(value: Any, indent: Any) -> None:
    same_as_json(value, indent=indent)


def test_overridden_iteration_is_followed() -> None:
    assert dumps(IterList([1])) == "[9]"
    assert dumps({"a": ItemsDict(b=2)}, indent=1) == '{\n "a": {\n  "overridden": true\n }\n}'


def test_circular_reference_error_is_json_s() -> None:
    loop: list[Any] = [1]
    loop.append(loop)
    assert outcome(dumps, loop) == ("ValueError", "Circular reference detected")
    assert outcome(dumps, loop, indent=2) == ("ValueError", "Circular reference detected")


@pytest.mark.parametrize(
    "opts",
    [
        {"ensure_ascii": False},
        {"separators": (",", ":")},
        {"sort_keys": True},
        {"default": str},
        {"cls": json.JSONEncoder},
        {"indent": 0},
        {"indent": ""},
        {"indent": "\n"},
        {"check_circular": False},
        {"allow_nan": False},
        {"skipkeys": True},
    ],
    ids=repr,
)
def test_options_we_do_not_handle_go_to_json(opts: dict[str, Any], monkeypatch: pytest.MonkeyPatch) -> None:
    value = {"b": "é", "a": [1, float("nan")], (1,): 2} if opts.get("skipkeys") else {"b": "é", "a": [1, 2.5]}
    seen: list[dict[str, Any]] = []
    real = json.dumps

    def spy(obj: Any, **kwargs: Any) -> str:
        seen.append(kwargs)
        return real(obj, **kwargs)

    expected = outcome(real, value, **opts)
    monkeypatch.setattr(json, "dumps", spy)
    assert outcome(dumps, value, **opts) == expected
    assert seen == [opts]


def test_default_values_given_explicitly_stay_native(monkeypatch: pytest.MonkeyPatch) -> None:
    value = {"a": [1, "é"]}
    explicit = {"ensure_ascii": True, "sort_keys": False, "cls": None, "default": None, "separators": None}
    monkeypatch.setattr(_json, "native_dumps", lambda v, indent=None: "native")
    assert dumps(value, **explicit) == "native"
    assert dumps(value, indent=2, allow_nan=True, check_circular=True, skipkeys=False) == "native"


def test_positional_options_are_json_s_error() -> None:
    assert outcome(dumps, {"a": 1}, True) == outcome(json.dumps, {"a": 1}, True)  # type: ignore[arg-type]


def test_a_replaced_json_dumps_is_respected(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(json, "dumps", lambda obj, **kwargs: "patched")
    assert dumps({"a": 1}) == "patched"
    assert native_dumps({"a": 1}) is None and dumps_len({"a": 1}) is None


def _nested(depth: int, leaf: Any) -> Any:
    value = leaf
    for level in range(depth):
        value = [value] if level % 2 else {"k": value}
    return value


def _deepest_json_accepts(indent: Any, leaf: Any) -> int:
    """The deepest nesting json.dumps answers from this stack (doubling, then bisection)."""
    low, high = 1, 64
    while outcome(json.dumps, _nested(high, leaf), indent=indent)[0] == "ok":
        low, high = high, high * 2
    while high - low > 1:
        middle = (low + high) // 2
        if outcome(json.dumps, _nested(middle, leaf), indent=indent)[0] == "ok":
            low = middle
        else:
            high = middle
    return low


@pytest.mark.parametrize("indent", [None, 2])
@pytest.mark.parametrize("leaf", [[], "x"], ids=repr)
def test_deep_nesting_never_succeeds_where_json_fails(indent: Any, leaf: Any) -> None:
    """Near the recursion limit json must be the one answering.

    The stand-in is one Python call deeper than a direct ``json.dumps``, so at the very edge it can
    raise json's RecursionError one nesting level sooner; it never returns text where json raises.
    """
    edge = _deepest_json_accepts(indent, leaf)
    shifted = 0
    for depth in [*range(1, INDENT_DEPTH + 3), *range(edge - 3, edge + 4)]:
        value = _nested(depth, leaf)
        expected, actual = outcome(json.dumps, value, indent=indent), outcome(dumps, value, indent=indent)
        if expected != actual:
            assert expected[0] == "ok" and actual[0] == "RecursionError", depth
            shifted += 1
    assert shifted <= 1


def test_indented_dumps_nested_deep_go_to_json() -> None:
    assert native_dumps(_nested(INDENT_DEPTH - 1, 1), 2) is not None
    assert native_dumps(_nested(INDENT_DEPTH, 1), 2) is None
    assert native_dumps(_nested(INDENT_DEPTH, 1)) is not None
    same_as_json(_nested(INDENT_DEPTH + 5, 1), indent="\t")


def test_exact_types_are_answered_natively_and_a_subclass_anywhere_goes_to_json() -> None:
    plain = {"a": [1, 2.5, None, True, ("t", "u")], "b": {"c": "d", 1: 2, 1.5: False, None: 0}}
    for value in (plain, "text", None, 3):
        assert native_dumps(value) == json.dumps(value)
        assert native_dumps(value, 2) == json.dumps(value, indent=2)
        assert dumps_len(value) == len(json.dumps(value))
    for value in (
        PlainList(),
        [Name("x")],
        {"a": Colour.RED},
        [collections.OrderedDict()],
        {Name("k"): 1},
        {Colour.RED: 1},
        [[[{"deep": (Name("y"),)}]]],
        [object()],
    ):
        assert native_dumps(value) is None and native_dumps(value, 2) is None
        assert dumps_len(value) is None
    assert _native._json_dumps_exact([Name("x")]) is None
    assert _native._json_dumps_len_exact({"k": [PlainList()]}) is None


# ---------------------------------------------------------------------------- the module stand-in


def test_stand_in_forwards_everything_but_dumps(monkeypatch: pytest.MonkeyPatch) -> None:
    module = stand_in()
    assert module.dumps is dumps
    assert module.loads is json.loads and module.JSONEncoder is json.JSONEncoder
    assert module.JSONDecodeError is json.JSONDecodeError and module.__spec__ is json.__spec__
    assert module.loads('{"a": [1]}') == {"a": [1]}
    monkeypatch.setattr(json, "loads", lambda text: "patched later")
    assert module.loads("[]") == "patched later"
    assert "dumps" in dir(module) and "JSONEncoder" in dir(module)
    assert "stand-in" in repr(module)
    with pytest.raises(AttributeError):
        module.no_such_name  # noqa: B018
    assert json.dumps is not dumps  # never patched process-wide
