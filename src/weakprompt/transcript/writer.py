"""Writing commits in two steps: draft (no database), then place and store.

Most of a commit does not depend on where it lands in the chain: the
encoded content and its blob hash, the metadata, the token count, the
linked tool set. Only the parent, the sequence number and the commit hash
do. So a write first builds a :class:`Draft`, which runs every check and
encoding outside any transaction, and then :func:`place` gives it a place
(cheap: one hash). That split is what lets a turn stage several commits on
top of the head it started from, and, if another writer moved the head in
the meantime, place them again on the new head (:func:`replace_chain`)
before :func:`store_commits` writes them all with one statement per table.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Mapping, Sequence
from datetime import datetime
from json.encoder import encode_basestring
from typing import cast

import attrs
from sqlalchemy import Connection

from ..canonical import canonical_json, content_hash, find_surrogate, parse_canonical_json
from ..errors import TranscriptError
from ..jsontypes import JSONObject, JSONValue
from ..messages import Message, ToolCall
from ..store.commit_rows import (
    CommitRow,
    blob_params,
    commit_params,
    fetch_commit,
    insert_commits,
    metadata_json,
    put_blobs,
)
from ..store.fork_rows import in_chain
from ..store.part_blob_rows import PartBlob, put_part_blobs
from ..store.tool_rows import link_tool_sets, put_definitions, put_tool_set, tool_set_exists
from ..tokens import TokenCounter
from .part_store import commit_infos, part_blobs
from .records import (
    HASH_FORMAT_VERSION,
    CommitInfo,
    CommitOperation,
    commit_info,
    message_payload,
    message_tokens,
    metadata_text,
)
from .tool_tracking import PreparedTool

__all__ = [
    "Draft",
    "Placed",
    "draft_commit",
    "place",
    "replace_chain",
    "resolve_edit",
    "shared_commit",
    "store_commits",
]


@attrs.frozen
class Draft:
    """A checked, encoded commit that has no place in the chain yet."""

    content: Message
    canonical: str
    payload: JSONObject
    blob_hash: str
    message: str | None
    metadata: JSONObject
    metadata_text: str
    edit: str | None
    tools: tuple[PreparedTool, ...]
    set_hash: str | None
    token_count: int
    created_at: datetime
    calls: tuple[ToolCall, ...] | None = None
    """The message's tool calls, when the payload holds them as plain text (then reused as they are)."""
    blobs: tuple[PartBlob, ...] = ()
    """The bytes of the message's images and documents, stored with the commit (one row per digest)."""


def draft_commit(
    content: Message,
    *,
    edit: str | None,
    message: str | None,
    metadata: Mapping[str, JSONValue] | None,
    tools: tuple[PreparedTool, ...],
    set_hash: str | None,
    counter: TokenCounter,
    now: datetime,
) -> Draft:
    """Check and encode one commit; TranscriptError names what is wrong, before anything is written."""
    built = message_payload(content)
    canonical = canonical_json(built)
    plain = _plain_strings(content)
    # Keep what any later reader decodes from the stored text, so that the cached view
    # equals it (tuples become lists, nothing shared with the caller). A payload made of
    # plain strings already is exactly that; anything else takes the JSON round trip.
    payload: JSONObject = built if plain else cast("JSONObject", parse_canonical_json(canonical))
    given_meta = metadata or {}
    meta_text = metadata_text(given_meta)
    copied = _plain_copy(given_meta)
    meta = copied if copied is not None else cast("JSONObject", parse_canonical_json(meta_text))
    # Equal after the round trip: every key was a string already (the usual case, checked in C).
    if meta and meta != given_meta and not _string_keys(given_meta):
        meta_text = metadata_json(meta)  # keys JSON turned into strings sort differently now
    _check_message(message)
    if edit is not None and (not isinstance(edit, str) or not edit or find_surrogate(edit) is not None):
        raise TranscriptError(f"edit target must be a commit hash, got {edit!r}")
    return Draft(
        content=content,
        canonical=canonical,
        payload=payload,
        blob_hash=hashlib.sha256(canonical.encode("utf-8")).hexdigest() if plain else content_hash(payload),
        message=message,
        metadata=meta,
        metadata_text=meta_text if meta else "{}",
        edit=edit,
        tools=tools,
        set_hash=set_hash if tools else None,
        token_count=message_tokens(content, counter),
        created_at=now,
        calls=_reusable_calls(content) if plain else None,
        blobs=part_blobs(content.parts) if content.parts else (),
    )


def _plain_copy(value: Mapping[str, JSONValue]) -> JSONObject | None:
    """A copy of ``value`` equal to what decoding its JSON text gives, or None when that is not sure.

    Usage figures and stored-output facts are objects of strings and
    integers: copying those is cheaper than decoding the text just encoded.
    Anything else (floats, arrays, subclasses, odd keys) takes the JSON round trip.
    """
    copy: JSONObject = {}
    for key, item in value.items():
        kind = type(item)
        if type(key) is not str:  # pyright: ignore[reportUnnecessaryComparison]
            return None
        if kind is str or kind is int or kind is bool or item is None:
            copy[key] = item
        elif kind is dict:
            inner = _plain_copy(cast("dict[str, JSONValue]", item))
            if inner is None:
                return None
            copy[key] = inner
        else:
            return None
    return copy


def _check_message(message: object) -> None:
    """A commit message is stored as plain text: PostgreSQL refuses NUL, UTF-8 has no lone surrogates."""
    if message is None:
        return
    if not isinstance(message, str):
        raise TranscriptError(f"the commit message must be a string, got {type(message).__name__}")
    if "\x00" in message:
        raise TranscriptError(f"the commit message contains a NUL character: {message!r}")
    at = find_surrogate(message)
    if at is not None:
        raise TranscriptError(
            f"the commit message contains a lone surrogate at index {at}, which is not valid Unicode "
            f"text: {message!r}"
        )


def _string_keys(value: object) -> bool:
    """True when every object inside ``value`` has only string keys (so its JSON text round-trips).

    Only dicts, lists and tuples can hold keys here: JSON encoding refuses
    any other container before this runs.
    """
    if isinstance(value, dict):
        for key, item in cast("dict[object, object]", value).items():
            if not isinstance(key, str) or not _string_keys(item):
                return False
    elif isinstance(value, list | tuple):
        for item in cast("Sequence[object]", value):
            if not _string_keys(item):
                return False
    return True


def _plain_strings(content: Message) -> bool:
    """True when every field of the payload is a string (or absent): decoding its JSON gives it back.

    Then the blob hash, ``content_hash(decoded payload)``, is the hash of the
    text already encoded. A tool call's arguments given as an object may not
    round-trip (non-string keys become strings and sort differently), so
    those, and any odd value, take the long way.
    """
    if not isinstance(content.tool_call_id, str | None) or not isinstance(content.name, str | None):
        return False
    return all(
        isinstance(call.arguments, str) and isinstance(call.id, str) and isinstance(call.name, str)
        for call in content.tool_calls
    )


def _reusable_calls(content: Message) -> tuple[ToolCall, ...] | None:
    """The calls of a plain payload as the view may keep them: exact ToolCalls (a subclass is rebuilt)."""
    calls = tuple(content.tool_calls)
    return calls if calls and all(type(call) is ToolCall for call in calls) else None


@attrs.frozen
class Placed:
    """A draft with its place in the chain: ``info`` is the commit exactly as it will be read back."""

    draft: Draft
    row: CommitRow
    info: CommitInfo


def place(draft: Draft, *, session_id: str, parent: str | None, seq: int, edit_target: str | None) -> Placed:
    """Give ``draft`` its parent and sequence number, which fixes its hash."""
    operation = CommitOperation.APPEND if edit_target is None else CommitOperation.EDIT
    digest = _commit_digest(
        draft, session_id=session_id, parent=parent, operation=operation, target=edit_target
    )
    row = CommitRow(
        hash=digest,
        session_id=session_id,
        seq=seq,
        parent_hash=parent,
        operation=operation.value,
        edit_target=edit_target,
        role=draft.content.role,
        blob_hash=draft.blob_hash,
        content=draft.payload,
        message=draft.message,
        metadata=draft.metadata,
        token_count=draft.token_count,
        created_at=draft.created_at,
    )
    # The view keeps the caller's ToolCall objects (with the arguments they decoded and encoded).
    blobs = {blob.digest: blob for blob in draft.blobs} if draft.blobs else None
    return Placed(draft=draft, row=row, info=commit_info(row, tool_calls=draft.calls, blobs=blobs))


def _json(value: str | None) -> str:
    # encode_basestring is what json.dumps(value, ensure_ascii=False) runs for a str
    return "null" if value is None else encode_basestring(value)


def _commit_digest(
    draft: Draft, *, session_id: str, parent: str | None, operation: CommitOperation, target: str | None
) -> str:
    """:func:`~weakprompt.transcript.records.commit_hash`, reusing the draft's canonical metadata text.

    The canonical JSON of the hashed object is spelled out in its sorted key
    order, so the metadata (the only part of any size) is not encoded again
    for every commit and every re-placing.
    """
    text = (
        f'{{"content":{_json(draft.blob_hash)},"edit_target":{_json(target)},'
        f'"message":{_json(draft.message)},"metadata":{draft.metadata_text},'
        f'"operation":{_json(operation.value)},"parent":{_json(parent)},'
        f'"session":{_json(session_id)},"v":{HASH_FORMAT_VERSION}}}'
    )
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def replace_chain(chain: Sequence[Placed], *, session_id: str, head: tuple[str, int] | None) -> list[Placed]:
    """The same commits, in order, placed again on top of ``head`` (new parents, seqs, hashes).

    An edit whose target is one of ``chain`` follows that target's new hash.
    """
    renamed: dict[str, str] = {}
    parent, seq = (None, 0) if head is None else (head[0], head[1] + 1)
    moved: list[Placed] = []
    for old in chain:
        target = old.info.edit_target
        if target is not None:
            target = renamed.get(target, target)
        new = place(old.draft, session_id=session_id, parent=parent, seq=seq, edit_target=target)
        renamed[old.info.hash] = new.info.hash
        moved.append(new)
        parent, seq = new.info.hash, seq + 1
    return moved


def shared_commit(conn: Connection, session_id: str) -> Callable[[CommitInfo], bool]:
    """Whether a commit of another session is in the chain of ``session_id`` (for :func:`resolve_edit`)."""
    return lambda info: in_chain(conn, session_id, info.session_id, info.seq)


def stored_commit(conn: Connection) -> Callable[[str], CommitInfo | None]:
    """A lookup of stored commits by hash through ``conn`` (for :func:`resolve_edit`)."""

    def lookup(commit: str) -> CommitInfo | None:
        row = fetch_commit(conn, commit)
        return None if row is None else commit_infos(conn, [row])[0]

    return lookup


def resolve_edit(
    lookup: Callable[[str], CommitInfo | None],
    *,
    session_id: str,
    target_hash: str,
    content: Message,
    shared: Callable[[CommitInfo], bool] | None = None,
) -> str:
    """The APPEND commit an edit of ``target_hash`` replaces, after checking the edit is allowed.

    An edit of an edit is recorded against the original. The role must stay
    the same, and a tool result must keep its call id and name. ``shared``
    says whether a commit of another session is in this one's chain (a fork's
    shared history), which a fork may edit in its own chain.
    """
    target = lookup(target_hash)
    if target is None:
        raise TranscriptError(f"cannot edit {target_hash!r}: no such commit")
    if target.session_id != session_id and (shared is None or not shared(target)):
        raise TranscriptError(
            f"cannot edit {target_hash[:12]}: it belongs to session {target.session_id!r}, not {session_id!r}"
        )
    if target.edit_target is not None:
        original = lookup(target.edit_target)
        assert original is not None  # foreign key
        target = original
    old = target.content
    if old.role != content.role:
        raise TranscriptError(
            f"an edit must keep the role: {target.hash[:12]} is a {old.role!r} message, "
            f"the edit is {content.role!r}"
        )
    if old.role == "tool" and (old.tool_call_id, old.name) != (content.tool_call_id, content.name):
        raise TranscriptError(
            f"an edit of a tool result must keep tool_call_id and name: {target.hash[:12]} answers "
            f"{old.tool_call_id!r} ({old.name}), the edit has {content.tool_call_id!r} ({content.name})"
        )
    return target.hash


def store_commits(conn: Connection, chain: Sequence[Placed], stored_sets: set[str]) -> set[str]:
    """Write placed commits (in chain order) with their blobs and tool links, inside ``conn``'s transaction.

    ``stored_sets`` lists tool sets known to be stored already; returns the
    sets this call stored, for the caller to remember once the transaction
    has committed.
    """
    put_blobs(conn, [blob_params(p.draft.blob_hash, p.draft.canonical, p.draft.created_at) for p in chain])
    payloads = [blob for p in chain for blob in p.draft.blobs]
    if payloads:
        put_part_blobs(conn, payloads, chain[0].draft.created_at)
    insert_commits(conn, [commit_params(p.row, p.draft.metadata_text) for p in chain])
    new_sets: set[str] = set()
    links: list[tuple[str, str]] = []
    for p in chain:
        set_hash = p.draft.set_hash
        if set_hash is None:
            continue
        if set_hash not in stored_sets and set_hash not in new_sets:
            if not tool_set_exists(conn, set_hash):
                tools = p.draft.tools
                unique = {t.content_hash: t for t in tools}.values()
                put_definitions(
                    conn, [(t.content_hash, t.name, t.canonical) for t in unique], p.draft.created_at
                )
                put_tool_set(conn, set_hash, [t.content_hash for t in tools], p.draft.created_at)
            new_sets.add(set_hash)
        links.append((p.info.hash, set_hash))
    link_tool_sets(conn, links)
    return new_sets
