"""The Storage protocol, key rules, the generic namespaced view and the SDK markers."""

from __future__ import annotations

import asyncio
import inspect
from typing import Any
from urllib.parse import unquote

import pytest
import strands.storage as ref_storage
import strands.storage.storage as ref_storage_module
import strands_offload.storage as our_storage
import strands_offload.storage.storage as our_storage_module
from hypothesis import example, given, settings
from hypothesis import strategies as st
from strands.types.exceptions import StorageError
from strands_offload.storage.storage import _NamespacedStorage, _resolve_namespace

KEY_ALPHABET = st.sampled_from(list("ab./\\ %2eE5cf0_-") + ["..", "//", "é"])
KEYS = st.lists(KEY_ALPHABET, max_size=12).map("".join)


def _outcome(function: Any, *args: Any) -> tuple[str, Any]:
    try:
        return ("ok", function(*args))
    except StorageError as error:
        return ("StorageError", str(error))


# Percent-decoding that has not settled after this many rounds is refused, whatever it reveals.
DECODE_ROUNDS = 8


def _is_percent_escape(text: str) -> bool:
    """Oracle of our deliberate extension: does percent-decoding ``text`` reveal an escape?

    Decodes until nothing changes, counting the rounds that changed something. When decoding changed
    the text, an escape is a backslash, a NUL, a ``..`` segment or a leading ``/`` in the decoded
    text, or decoding that needed ``DECODE_ROUNDS`` rounds or more (not settled within the bound).
    """
    layers = [text]
    while (decoded := unquote(layers[-1])) != layers[-1]:  # each change shortens the text: this ends
        layers.append(decoded)
    changed_rounds = len(layers) - 1
    if changed_rounds == 0:
        return False
    if changed_rounds >= DECODE_ROUNDS:
        return True
    plain = layers[-1]
    return "\\" in plain or "\x00" in plain or ".." in plain.split("/") or plain.startswith("/")


# Decodes in exactly DECODE_ROUNDS rounds (refused) / one round fewer (accepted); both end as "e".
NEVER_SETTLES = "%" + "25" * (DECODE_ROUNDS - 1) + "65"
SETTLES_LAST_ROUND = "%" + "25" * (DECODE_ROUNDS - 2) + "65"


@settings(max_examples=300, deadline=None)
@given(KEYS)
@example("%00")
@example("a/%2500")
@example(NEVER_SETTLES)
@example(SETTLES_LAST_ROUND)
def test_key_normalisation_matches_reference(key: str) -> None:
    ours = _outcome(our_storage_module._normalize_key, key)
    theirs = _outcome(ref_storage_module._normalize_key, key)
    if theirs[0] == "ok" and _is_percent_escape(theirs[1]):
        # Deliberate extension: percent-encoded escapes are refused.
        assert ours == ("StorageError", f"Invalid storage key '{key}': percent-encoded path escapes are not allowed")
    else:
        assert ours == theirs


@settings(max_examples=300, deadline=None)
@given(KEYS)
@example("%00")
@example("a/%2500/")
@example(NEVER_SETTLES)
@example(SETTLES_LAST_ROUND)
def test_prefix_normalisation_matches_reference(prefix: str) -> None:
    ours = _outcome(our_storage_module._normalize_prefix, prefix)
    theirs = _outcome(ref_storage_module._normalize_prefix, prefix)
    if theirs[0] == "ok" and _is_percent_escape(theirs[1]):
        assert ours == (
            "StorageError",
            f"Invalid storage prefix '{prefix}': percent-encoded path escapes are not allowed",
        )
    else:
        assert ours == theirs


@pytest.mark.parametrize(
    ("key", "message"),
    [
        ("a\\b", "Invalid storage key 'a\\b': backslashes are not allowed"),
        ("a/../b", "Invalid storage key 'a/../b': '..' path segments are not allowed"),
        ("//", "Storage key must not be empty"),
        ("a\x00b", "Invalid storage key 'a\x00b': NUL characters are not allowed"),
        ("a/%2e%2e/b", "Invalid storage key 'a/%2e%2e/b': percent-encoded path escapes are not allowed"),
        ("%252e%252e", "Invalid storage key '%252e%252e': percent-encoded path escapes are not allowed"),
        ("%2Fetc/passwd", "Invalid storage key '%2Fetc/passwd': percent-encoded path escapes are not allowed"),
        ("%00", "Invalid storage key '%00': percent-encoded path escapes are not allowed"),
        ("a/%2500", "Invalid storage key 'a/%2500': percent-encoded path escapes are not allowed"),
        (NEVER_SETTLES, f"Invalid storage key '{NEVER_SETTLES}': percent-encoded path escapes are not allowed"),
    ],
)
def test_invalid_keys_raise_sdk_storage_error(key: str, message: str) -> None:
    with pytest.raises(StorageError) as caught:
        our_storage_module._normalize_key(key)
    assert str(caught.value) == message
    assert type(caught.value) is StorageError


def test_harmless_percent_signs_are_kept() -> None:
    assert our_storage_module._normalize_key("50%/a%2fb") == "50%/a%2fb"
    assert our_storage_module._normalize_key(SETTLES_LAST_ROUND) == SETTLES_LAST_ROUND


def test_public_surface_mirrors_reference() -> None:
    assert set(our_storage.__all__) == set(ref_storage.__all__)
    for name in ("InMemoryStorage", "LocalFileStorage", "S3Storage"):
        ours = inspect.signature(getattr(our_storage, name))
        theirs = inspect.signature(getattr(ref_storage, name))

        # Positional parameters keep the reference's order; keyword-only ones can only be passed
        # by name, so their order is not part of the contract.
        def positional(signature: inspect.Signature) -> list[str]:
            return [p.name for p in signature.parameters.values() if p.kind is not p.KEYWORD_ONLY]

        assert [p for p in positional(ours) if p in theirs.parameters] == positional(theirs), name
        assert set(theirs.parameters) <= set(ours.parameters), name
        for param in theirs.parameters.values():
            mine = ours.parameters[param.name]
            assert (mine.kind, mine.default) == (param.kind, param.default), (name, param.name)
        extra = [p for p in ours.parameters.values() if p.name not in theirs.parameters]
        assert all(p.kind is inspect.Parameter.KEYWORD_ONLY for p in extra)


def test_search_result_is_the_sdk_class() -> None:
    from strands.storage.search import StorageSearchResult as Theirs
    from strands_offload.storage.search import StorageSearchResult as Ours

    assert Ours is Theirs


def test_markers_are_the_sdk_sentinels() -> None:
    memory = our_storage.InMemoryStorage()
    assert memory._ephemeral is ref_storage_module._EPHEMERAL
    assert memory.namespace("x")._namespaced is ref_storage_module._NAMESPACED
    assert our_storage.LocalFileStorage("unused").namespace("x")._namespaced is ref_storage_module._NAMESPACED
    assert our_storage.S3Storage("b").namespace("x")._namespaced is ref_storage_module._NAMESPACED
    assert getattr(our_storage.LocalFileStorage("unused"), "_ephemeral", None) is None


def test_sdk_helpers_treat_our_views_as_their_own() -> None:
    from strands._context_manager.stash import _resolve_stash_namespace
    from strands.session.snapshot_session_manager import _resolve_storage

    root = our_storage.InMemoryStorage()
    view = root.namespace("mine")
    assert ref_storage_module._resolve_namespace(view, "other") is view
    assert _resolve_storage(view) is view
    assert _resolve_stash_namespace(view, "s", "a", custom_stash_namespace=True) is view
    resolved = ref_storage_module._resolve_namespace(root, "sub")
    assert isinstance(resolved, our_storage.InMemoryStorage) and resolved._prefix == "sub/"


def test_context_manager_sees_ephemeral_storage_through_views() -> None:
    from strands import Agent
    from strands.experimental.context_manager import ContextManager

    for storage, durable in [
        (our_storage.InMemoryStorage(), False),
        (_NamespacedStorage(our_storage.InMemoryStorage(), "x"), False),
        (our_storage.LocalFileStorage("unused-dir"), True),
    ]:
        manager = ContextManager()
        Agent(storage=storage, context_manager=manager, model="unused", callback_handler=None)
        assert manager._stash_is_durable is durable


def test_runtime_protocol_checks() -> None:
    for backend in (our_storage.InMemoryStorage(), our_storage.S3Storage("b"), our_storage.LocalFileStorage("x")):
        assert isinstance(backend, our_storage.Storage)
        assert isinstance(backend, ref_storage.Storage)
    assert isinstance(ref_storage.InMemoryStorage(), our_storage.Storage)


class _Plain:
    """A minimal custom backend without namespace()."""

    def __init__(self) -> None:
        self.data: dict[str, bytes] = {}

    async def write(self, key: str, data: bytes) -> None:
        self.data[key] = data

    async def read(self, key: str) -> bytes | None:
        return self.data.get(key)

    async def delete(self, key: str) -> None:
        self.data.pop(key, None)

    async def list(self, query: str = "") -> list[str]:
        return sorted(k for k in self.data if k.startswith(query))

    async def search(self, query: str) -> list[Any]:
        from strands_offload.storage.search import KeywordSearchStrategy

        return await KeywordSearchStrategy().search(self, query)


def _drive_view(view_class: Any, resolve: Any) -> list[Any]:
    async def scenario() -> list[Any]:
        inner = _Plain()
        view = resolve(inner, "/ns//a/")
        assert isinstance(view, view_class)
        await view.write("k1", b"alpha beta")
        await view.write("sub/k2", b"gamma")
        await inner.write("outside", b"alpha")
        nested = view.namespace("sub")
        return [
            sorted(inner.data),
            await view.list(),
            await view.list("s"),
            await nested.list(),
            await view.read("k1"),
            [(r.key, r.score, r.data) for r in await view.search("alpha ns")],
            [(r.key, r.score) for r in await nested.search("gamma")],
            view.for_sandbox(object()) is view,
        ]

    return asyncio.run(scenario())


def test_generic_view_matches_reference() -> None:
    ours = _drive_view(_NamespacedStorage, _resolve_namespace)
    theirs = _drive_view(ref_storage_module._NamespacedStorage, ref_storage_module._resolve_namespace)
    assert ours == theirs
    assert ours[0] == ["ns/a/k1", "ns/a/sub/k2", "outside"]


def test_generic_view_cannot_escape_through_dotdot() -> None:
    async def scenario() -> None:
        view = _NamespacedStorage(our_storage.InMemoryStorage(), "ns")
        with pytest.raises(StorageError, match=r"'\.\.' path segments"):
            await view.write("../x", b"")

    asyncio.run(scenario())


def test_generic_view_copies_ephemeral_marker_and_rebinds_sandbox(tmp_path: Any) -> None:
    view = _NamespacedStorage(our_storage.InMemoryStorage(), "p")
    assert view._ephemeral is ref_storage_module._EPHEMERAL
    files = _NamespacedStorage(our_storage.LocalFileStorage(str(tmp_path)), "p")
    assert not hasattr(files, "_ephemeral")
    sandbox = object()
    rebound = files.for_sandbox(sandbox)  # type: ignore[arg-type]
    assert rebound is not files and rebound._prefix == "p/"
    assert rebound._storage._sandbox is sandbox


def test_protocol_subclass_inherits_keyword_search() -> None:
    class Custom(_Plain, our_storage.Storage):  # type: ignore[misc]
        search = our_storage.Storage.search  # type: ignore[assignment]

    async def scenario() -> list[str]:
        backend = Custom()
        await backend.write("doc", b"needle here")
        return [r.key for r in await backend.search("needle")]

    assert asyncio.run(scenario()) == ["doc"]


def test_backends_show_their_search_strategy_and_views_their_inner_storage(tmp_path: Any) -> None:
    from strands_offload.storage.search import KeywordSearchStrategy

    strategy = KeywordSearchStrategy()
    backends = [
        our_storage.InMemoryStorage(search_strategy=strategy),
        our_storage.LocalFileStorage(str(tmp_path), search_strategy=strategy),
        our_storage.S3Storage("bucket", search_strategy=strategy),
    ]
    for backend in backends:
        assert backend.search_strategy is strategy
        assert backend.namespace("scoped").search_strategy is strategy
    plain = [our_storage.InMemoryStorage(), our_storage.LocalFileStorage(str(tmp_path)), our_storage.S3Storage("b")]
    assert [backend.search_strategy for backend in plain] == [None, None, None]
    view = _NamespacedStorage(backends[0], "prefix")
    assert view.inner is backends[0] and view.namespace("deeper").inner is backends[0]
