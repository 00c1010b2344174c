"""Reductions that survive a session restore (``ContextManager(persist_reductions=True)``).

A message-log session manager (``RepositorySessionManager``: the file, S3 and AgentCore ones)
stores each message once, as it is added, and never sees the pipeline's later edits; restored,
an agent would get its whole unreduced history back. What we keep instead is a *recipe* in
``agent.state`` (which every session manager already saves and restores): how to turn the log
into the live ``agent.messages``. It names log messages by position and blocks by index, and
stores only what the log does not hold and cannot give again (markers, summaries; previews are
made again from the log), so it stays small enough for the deep copy each sync makes. Its
format (machine-read, versioned)::

    {"format": 2,
     "log": [count, digest],          # how many log messages it covers, a digest of their ids
     "derived": {                     # optional: log blocks replaced by a preview made from them
        "rules": [rule, ...],         # how each preview is made (a truncation's config, a drop)
        "at": ["i:bitmap ...", ...],  # per rule, the log blocks it replaced: per block index i,
                                      # a base64 bitmap of log positions (encode_places)
        "digest": hex},               # of the previews as recorded, checked when they are remade
     "messages": [                    # the live messages, in order
        {"keep": [first, last]},      # log messages first..last, unchanged (but for derived blocks)
        {"message": {..., "content": [{"from": [position, index]} | {"new": block}, ...]}}]}

A preview is a function of its original (in the log), the strategy's config and the stash keys
(which follow from the log message): it is not stored but made again at restore and checked
against the digest, so the agent record stays small however many results were truncated (format 1,
which stored each preview, is still read). ``keep`` and ``from`` name the log with its derived
blocks in place.

Log messages past ``count`` arrived after the last reduction and follow as they are.

Which live blocks are derived comes from the runs' journals: the manager hands each replacement
our strategies journaled to :meth:`ReductionLog.replaced` (the strategy's rule, the block's place,
the stash references it names), which checks that a restore makes the same block. Only the messages
the identity passes saw change outside the journal (a strategy not of ours, user code) are looked
through for derived blocks when the recipe is made.

The log's blocks are matched by identity, and then by content: our strategies replace blocks
(``content[i] = new``), remove messages and build new message dicts around kept blocks, but the SDK
rewrites content in place where a guardrail intervenes (``Agent._redact_user_content`` sets a tool
result's ``content``; the session manager rewrites its latest log message with the live one), and a
tool may do the same. So each block also carries a digest of its content when it arrived; a block
whose content no longer gives that digest is no longer the log's (its log message may or may not
have been rewritten) and is recorded as a new block, from the live conversation. A block is held
here from its arrival until it leaves the live conversation, so its ``id`` cannot be taken by a
newer object while it may still be matched.

The recipe is recorded once per invocation, when it ends (before the session manager's own sync
at ``AfterInvocationEvent``). A session synced mid-invocation holds the previous invocation's
recipe: it covers only log messages older than the invocation, and a restore appends the rest as
the log holds them (rewritten, where a guardrail redacted them).
"""

from __future__ import annotations

import asyncio
import base64
import copy
import hashlib
import logging
import time
from collections.abc import Awaitable, Callable, Iterable, Iterator, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any, TypeVar

from .._native import TokenCounter, token_counter
from .methods.truncate import truncated_block
from .stash import encode_value, format_refs, refs_at_end
from .strategies.offload.drop import DROPPED_MARKER

__all__ = [
    "RECIPE_KEY",
    "RESTORE_RETRY_PAUSE",
    "ReductionLog",
    "ReductionRestoreError",
    "Restored",
    "decode_places",
    "derive",
    "drop_rule",
    "encode_places",
    "rebuild",
    "restore_stash",
    "run_blocking",
    "still_describes",
    "truncate_rule",
]

logger = logging.getLogger(__name__)

RECIPE_KEY = "strands_offload:reductions"
"""The ``agent.state`` key of the recipe."""

_FORMAT = 2
_FORMATS = (1, 2)  # format 1: no derived blocks

RESTORE_RETRY_PAUSE = 0.5
"""Seconds between the failed stash step of a restore and its one retry."""

_ROLES = ("user", "assistant")

T = TypeVar("T")


class ReductionRestoreError(RuntimeError):
    """A session's recorded reductions cannot be applied to its message log."""


@dataclass
class _Arrival:
    """One log message as the session manager stored it."""

    fields: dict[str, Any]
    """Everything but the content (role, tracking id, metadata), copied at arrival."""
    blocks: list[Any]
    """The content's blocks at arrival; an entry becomes ``None`` once that block left the
    conversation or changed in place (so the message, matched block by block, is never again kept
    whole)."""
    digests: list[bytes | None]
    """The digest of each block's content at arrival (``None``: not JSON, never matched)."""


def content_digest(block: Any) -> bytes | None:
    """A digest of a block's content (its stash encoding), or ``None`` for a value JSON cannot hold."""
    try:
        return hashlib.blake2b(encode_value(block), digest_size=16).digest()
    except Exception:
        return None


def _fields(message: Mapping[str, Any]) -> dict[str, Any]:
    return {
        key: value if isinstance(value, str) else copy.deepcopy(value)  # a string is its own copy
        for key, value in message.items()
        if key != "content"
    }


def _id_line(message: Mapping[str, Any]) -> bytes:
    return f"{message.get('tracking_id') or ''}\n".encode()


def log_digest(messages: list[Any]) -> str:
    """The digest of a log's tracking ids, in order (what a recipe checks the restored log against)."""
    digest = hashlib.sha256()
    for message in messages:
        digest.update(_id_line(message))
    return digest.hexdigest()


def truncate_rule(config: Mapping[str, Any], encoding: TokenCounter | None, refs: bool) -> dict[str, Any]:
    """The rule of a truncation's previews: its config, the exact encoding it cuts with, stash refs or not."""
    return {"kind": "truncate", "config": dict(config), "encoding": encoding.name if encoding else None, "refs": refs}


def drop_rule(refs: bool) -> dict[str, Any]:
    """The rule of a drop's markers."""
    return {"kind": "drop", "refs": refs}


def _refs_for(block: Mapping[str, Any], tracking_id: Any, index: int) -> list[str]:
    """The stash keys of a log block (``Stash.refs_for``)."""
    if "toolResult" in block:
        result = block["toolResult"]
        return [f"{result['toolUseId']}_{j}" for j in range(len(result["content"]))]
    return [f"{tracking_id}_{index}"]


def derive(
    rule: Mapping[str, Any],
    block: Mapping[str, Any],
    tracking_id: Any,
    index: int,
    refs_given: Sequence[str] | None = None,
) -> Any | None:
    """The block ``rule`` makes of log block ``index`` of a message, or ``None`` when it makes none.

    The previews are those of ``TruncateStrategy._replace_block`` and ``DropStrategy._replace_block``
    (a restore checks them against the recorded digest, so a difference is refused, never used).
    ``refs_given``: the stash references the preview names (a run's journal knows them); by default
    the ones the stash gives a log block.
    """
    if rule.get("refs") is True:
        refs = format_refs(list(refs_given) if refs_given is not None else _refs_for(block, tracking_id, index))
    else:
        refs = ""
    kind = rule.get("kind")
    if kind == "drop":
        marker = DROPPED_MARKER + refs
        if "toolResult" in block:
            result = block["toolResult"]
            return {
                "toolResult": {
                    "toolUseId": result["toolUseId"],
                    "status": result["status"],
                    "content": [{"text": marker}],
                }
            }
        return {"text": marker}
    if kind != "truncate":
        return None
    config = rule.get("config")
    name = rule.get("encoding")
    if not isinstance(config, dict) or not (name is None or isinstance(name, str)):
        return None
    encoding = token_counter(name) if name is not None else None
    return truncated_block(block, config, encoding, refs)


def encode_places(places: Iterable[tuple[int, int]]) -> str:
    """Log blocks (position, index) as ``"index:bitmap"`` groups: per block index, a base64 bitmap of positions.

    A bit per log message, so the agent record grows by a bit per message, not by the digits of
    each truncated result's position.
    """
    by_index: dict[int, list[int]] = {}
    for position, index in places:
        by_index.setdefault(index, []).append(position)
    groups = []
    for index in sorted(by_index):
        bits = bytearray(max(by_index[index]) // 8 + 1)
        for position in by_index[index]:
            bits[position // 8] |= 1 << (position % 8)
        groups.append(f"{index}:{base64.b64encode(bytes(bits)).decode('ascii')}")
    return " ".join(groups)


def decode_places(text: str) -> list[tuple[int, int]]:
    """The places :func:`encode_places` wrote, by index then position (``ValueError`` for anything else)."""
    places: list[tuple[int, int]] = []
    for group in text.split():
        index_text, separator, bitmap = group.partition(":")
        if not separator or not index_text.isdecimal():
            raise ValueError(f"malformed group {group!r}")
        index = int(index_text)
        for number, byte in enumerate(base64.b64decode(bitmap, validate=True)):
            places.extend((number * 8 + bit, index) for bit in range(8) if byte >> bit & 1)
    return places


def _derived_digest(digests: list[bytes | None]) -> str:
    total = hashlib.sha256()
    for digest in digests:
        total.update(digest or b"-")
    return total.hexdigest()


class ReductionLog:
    """The message log as the session manager holds it, and the recipe from it to the live messages.

    Args:
        rules: How the pipeline's previews are made (:func:`truncate_rule`, :func:`drop_rule`): a
            replaced log block one of them remakes is recorded as derived, not stored.
    """

    def __init__(self, rules: list[dict[str, Any]] | None = None) -> None:
        self._arrivals: list[_Arrival] = []
        self._where: dict[int, tuple[int, int]] = {}  # id(block) -> (log position, block index)
        self._by_id: dict[str | None, list[int]] = {}  # tracking id -> log positions
        self._digest = hashlib.sha256()
        self._rules: list[dict[str, Any]] = list(rules or [])
        self._derived: dict[tuple[int, int], int] = {}  # (log position, block index) -> rule
        # The last recipe's work, reused for the messages that did not change since (see recipe()):
        # the messages' blocks, each one's item (a kept log position, or its message entry), where the
        # entries stood after each, which log positions were kept by which message, and the
        # blocks registered since (the ones that may have left the conversation without being seen).
        self._previous_blocks: list[tuple[Any, ...]] = []  # the messages' blocks then (a list may change in place)
        self._items: list[tuple[int | None, dict[str, Any] | None]] = []
        self._marks: list[tuple[int, int | None]] = []  # (entries after message i, end of the last keep)
        self._entries: list[dict[str, Any]] = []
        self._used: dict[int, int] = {}  # kept log position -> message index
        self._fresh: list[Any] = []
        self._derived_cache: dict[str, Any] | None = None
        # Blocks a run's journal put in place that are not derived (see replaced), until the next recipe.
        self._journaled: dict[int, Any] = {}

    def rule_index(self, rule: dict[str, Any]) -> int:
        """The index of ``rule`` (added when new)."""
        if rule not in self._rules:
            self._rules.append(rule)
        return self._rules.index(rule)

    def derived_at(self, position: int, index: int, block: Any, rule: int) -> None:
        """Record that log block ``index`` of message ``position`` is now ``block``, made by ``rule``."""
        arrival = self._arrivals[position]
        previous = arrival.blocks[index]
        if previous is not None and self._where.get(id(previous)) == (position, index):
            del self._where[id(previous)]
        arrival.blocks[index] = block
        arrival.digests[index] = content_digest(block)
        self._where[id(block)] = (position, index)
        self._fresh.append(block)
        self._derived[(position, index)] = rule
        self._derived_cache = None

    def replaced(self, message: Mapping[str, Any], index: int, rule: int | None, refs: Sequence[str]) -> bool:
        """A run's journal says: the pipeline put block ``index`` of ``message`` in place, by ``rule``, naming ``refs``.

        The block (as it is now) is recorded as derived when it replaced a log block whose content is
        as it arrived, names the references a restore gives that block, and is what ``rule`` makes of
        it: a restore makes it again. Otherwise (``rule`` ``None``: a strategy without one, or a
        block the strategy made another way, a message not of the log) the recipe takes the block as
        new, and does not look at it again. ``True`` when recorded as derived.
        """
        content = message["content"]
        if not 0 <= index < len(content):
            return False
        block = content[index]
        if id(block) in self._where:
            return True  # already the log's (a derived block made again, equal and the same object)
        if rule is None or not 0 <= rule < len(self._rules) or not self._derive_from_log(message, index, rule, refs):
            self._journaled[id(block)] = block  # held until the next recipe: its id stays its own
            return False
        return True

    def _derive_from_log(self, message: Mapping[str, Any], index: int, rule: int, refs: Sequence[str]) -> bool:
        content = message["content"]
        block = content[index]
        how = self._rules[rule]
        for position in self._by_id.get(message.get("tracking_id"), ()):
            arrival = self._arrivals[position]
            if len(arrival.blocks) != len(content):
                continue
            original = arrival.blocks[index]
            if original is None or original is block or content_digest(original) != arrival.digests[index]:
                continue  # gone, unchanged, or changed in place: not the log's block any more
            known = self._derived.get((position, index))
            if known is not None:
                # The slot holds a preview already: only an equal block takes its place (a drop made
                # again of its own marker).
                if block == original:
                    self.derived_at(position, index, block, known)
                    return True
                continue
            tracking_id = arrival.fields.get("tracking_id", "unknown")
            if how.get("refs") is True and list(refs) != _refs_for(original, tracking_id, index):
                continue  # a restore would name other references
            try:
                made = derive(how, original, tracking_id, index, refs)
            except Exception:
                made = None
            if made is not None and made == block:
                self.derived_at(position, index, block, rule)
                return True
        return False

    def _find_derived(self, messages: list[Any]) -> None:
        """Adopt, as derived, the live blocks a rule made of the log block they replaced in place.

        For changes no run's journal recorded (a strategy not of ours, user code, a restore's
        own blocks): the journal's replacements come in through :meth:`replaced`.
        """
        if not self._rules:
            return
        for message in messages:
            content = message["content"]
            for position in self._by_id.get(message.get("tracking_id"), ()):
                arrival = self._arrivals[position]
                if len(arrival.blocks) != len(content):
                    continue
                tracking_id = arrival.fields.get("tracking_id", "unknown")
                for index, block in enumerate(content):
                    original = arrival.blocks[index]
                    if original is None or original is block or id(block) in self._where:
                        continue
                    if self._journaled.get(id(block)) is block:
                        continue  # a run's journal said what made it (see replaced)
                    if content_digest(original) != arrival.digests[index]:
                        continue  # the slot's block itself changed in place: it is no longer the log's
                    rule = self._derived.get((position, index))
                    if rule is not None:
                        # The slot holds a preview, not the original: only an equal block replaces it
                        # (a drop made again of its own marker), anything else is new.
                        if block == original:
                            self.derived_at(position, index, block, rule)
                        continue
                    for number, how in enumerate(self._rules):
                        try:
                            made = derive(how, original, tracking_id, index)
                        except Exception:
                            made = None
                        if made is not None and made == block:
                            self.derived_at(position, index, block, number)
                            break

    def __len__(self) -> int:
        return len(self._arrivals)

    def arrived(self, message: Mapping[str, Any]) -> None:
        """Record a message the session manager has just stored."""
        position = len(self._arrivals)
        blocks = list(message["content"])
        self._arrivals.append(_Arrival(_fields(message), blocks, [content_digest(block) for block in blocks]))
        for index, block in enumerate(blocks):
            self._where.setdefault(id(block), (position, index))
        self._fresh.extend(blocks)
        self._by_id.setdefault(message.get("tracking_id"), []).append(position)
        self._digest.update(_id_line(message))

    def _forget_changed(self, messages: list[Any]) -> None:
        """Stop matching the live blocks whose content changed in place since they arrived.

        The log may hold such a block as it was (a tool edited it) or as it is now (a guardrail
        redaction, which the session manager wrote back): the recipe takes it from the live
        conversation instead, and never keeps its log message whole again.
        """
        for message in messages:
            for block in message["content"]:
                found = self._where.get(id(block))
                if found is None:
                    continue
                position, index = found
                arrival = self._arrivals[position]
                if arrival.blocks[index] is block and content_digest(block) == arrival.digests[index]:
                    continue
                del self._where[id(block)]
                if arrival.blocks[index] is block:
                    arrival.blocks[index] = None
                    if self._derived.pop((position, index), None) is not None:
                        self._derived_cache = None

    def _release_gone(self, messages: list[Any], stable: int) -> None:
        """Stop holding the blocks that left the conversation (they cannot come back).

        Only blocks of the messages that changed since the last recipe, and blocks registered
        since, can have left: the unchanged messages still hold theirs.
        """
        fresh, self._fresh = self._fresh, []
        if not self._previous_blocks:  # nothing reused (the first recipe, or after a failure): every block
            live = {id(block) for message in messages for block in message["content"]}
            gone = [(key, self._where.pop(key)) for key in [key for key in self._where if key not in live]]
        else:
            candidates = [block for blocks in self._previous_blocks[stable:] for block in blocks]
            candidates.extend(fresh)
            if not candidates:
                return
            live = {id(block) for message in messages[stable:] for block in message["content"]}
            gone = []
            for block in candidates:
                key = id(block)
                if key not in live and key in self._where:
                    gone.append((key, self._where.pop(key)))
        for _, (position, index) in gone:
            self._arrivals[position].blocks[index] = None
            if self._derived.pop((position, index), None) is not None:
                self._derived_cache = None

    def _kept_position(self, message: Mapping[str, Any], used: Mapping[int, int]) -> int | None:
        """The log position ``message`` is, unchanged since it arrived, or ``None``."""
        for position in self._by_id.get(message.get("tracking_id"), ()):
            arrival = self._arrivals[position]
            if position in used:
                continue
            content = message["content"]
            if len(content) == len(arrival.blocks) and all(
                a is b for a, b in zip(content, arrival.blocks, strict=True)
            ):
                if {k: v for k, v in message.items() if k != "content"} == arrival.fields:
                    return position
        return None

    def reuse_nothing(self) -> None:
        """Make the next recipe from the whole conversation (after a failure left the reused parts unsure)."""
        self._previous_blocks = []
        self._items = []
        self._marks = []
        self._entries = []
        self._used = {}

    def recipe(self, messages: list[Any], stable: int = 0, unjournaled: int | None = None) -> dict[str, Any]:
        """The recipe that turns the log into ``messages`` (see the module docstring).

        ``stable``: how many leading messages are exactly as the last call saw them (the manager's
        identity pass says so; 0 when not known): their part of the recipe is reused, so a call
        costs what changed and arrived since the last one, not the whole conversation.
        ``unjournaled``: how many leading messages nothing changed since the last call but edits a
        run's journal recorded (and gave :meth:`replaced`); only the messages after them are looked
        through for derived blocks. ``None``: all the changed ones.
        """
        stable = max(0, min(stable, len(messages), len(self._previous_blocks)))
        changed = messages[stable:]
        scan = stable if unjournaled is None or not self._previous_blocks else max(stable, unjournaled)
        self._find_derived(messages[scan:] if scan > stable else changed)
        self._journaled.clear()
        self._forget_changed(changed)
        self._release_gone(messages, stable)
        # Back to where the entries stood after the last unchanged message.
        for index in range(stable, len(self._items)):
            kept = self._items[index][0]
            if kept is not None and self._used.get(kept) == index:
                del self._used[kept]
        del self._items[stable:]
        del self._marks[stable:]
        count, keep_end = self._marks[-1] if self._marks else (0, None)
        entries = self._entries
        del entries[count:]
        if keep_end is not None and entries[-1]["keep"][1] != keep_end:
            entries[-1] = {"keep": [entries[-1]["keep"][0], keep_end]}  # a new list: the recorded one stays
        for number, message in enumerate(changed, start=stable):
            position = self._kept_position(message, self._used)
            if position is not None:
                self._used[position] = number
                last = entries[-1].get("keep") if entries else None
                if last is not None and last[1] + 1 == position:
                    entries[-1] = {"keep": [last[0], position]}
                else:
                    entries.append({"keep": [position, position]})
                self._items.append((position, None))
                self._marks.append((len(entries), position))
                continue
            items = []
            for block in message["content"]:
                found = self._where.get(id(block))
                items.append({"from": list(found)} if found is not None else {"new": copy.deepcopy(block)})
            entry = {"message": {k: (items if k == "content" else copy.deepcopy(v)) for k, v in message.items()}}
            entries.append(entry)
            self._items.append((None, entry))
            self._marks.append((len(entries), None))
        del self._previous_blocks[stable:]
        self._previous_blocks.extend(tuple(message["content"]) for message in changed)
        count = len(self._arrivals)
        recipe: dict[str, Any] = {"format": _FORMAT, "log": [count, self._digest.hexdigest()]}
        if self._derived:
            if self._derived_cache is None:
                self._derived_cache = self._derived_entry()
            recipe["derived"] = copy.deepcopy(self._derived_cache)
        recipe["messages"] = list(entries)
        return recipe

    def _derived_entry(self) -> dict[str, Any]:
        used: dict[int, int] = {}  # rule index -> index in the recipe
        at: list[list[tuple[int, int]]] = []
        digests: list[bytes | None] = []
        for position, index in sorted(self._derived):
            rule = self._derived[(position, index)]
            if rule not in used:
                used[rule] = len(used)
                at.append([])
            at[used[rule]].append((position, index))
            digests.append(self._arrivals[position].digests[index])
        rules = [copy.deepcopy(self._rules[rule]) for rule in used]
        return {"rules": rules, "at": [encode_places(places) for places in at], "digest": _derived_digest(digests)}


def still_describes(recorded: Mapping[str, Any] | None, recipe: Mapping[str, Any]) -> bool:
    """Whether ``recorded`` still gives the live messages ``recipe`` describes.

    It does when the only change since is log messages that arrived and are unchanged (a restore
    appends those as they are), and, with nothing recorded yet, when nothing was reduced at all.
    Then nothing needs writing: a session sync with an unchanged state writes no agent record.
    """
    if (recorded or {}).get("derived") != recipe.get("derived") or (recorded or {}).get("format", _FORMAT) != _FORMAT:
        return False
    count = recorded["log"][0] if recorded is not None else 0
    entries = list(recipe["messages"])
    total = recipe["log"][0]
    if total > count:
        last = entries[-1] if entries else None
        if last is None or "keep" not in last or last["keep"][1] != total - 1 or last["keep"][0] > count:
            return False
        first = last["keep"][0]
        entries[-1:] = [] if first == count else [{"keep": [first, count - 1]}]
    return entries == (recorded["messages"] if recorded is not None else [])


def _fail(session_id: str | None, why: str) -> ReductionRestoreError:
    return ReductionRestoreError(
        f"session_id=<{session_id}> | the recorded context reductions cannot be applied: {why}. "
        f"Start a new session, or remove the {RECIPE_KEY!r} key from the stored agent state "
        "to restore the unreduced history."
    )


@dataclass
class Restored:
    """What a recipe gives from a restored log (see :func:`rebuild`)."""

    messages: list[Any]
    """The live messages: the log's objects where kept, the recipe's where new."""
    log: list[Any]
    """The log with its derived blocks in place (messages holding one are copies)."""
    derived: list[tuple[int, int, dict[str, Any]]]
    """Each derived block: log position, block index, the rule that made it."""
    references: list[str]
    """The stash keys the new and derived blocks end with, in order."""


def _derived_log(
    derived: Any, log: list[Any], count: int, session_id: str | None
) -> tuple[list[Any], list[tuple[int, int, dict[str, Any]]]]:
    """The log with the recorded previews made again in place of their originals, checked."""
    rules, at, digest = derived["rules"], derived["at"], derived["digest"]
    if not (isinstance(rules, list) and isinstance(at, list) and len(rules) == len(at)):
        raise _fail(session_id, "the derived blocks are malformed")
    places: dict[tuple[int, int], dict[str, Any]] = {}
    for rule, spots in zip(rules, at, strict=True):
        if not (isinstance(rule, dict) and isinstance(spots, str)):
            raise _fail(session_id, "the derived blocks are malformed")
        try:
            spots_read = decode_places(spots)
        except ValueError as error:
            raise _fail(session_id, f"the derived blocks are malformed ({error})") from error
        for position, index in spots_read:
            if not (position < count and index < len(log[position]["content"])) or (position, index) in places:
                raise _fail(session_id, f"derived block {index} of log message {position} is not in the log")
            places[(position, index)] = rule
    derived_log = list(log)
    made: list[tuple[int, int, dict[str, Any]]] = []
    digests: list[bytes | None] = []
    for position, index in sorted(places):
        message = derived_log[position]
        if message is log[position]:
            message = derived_log[position] = {k: (list(v) if k == "content" else v) for k, v in message.items()}
        block = derive(
            places[(position, index)], log[position]["content"][index], message.get("tracking_id", "unknown"), index
        )
        if not isinstance(block, dict):
            raise _fail(session_id, f"no preview can be made of block {index} of log message {position}")
        message["content"][index] = block
        made.append((position, index, places[(position, index)]))
        digests.append(content_digest(block))
    if _derived_digest(digests) != digest:
        raise _fail(session_id, "the previews made again from the log are not the recorded ones")
    return derived_log, made


def rebuild(recipe: Any, log: list[Any], session_id: str | None = None) -> Restored:
    """The live messages a recipe describes, from the restored message log.

    Kept messages and blocks are the log's own objects (or, for a derived block, the preview made
    again from it); new blocks come from the recipe.

    Raises:
        ReductionRestoreError: The recipe is malformed, of an unknown format, or does not match
            the log (another session's, or a log edited since), or a preview made again from the
            log is not the recorded one.
    """
    if not isinstance(recipe, dict) or recipe.get("format") not in _FORMATS:
        found = recipe.get("format") if isinstance(recipe, dict) else type(recipe).__name__
        raise _fail(session_id, f"unknown recipe format {found!r}")
    try:
        count, digest = recipe["log"]
        entries = recipe["messages"]
        if not (isinstance(count, int) and 0 <= count <= len(log)) or log_digest(log[:count]) != digest:
            raise _fail(session_id, f"the message log ({len(log)} messages) is not the one recorded")
        source: list[Any] = log
        derived: list[tuple[int, int, dict[str, Any]]] = []
        if recipe.get("derived") is not None:
            source, derived = _derived_log(recipe["derived"], log, count, session_id)
        rebuilt: list[Any] = []
        for entry in entries:
            if "keep" in entry:
                first, last = entry["keep"]
                if not 0 <= first <= last < count:
                    raise _fail(session_id, f"kept messages {first}..{last} are outside the log")
                rebuilt.extend(source[first : last + 1])
                continue
            recorded = entry["message"]
            if not (isinstance(recorded, dict) and recorded.get("role") in _ROLES):
                raise _fail(session_id, "a recorded message is not a user or assistant message")
            if not isinstance(recorded.get("content"), list):
                raise _fail(session_id, "a recorded message has no content list")
            content = []
            for item in recorded["content"]:
                if not isinstance(item, dict):
                    raise _fail(session_id, "a recorded block is not an object")
                if "from" in item:
                    position, index = item["from"]
                    if not (0 <= position < count and 0 <= index < len(source[position]["content"])):
                        raise _fail(session_id, f"block {index} of log message {position} is not in the log")
                    content.append(source[position]["content"][index])
                elif isinstance(item["new"], dict):
                    content.append(item["new"])
                else:
                    raise _fail(session_id, "a recorded new block is not an object")
            rebuilt.append({k: (content if k == "content" else v) for k, v in recorded.items()})
        references: list[str] = []
        for block in [
            item["new"] for e in entries for item in e.get("message", {}).get("content", ()) if "new" in item
        ]:
            for text in _strings(block):
                references.extend(key for key in refs_at_end(text) if key not in references)
        for position, index, _ in derived:
            for text in _strings(source[position]["content"][index]):
                references.extend(key for key in refs_at_end(text) if key not in references)
    except ReductionRestoreError:
        raise
    except Exception as error:  # any shape JSON can take: a tampered recipe is refused, never a crash
        raise _fail(session_id, f"the recipe is malformed ({type(error).__name__}: {error})") from error
    rebuilt.extend(log[count:])
    return Restored(rebuilt, source, derived, references)


def restore_stash(resolve: Callable[[], Awaitable[list[str]]], session_id: str | None) -> None:
    """The stash step of a restore: ``resolve`` returns the references nothing answers.

    A storage failure (an outage, a throttle the storage's own retries did not outlast) is retried
    once after :data:`RESTORE_RETRY_PAUSE`; a second one, and any unresolved reference, raise
    :class:`ReductionRestoreError` (the failure chained), before the agent's messages are touched.
    """
    for attempt in (1, 2):
        try:
            missing = run_blocking(resolve)
        except Exception as error:
            if attempt == 1:
                logger.warning(
                    "session_id=<%s>, error=<%s> | the stash failed while restoring the recorded reductions, "
                    "retrying once",
                    session_id,
                    error,
                )
                time.sleep(RESTORE_RETRY_PAUSE)
                continue
            raise ReductionRestoreError(
                f"session_id=<{session_id}> | the recorded context reductions cannot be restored: the stash "
                f"storage failed twice ({type(error).__name__}: {error}). Nothing was restored; try again "
                "once the storage answers."
            ) from error
        if missing:
            raise ReductionRestoreError(
                f"session_id=<{session_id}> | restored previews name stash entries that neither the "
                f"stash nor the message log holds: {', '.join(missing)}"
            )
        return


def _strings(value: Any) -> Iterator[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for item in value.values():
            yield from _strings(item)
    elif isinstance(value, list):
        for item in value:
            yield from _strings(item)


def run_blocking(make: Callable[[], Awaitable[T]]) -> T:
    """Run a coroutine to completion from synchronous code (on a worker thread inside a running loop)."""

    async def main() -> T:
        return await make()

    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(main())
    with ThreadPoolExecutor(max_workers=1, thread_name_prefix="strands-offload-restore") as pool:
        return pool.submit(asyncio.run, main()).result()
