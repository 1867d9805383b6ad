"""The Transcript: one session's conversation as an append-only commit chain.

Nothing is ever overwritten: an edit is a new commit that takes its
target's place in the compiled view while the original stays in ``log()``.
Tool schemas are linked to commits as provenance ("what could the model call
when it wrote this?") and stored once per distinct schema.
"""

from __future__ import annotations

import enum
import json
import threading
from collections.abc import Mapping, Sequence
from typing import Literal, TypeAlias

from sqlalchemy import Connection

from ..canonical import canonical_json, content_hash
from ..clock import Clock
from ..errors import TranscriptError
from ..jsontypes import JSONObject, JSONValue
from ..messages import Message, ToolCall, Usage
from ..store.commit_rows import CommitRow, fetch_commit, fetch_commits, insert_commit, put_blob, session_head
from ..store.store import Store
from ..store.tool_rows import (
    ToolDefinition,
    fetch_definitions,
    fetch_definitions_by_name,
    fetch_links,
    fetch_session_links,
    link_tool_set,
    put_definitions,
    put_tool_set,
    tool_set_exists,
)
from ..tokens import DEFAULT_TOKEN_COUNTER, TokenCounter
from .compiled import CompiledContext
from .compiler import CompileState
from .options import CompileOptions, CompileView
from .queries import ToolTurn, select_tool_calls, select_tool_results, select_tool_turns
from .records import (
    CommitInfo,
    CommitOperation,
    commit_hash,
    commit_info,
    message_payload,
    message_tokens,
    metadata_text,
    usage_metadata,
)
from .tool_tracking import PreparedTool, ToolSetChange, diff_tool_sets, hash_tool_set, prepare_tools

__all__ = ["ACTIVE_TOOLS", "ToolsArgument", "Transcript"]


class _ActiveTools(enum.Enum):
    ACTIVE = "active"


ACTIVE_TOOLS: Literal[_ActiveTools.ACTIVE] = _ActiveTools.ACTIVE
"""Default of every ``tools=`` argument: link the set given to :meth:`Transcript.set_tools`."""

ToolsArgument: TypeAlias = Sequence[Mapping[str, JSONValue]] | Literal[_ActiveTools.ACTIVE] | None


class Transcript:
    """The commit chain of ``session_id`` inside ``store``.

    Several ``Transcript`` objects (in this or other processes) may share a
    session: every commit is appended to the current head in one write
    transaction, and ``compile()`` always reflects the stored head.
    """

    def __init__(
        self,
        store: Store,
        session_id: str,
        token_counter: TokenCounter | None = None,
        clock: Clock | None = None,
    ) -> None:
        if not isinstance(session_id, str) or not session_id:
            raise TranscriptError(f"session_id must be a non-empty string, got {session_id!r}")
        if "\x00" in session_id:
            # PostgreSQL text cannot hold NUL; refuse it on every backend alike.
            raise TranscriptError(f"session_id contains a NUL character: {session_id!r}")
        if len(session_id) > 255:
            raise TranscriptError(f"session_id is longer than 255 characters: {session_id[:40]!r}...")
        self._store = store
        self._session_id = session_id
        self._counter = token_counter or DEFAULT_TOKEN_COUNTER
        self._clock = clock or store.clock
        self._active: tuple[PreparedTool, ...] | None = None
        self._lock = threading.RLock()
        self._state = CompileState()
        self._compiled: CompiledContext | None = None
        self._tool_cache: dict[str, tuple[JSONObject, int]] = {}
        # Tool sets are immutable and shared store-wide, so once seen stored they stay stored.
        self._stored_sets: set[str] = set()

    # -- identity -----------------------------------------------------------------------------------

    @property
    def store(self) -> Store:
        return self._store

    @property
    def session_id(self) -> str:
        return self._session_id

    @property
    def token_counter(self) -> TokenCounter:
        return self._counter

    @property
    def head(self) -> str | None:
        """Hash of the newest stored commit of this session (None before the first)."""
        with self._store.read() as conn:
            head = session_head(conn, self._session_id)
        return None if head is None else head[0]

    def __repr__(self) -> str:
        return f"Transcript(session_id={self._session_id!r}, store={self._store!r})"

    # -- writing ------------------------------------------------------------------------------------

    def system(
        self,
        text: str,
        *,
        edit: str | None = None,
        message: str | None = None,
        metadata: Mapping[str, JSONValue] | None = None,
        tools: ToolsArgument = ACTIVE_TOOLS,
    ) -> CommitInfo:
        return self._simple("system", text, edit=edit, message=message, metadata=metadata, tools=tools)

    def user(
        self,
        text: str,
        *,
        edit: str | None = None,
        message: str | None = None,
        metadata: Mapping[str, JSONValue] | None = None,
        tools: ToolsArgument = ACTIVE_TOOLS,
    ) -> CommitInfo:
        return self._simple("user", text, edit=edit, message=message, metadata=metadata, tools=tools)

    def assistant(
        self,
        text: str = "",
        *,
        tool_calls: Sequence[ToolCall] = (),
        usage: Usage | None = None,
        edit: str | None = None,
        message: str | None = None,
        metadata: Mapping[str, JSONValue] | None = None,
        tools: ToolsArgument = ACTIVE_TOOLS,
    ) -> CommitInfo:
        """Record a model reply; ``usage`` (provider-reported) lands in metadata["usage"]."""
        meta: JSONObject = dict(metadata or {})
        if usage is not None:
            meta["usage"] = usage_metadata(usage)
        return self._write(
            Message("assistant", text, tool_calls=tuple(tool_calls)),
            edit=edit,
            message=message,
            metadata=meta,
            tools=tools,
        )

    def tool_result(
        self,
        tool_call_id: str,
        name: str,
        content: str,
        *,
        edit: str | None = None,
        message: str | None = None,
        metadata: Mapping[str, JSONValue] | None = None,
        is_error: bool = False,
        tools: ToolsArgument = ACTIVE_TOOLS,
    ) -> CommitInfo:
        """Record a tool's output; with ``edit=`` replace an earlier result of the same call.

        An edit must keep the target's ``tool_call_id`` and ``name`` so the
        result still answers its call.
        """
        return self._write(
            Message("tool", content, tool_call_id=tool_call_id, name=name, is_error=is_error),
            edit=edit,
            message=message if message is not None else f"tool result: {name.replace(chr(0), '')}",
            metadata=metadata,
            tools=tools,
        )

    def commit(
        self,
        content: Message,
        *,
        operation: CommitOperation = CommitOperation.APPEND,
        edit_target: str | None = None,
        message: str | None = None,
        metadata: Mapping[str, JSONValue] | None = None,
        tools: ToolsArgument = ACTIVE_TOOLS,
    ) -> CommitInfo:
        """Store one message as a commit, atomically, and return it.

        ``tools`` links that tool list to the commit (it wins over the active
        set); ``None`` links nothing; the default links the active set.
        """
        operation = CommitOperation(operation)
        if operation is CommitOperation.EDIT and edit_target is None:
            raise TranscriptError("an EDIT commit needs edit_target (the hash of the commit to replace)")
        if operation is CommitOperation.APPEND and edit_target is not None:
            raise TranscriptError("edit_target is only allowed with operation=EDIT")
        return self._write(content, edit=edit_target, message=message, metadata=metadata, tools=tools)

    def _simple(
        self,
        role: Literal["system", "user"],
        text: str,
        *,
        edit: str | None,
        message: str | None,
        metadata: Mapping[str, JSONValue] | None,
        tools: ToolsArgument,
    ) -> CommitInfo:
        return self._write(Message(role, text), edit=edit, message=message, metadata=metadata, tools=tools)

    def _write(
        self,
        content: Message,
        *,
        edit: str | None,
        message: str | None,
        metadata: Mapping[str, JSONValue] | None,
        tools: ToolsArgument,
    ) -> CommitInfo:
        # Everything that can be wrong with the input is checked before the transaction.
        # Keep the JSON round-trip of what is stored, so that the cached view
        # equals what any later reader decodes (tuples become lists, no shared
        # mutable values with the caller).
        canonical = canonical_json(message_payload(content))
        payload: JSONObject = json.loads(canonical)
        blob_hash = content_hash(payload)
        meta: JSONObject = json.loads(metadata_text(metadata or {}))
        if message is not None and not isinstance(message, str):
            raise TranscriptError(f"the commit message must be a string, got {type(message).__name__}")
        if message is not None and "\x00" in message:
            raise TranscriptError(f"the commit message contains a NUL character: {message!r}")
        linked = self._tools_for(tools)
        operation = CommitOperation.APPEND if edit is None else CommitOperation.EDIT
        tokens = message_tokens(content, self._counter)
        now = self._clock.now()
        with self._lock:
            # The named lock keeps concurrent writers of this session (other
            # processes on PostgreSQL) from picking the same head as parent.
            with self._store.write(lock=f"transcript:{self._session_id}") as conn:
                head = session_head(conn, self._session_id)
                parent, seq = (None, 0) if head is None else (head[0], head[1] + 1)
                target = None if edit is None else self._edit_target(conn, edit, content)
                digest = commit_hash(
                    session_id=self._session_id,
                    parent=parent,
                    operation=operation,
                    edit_target=target,
                    blob_hash=blob_hash,
                    message=message,
                    metadata=meta,
                )
                row = CommitRow(
                    hash=digest,
                    session_id=self._session_id,
                    seq=seq,
                    parent_hash=parent,
                    operation=operation.value,
                    edit_target=target,
                    role=content.role,
                    blob_hash=blob_hash,
                    content=payload,
                    message=message,
                    metadata=meta,
                    token_count=tokens,
                    created_at=now,
                )
                put_blob(conn, blob_hash, canonical, now)
                insert_commit(conn, row)
                if linked:
                    tool_hashes = [t.content_hash for t in linked]
                    set_hash = hash_tool_set(tool_hashes)
                    if set_hash not in self._stored_sets and not tool_set_exists(conn, set_hash):
                        unique = {t.content_hash: t for t in linked}.values()
                        put_definitions(conn, [(t.content_hash, t.name, t.canonical) for t in unique], now)
                        put_tool_set(conn, set_hash, tool_hashes, now)
                    link_tool_set(conn, digest, set_hash)
            info = commit_info(row)
            if linked:
                self._stored_sets.add(hash_tool_set([t.content_hash for t in linked]))
            for tool in linked:
                self._tool_cache.setdefault(
                    tool.content_hash, (tool.schema, self._counter.count(tool.canonical))
                )
            if self._state.head == parent:
                self._compiled = None
                links = {digest: tuple(t.content_hash for t in linked)} if linked else {}
                self._state.apply([info], links)
        return info

    def _edit_target(self, conn: Connection, target_hash: str, content: Message) -> str:
        """Resolve and check an edit target inside the write transaction."""
        if not isinstance(target_hash, str) or not target_hash:
            raise TranscriptError(f"edit target must be a commit hash, got {target_hash!r}")
        target = fetch_commit(conn, target_hash)
        if target is None:
            raise TranscriptError(f"cannot edit {target_hash!r}: no such commit")
        if target.session_id != self._session_id:
            raise TranscriptError(
                f"cannot edit {target_hash[:12]}: it belongs to session {target.session_id!r}, "
                f"not {self._session_id!r}"
            )
        if target.edit_target is not None:
            original = fetch_commit(conn, target.edit_target)
            assert original is not None  # foreign key
            target = original
        old = commit_info(target).content
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

    # -- tools --------------------------------------------------------------------------------------

    def set_tools(self, tools: Sequence[Mapping[str, JSONValue]] | None) -> None:
        """Tools linked to every later commit that does not pass its own ``tools=``.

        Validated now (a bad schema fails here, naming the tool); ``None``
        stops linking. The active set lives in this object, not the database.
        """
        self._active = None if tools is None else prepare_tools(tools)

    def get_tools(self) -> list[JSONObject]:
        """The active set as it will be stored (empty when none is set)."""
        return [t.schema for t in self._active or ()]

    def _tools_for(self, tools: ToolsArgument) -> tuple[PreparedTool, ...]:
        if tools is ACTIVE_TOOLS:
            return self._active or ()
        if tools is None:
            return ()
        return prepare_tools(tools)

    def get_commit_tools(self, commit: str) -> list[JSONObject]:
        """The schemas linked to one commit of this session, in order ([] when none)."""
        with self._store.read() as conn:
            self._require_commit(conn, commit)
            hashes = fetch_links(conn, commit)
            return [self._tool_schemas(conn, hashes)[i] for i in range(len(hashes))]

    def tool_versions(self, name: str) -> list[ToolDefinition]:
        """Every stored schema with this tool name (any session), oldest first."""
        with self._store.read() as conn:
            return fetch_definitions_by_name(conn, name)

    def tool_set_changes(self) -> list[ToolSetChange]:
        """One entry per commit with linked tools, compared with the previous linked set.

        The first linked commit lists every tool as added. Use
        ``breaks_cache`` to find the turns where a provider's prompt cache
        could not be reused.
        """
        with self._store.read() as conn:
            links = fetch_session_links(conn, self._session_id)
            names = {
                h: d.name for h, d in fetch_definitions(conn, {h for v in links.values() for h in v}).items()
            }
        changes: list[ToolSetChange] = []
        previous: list[tuple[str, str]] = []
        previous_commit: str | None = None
        for commit_hash_, hashes in links.items():
            current = [(names[h], h) for h in hashes]
            changes.append(diff_tool_sets(commit_hash_, previous_commit, previous, current))
            previous, previous_commit = current, commit_hash_
        return changes

    def _tool_schemas(self, conn: Connection, hashes: Sequence[str]) -> list[JSONObject]:
        return [schema for schema, _ in self._tool_entries(conn, hashes)]

    def _tool_entries(self, conn: Connection, hashes: Sequence[str]) -> list[tuple[JSONObject, int]]:
        missing = [h for h in hashes if h not in self._tool_cache]
        if missing:
            for h, definition in fetch_definitions(conn, missing).items():
                self._tool_cache[h] = (
                    definition.schema,
                    self._counter.count(canonical_json(definition.schema)),
                )
        return [self._tool_cache[h] for h in hashes]

    # -- reading ------------------------------------------------------------------------------------

    def log(self) -> list[CommitInfo]:
        """Every commit of the session, edits and originals alike, oldest first."""
        with self._store.read() as conn:
            return [commit_info(r) for r in fetch_commits(conn, self._session_id)]

    def get(self, commit: str) -> CommitInfo:
        """One commit of this session by hash; TranscriptError if there is none."""
        with self._store.read() as conn:
            return commit_info(self._require_commit(conn, commit))

    def _require_commit(self, conn: Connection, commit: str) -> CommitRow:
        row = fetch_commit(conn, commit) if isinstance(commit, str) else None
        if row is None or row.session_id != self._session_id:
            raise TranscriptError(f"no commit {commit!r} in session {self._session_id!r}")
        return row

    def compile(self, *, options: CompileOptions | None = None) -> CompiledContext:
        """The context to send: messages with edits applied, plus the latest linked tool set.

        Cached by head: after N new commits only those N are read and folded in.
        """
        if options is None or not options.transforms:
            with self._lock:
                return self._base_context()
        return self.compile_view(options=options).context

    def compile_view(self, *, options: CompileOptions | None = None) -> CompileView:
        """Like :meth:`compile`, with the commit behind each message."""
        with self._lock:
            context = self._base_context()
            view = CompileView(context=context, commits=tuple(self._state.slots), token_counter=self._counter)
        for transform in (options or CompileOptions()).transforms:
            view = transform(view)
        return view

    def _base_context(self) -> CompiledContext:
        """The cached plain view at the stored head (caller holds the lock)."""
        with self._store.read() as conn:
            self._refresh(conn)
            context = self._compiled
            if context is None:
                entries = self._tool_entries(conn, self._state.tool_hashes)
                context = CompiledContext(
                    messages=tuple(self._state.messages),
                    tools=tuple(schema for schema, _ in entries),
                    token_count=self._state.message_tokens + sum(tokens for _, tokens in entries),
                    commit_hashes=tuple(self._state.hashes),
                )
                self._compiled = context
        return context

    def _refresh(self, conn: Connection) -> None:
        """Bring the compile state up to the stored head (caller holds the lock)."""
        head = session_head(conn, self._session_id)
        head_hash = None if head is None else head[0]
        if head_hash == self._state.head:
            return
        self._compiled = None
        rows = fetch_commits(conn, self._session_id, after_seq=self._state.seq)
        commits = [commit_info(r) for r in rows]
        if not commits or not self._state.continues_from(commits[0]):
            self._state = CompileState()
            commits = [commit_info(r) for r in fetch_commits(conn, self._session_id)]
        links = fetch_session_links(conn, self._session_id, after_seq=self._state.seq)
        self._state.apply(commits, links)

    # -- queries ------------------------------------------------------------------------------------

    def _view(self) -> list[CommitInfo]:
        with self._lock:
            with self._store.read() as conn:
                self._refresh(conn)
            return list(self._state.slots)

    def find_tool_results(self, name: str | None = None, after: str | None = None) -> list[CommitInfo]:
        """Tool results (commits with a ``tool_call_id``) in conversation order.

        ``name`` filters on the tool name; ``after`` keeps only results
        positioned after that commit (exclusive; an edit counts at its
        target's position).
        """
        with self._lock:
            view = self._view()
            position = -1
            if after is not None:
                found = self._state.position_of.get(after)
                if found is None:
                    raise TranscriptError(f"no commit {after!r} in session {self._session_id!r}")
                position = found
        return select_tool_results(view, name=name, after_position=position)

    def find_tool_calls(self, name: str | None = None) -> list[CommitInfo]:
        """Assistant commits that requested tools (any call named ``name``, if given)."""
        return select_tool_calls(self._view(), name=name)

    def find_tool_turns(self, name: str | None = None) -> list[ToolTurn]:
        """Each tool-calling assistant commit with its results, matched by ``tool_call_id``."""
        return select_tool_turns(self._view(), name=name)
