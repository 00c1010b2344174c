"""json_dumps against json.dumps where Python code runs mid-walk or a subclass lies.

Regressions of the second hostile-input review (issue 18): the key cache must never
write a key it cached from an object that has since been freed (finalizers and
weakref callbacks run mid-walk), and container subclasses are read the way the
running interpreter's encoder reads them (truth value and pair unpacking under the
pure-Python encoder, real size and 2-tuples under the C one), with `items()` and
`__iter__` run once per dump.
"""

from __future__ import annotations

import gc
import json
import weakref
from typing import Any

import pytest
from strands_offload import _native, json_dumps
from test_json_dumps import assert_same


def _keyed(prefix: str, n: int) -> dict[str, int]:
    # Keys built at run time: fresh str objects, freed with the dict.
    return {"".join([prefix, str(i)]): i for i in range(n)}


class _Dropper(dict):  # type: ignore[type-arg]
    """A dict subclass whose items() drops the last reference to an earlier sibling."""

    def __init__(self, holder: list[Any], index: int) -> None:
        super().__init__(x=1)
        self.holder, self.index = holder, index

    def items(self):  # type: ignore[no-untyped-def, override]
        self.holder[self.index] = None
        return super().items()


_KEEP: list[Any] = []


def _finalizer_doc() -> list[Any]:
    """[a dict of 40 keys, a dict subclass whose items() frees it, a dict filled then].

    The freed dict's finalizer fills the last dict with 40 fresh keys, which the
    allocator may place at the addresses the freed keys had; each dict has more
    keys than the cache's warm-up, so the cache is live when the new keys arrive.
    """
    refill: dict[str, int] = {}

    class Refill(dict):  # type: ignore[type-arg]
        def __del__(self) -> None:
            refill.update(_keyed("new-", 40))

    doc: list[Any] = [None, None, refill]
    old: dict[str, Any] = _keyed("old-", 40)
    old["finalizer"] = Refill()  # written as {}
    doc[0] = old
    doc[1] = _Dropper(doc, 0)
    return doc


def _weakref_doc() -> list[Any]:
    """The same, with a weakref callback instead of a finalizer."""
    refill: dict[str, int] = {}

    class Target(dict):  # type: ignore[type-arg]
        pass

    old: dict[str, Any] = _keyed("old-", 40)
    old["target"] = Target()  # written as {}
    _KEEP.append(weakref.ref(old["target"], lambda _r: refill.update(_keyed("new-", 40))))
    doc: list[Any] = [old, None, refill]
    doc[1] = _Dropper(doc, 0)
    return doc


@pytest.mark.parametrize("build", [_finalizer_doc, _weakref_doc], ids=["finalizer", "weakref-callback"])
@pytest.mark.parametrize("indent", [None, 2])
def test_keys_of_a_freed_dict_are_never_written_for_new_strings(build: Any, indent: Any) -> None:
    for _ in range(20):
        want = json.dumps(build(), indent=indent)
        assert json.loads(want)[2] == {f"new-{i}": i for i in range(40)}
        assert json_dumps(build(), indent=indent) == want
        assert _native.json_dumps_utf8(build(), indent=indent) == want.encode()
        _KEEP.clear()
        gc.collect()


def test_keys_cached_across_many_dicts_match_json() -> None:
    # Many short-lived key strings, with Python code (a dict subclass) between them.
    class Sub(dict):  # type: ignore[type-arg]
        def items(self):  # type: ignore[no-untyped-def, override]
            return list(super().items())

    doc = [Sub(_keyed(f"k{j}-", 50)) if j % 3 == 0 else _keyed(f"k{j}-", 50) for j in range(60)]
    for indent in (None, 2):
        assert_same(doc, indent)


class _Falsy(list):  # type: ignore[type-arg]
    def __len__(self) -> int:
        return 0


class _FalsyTuple(tuple):  # type: ignore[type-arg]
    def __len__(self) -> int:
        return 0


class _FalsyDict(dict):  # type: ignore[type-arg]
    def __len__(self) -> int:
        return 0


class _NotTrue(list):  # type: ignore[type-arg]
    def __bool__(self) -> bool:
        return False


class _ListPairs(dict):  # type: ignore[type-arg]
    def items(self):  # type: ignore[no-untyped-def, override]
        return iter([["a", 1], ("b", 2), "cd"])


class _BadPairs(dict):  # type: ignore[type-arg]
    def items(self):  # type: ignore[no-untyped-def, override]
        return iter([["a", 1, 2]])


@pytest.mark.parametrize("indent", [None, 0, 2, "\t"])
@pytest.mark.parametrize(
    "obj",
    [
        _Falsy([1, 2]),
        _FalsyTuple((1,)),
        _FalsyDict(a=1),
        _NotTrue([1]),
        [_Falsy([1]), {"k": _FalsyDict(b=2)}],
        _ListPairs(z=0),
        _BadPairs(z=0),
    ],
    ids=["list-len0", "tuple-len0", "dict-len0", "bool-false", "nested", "items-2-lists", "items-3-list"],
)
def test_container_subclasses_are_read_as_the_running_encoder_reads_them(obj: Any, indent: Any) -> None:
    assert_same(obj, indent)


def test_indent_with_a_lone_surrogate_gives_json_text() -> None:
    for obj in ([1, {"a": [2]}], {}, "x"):
        assert json_dumps(obj, indent="\udc80") == json.dumps(obj, indent="\udc80")
    with pytest.raises(UnicodeEncodeError):
        _native.json_dumps_utf8([1], indent="\udc80")


class _Counted(dict):  # type: ignore[type-arg]
    calls = 0

    def items(self):  # type: ignore[no-untyped-def, override]
        type(self).calls += 1
        return super().items()


class _CountedIter(list):  # type: ignore[type-arg]
    calls = 0

    def __iter__(self):  # type: ignore[no-untyped-def, override]
        type(self).calls += 1
        return iter([1, 2])


@pytest.mark.parametrize("indent", [None, 2])
def test_items_and_iter_run_once_per_dump(indent: Any) -> None:
    _Counted.calls = 0
    _CountedIter.calls = 0
    doc = [_Counted(a=1), _CountedIter([0]), {"b": _Counted(c=_CountedIter([5]))}]
    want = json.dumps(doc, indent=indent)
    want_calls = (_Counted.calls, _CountedIter.calls)
    _Counted.calls = 0
    _CountedIter.calls = 0
    assert json_dumps(doc, indent=indent) == want
    assert (_Counted.calls, _CountedIter.calls) == want_calls == (2, 2)
