"""The Transcript: one session's conversation as an append-only commit chain.

Nothing is ever overwritten: an edit is a new commit that takes its
target's place in the compiled view while the original stays in ``log()``.
Tool schemas are linked to commits as provenance ("what could the model call
when it wrote this?") and stored once per distinct schema.
"""

from __future__ import annotations

import enum
import threading
import typing
from collections.abc import Generator, Mapping, Sequence
from contextlib import contextmanager
from typing import Literal, TypeAlias

from sqlalchemy import Connection

from ..canonical import canonical_json, find_surrogate
from ..clock import Clock
from ..errors import TranscriptError
from ..jsontypes import JSONObject, JSONValue
from ..messages import Message, Role, ToolCall, Usage
from ..model import CompiledContext
from ..parts import Content, Part
from ..store.commit_rows import CommitRow, fetch_commit, fetch_commits, session_head
from ..store.fork_rows import in_chain
from ..store.store import Store
from ..store.tool_rows import (
    ToolDefinition,
    fetch_definitions,
    fetch_definitions_by_name,
    fetch_links,
    fetch_session_links,
)
from ..tokens import DEFAULT_TOKEN_COUNTER, TokenCounter
from .chain_writer import ChainWriter
from .compaction import CompactedView
from .compiler import CompileState
from .compress import compress_tool_calls as _compress_tool_calls
from .forking import fork_session
from .hook_run import run_tool_result_hook
from .hooks import HookEvent, ToolResultHandler, ToolResultHooks
from .lazy import LoadToolResults, with_lazy_loading
from .options import CompileOptions, CompileView
from .originals import load_message_blob
from .part_codec import content_message, with_text
from .part_store import commit_infos
from .queries import ToolTurn, select_tool_calls, select_tool_results, select_tool_turns
from .records import CommitInfo, CommitOperation, label_text, usage_metadata
from .summarization_config import configure_tool_summarization as _configure_tool_summarization
from .tool_tracking import PreparedTool, ToolSetChange, diff_tool_sets, hash_tool_set, prepare_tools
from .turns import StagedTurn, TurnRecord
from .writer import Draft, Placed, draft_commit

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
    transaction, and ``compile()`` always reflects the stored head. Inside
    :meth:`turn`, commits are staged and written together when it ends.
    """

    def __init__(
        self,
        store: Store,
        session_id: str,
        token_counter: TokenCounter | None = None,
        clock: Clock | None = None,
        *,
        assume_new: bool = False,
    ) -> None:
        """``assume_new=True`` promises that the session has no commits and that nothing else writes
        it before this object's first write (a store made for this object alone, as the evaluation
        loop's default store): the first turn and the first write then read nothing first. A broken
        promise is not silent: the first write then collides with a stored commit and raises."""
        if not isinstance(session_id, str) or not session_id:
            raise TranscriptError(f"session_id must be a non-empty string, got {session_id!r}")
        if "\x00" in session_id:
            # PostgreSQL text cannot hold NUL; refuse it on every backend alike.
            raise TranscriptError(f"session_id contains a NUL character: {session_id!r}")
        at = find_surrogate(session_id)
        if at is not None:
            # Stored as plain text, which cannot hold one (no UTF-8 encoding exists).
            raise TranscriptError(
                f"session_id contains a lone surrogate at index {at}, which is not valid Unicode text: "
                f"{session_id!r}"
            )
        if len(session_id) > 255:
            raise TranscriptError(f"session_id is longer than 255 characters: {session_id[:40]!r}...")
        self._store = store
        self._session_id = session_id
        self._counter = token_counter or DEFAULT_TOKEN_COUNTER
        self._clock = clock or store.clock
        self._active: tuple[PreparedTool, ...] | None = None
        self._active_set: str | None = None
        self._lock = threading.RLock()
        self._state = CompileState()
        self._compiled: CompiledContext | None = None
        self._tool_cache: dict[str, tuple[JSONObject, int]] = {}
        self._hooks = ToolResultHooks()
        self._writer = ChainWriter(store, session_id, assume_new=assume_new)
        self._turn: StagedTurn | None = None
        # The stored head as of this object's last write, when its view was at that head.
        self._written_head: str | None = None
        # Until the first write or read: the session is known to be empty (see assume_new).
        self._known_new = assume_new

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
        """Hash of the newest stored commit of this session (None before the first).

        Inside :meth:`turn`, the newest commit including the staged ones.
        """
        with self._lock:
            turn = self._turn
            if turn is not None:
                return turn.tail[0]
        with self._store.read() as conn:
            head = session_head(conn, self._session_id)
        return None if head is None else head[0]

    def __repr__(self) -> str:
        return f"Transcript(session_id={self._session_id!r}, store={self._store!r})"

    def fork(self, at: str | None = None, *, new_session: str | None = None) -> Transcript:
        """A transcript of a new session sharing this one's history up to commit ``at`` (default: the head).

        Nothing is copied (``transcript.forking``); writing either session never changes the other.
        """
        head = self.head if at is None else at
        if head is None:
            raise TranscriptError(f"fork: session {self._session_id!r} has no commits; nothing to fork")
        forked = fork_session(self._store, self._session_id, at=head, new_session=new_session)
        return Transcript(self._store, forked, self._counter, self._clock)

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
        text: Content,
        *,
        edit: str | None = None,
        message: str | None = None,
        metadata: Mapping[str, JSONValue] | None = None,
        tools: ToolsArgument = ACTIVE_TOOLS,
    ) -> CommitInfo:
        """Record the user's input: a string, or text, images and documents in order (``Content``)."""
        return self._simple("user", text, edit=edit, message=message, metadata=metadata, tools=tools)

    def assistant(
        self,
        text: str = "",
        *,
        tool_calls: Sequence[ToolCall] = (),
        usage: Usage | None = None,
        parts: Sequence[Part] = (),
        edit: str | None = None,
        message: str | None = None,
        metadata: Mapping[str, JSONValue] | None = None,
        tools: ToolsArgument = ACTIVE_TOOLS,
    ) -> CommitInfo:
        """Record a model reply; ``usage`` (provider-reported) lands in metadata["usage"].

        ``tool_calls`` holds :class:`~weakprompt.messages.ToolCall` objects (one
        representation of a call everywhere); anything else is a ``TranscriptError``.
        ``parts`` is the reply's whole content when it holds more than text
        (reasoning, images): ``text`` must be their text.
        """
        calls = _checked_calls(tool_calls)
        meta: JSONObject = dict(metadata or {})
        if usage is not None:
            meta["usage"] = usage_metadata(usage)
        return self._write(
            _message("assistant", text, tool_calls=calls, parts=tuple(parts)),
            edit=edit,
            message=message,
            metadata=meta,
            tools=tools,
        )

    def tool_result(
        self,
        tool_call_id: str,
        name: str,
        content: Content,
        *,
        edit: str | None = None,
        message: str | None = None,
        metadata: Mapping[str, JSONValue] | None = None,
        is_error: bool = False,
        tools: ToolsArgument = ACTIVE_TOOLS,
    ) -> CommitInfo:
        """Record a tool's output; with ``edit=`` replace an earlier result of the same call.

        An edit must keep the target's ``tool_call_id`` and ``name`` so the
        result still answers its call. Without ``edit=``, a ``tool_result``
        hook (see :meth:`on`) sees the result first and may change it or
        reject it (:class:`ToolResultRejected` is raised, nothing committed).
        ``content`` may hold images and documents besides text: a hook sees
        and rewrites the text; the other parts are kept.
        """
        result = content_message(
            "tool", content, where="tool_result", tool_call_id=tool_call_id, name=name, is_error=is_error
        )
        if edit is None and self._hooks.should_fire("tool_result"):

            def write(text: str, meta: JSONObject, label: str | None) -> CommitInfo:
                return self.tool_result(
                    tool_call_id,
                    name,
                    with_text(result.parts, text) if result.parts else text,
                    message=label,
                    metadata=meta,
                    is_error=is_error,
                    tools=tools,
                )

            return run_tool_result_hook(
                self,
                tool_call_id=tool_call_id,
                name=name,
                content=result.content,
                message=message,
                metadata=metadata,
                is_error=is_error,
                write=write,
            )
        return self._write(
            result,
            edit=edit,
            message=message if message is not None else f"tool result: {label_text(name)}",
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
        text: Content,
        *,
        edit: str | None,
        message: str | None,
        metadata: Mapping[str, JSONValue] | None,
        tools: ToolsArgument,
    ) -> CommitInfo:
        built = Message(role, text) if isinstance(text, str) else content_message(role, text, where=role)
        return self._write(built, edit=edit, message=message, metadata=metadata, tools=tools)

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
        linked, set_hash = self._tools_for(tools)
        draft = draft_commit(
            content,
            edit=edit,
            message=message,
            metadata=metadata,
            tools=linked,
            set_hash=set_hash,
            counter=self._counter,
            now=self._clock.now(),
        )
        with self._lock:
            turn = self._turn
            if turn is not None:
                # The state is at the turn's tail.
                placed = self._writer.stage(turn, draft, shown=self._state.position_of)
            else:
                placed = self._writer.write_now(draft)
                self._known_new = False
                if self._state.head != placed.info.parent:
                    # Another writer got in between: the view reads on from its head when next
                    # asked, and a turn(refresh=False) must not trust it until then.
                    self._written_head = None
                    self._remember_tools(draft)
                    return placed.info
                self._written_head = placed.info.hash
            self._remember_tools(draft)
            self._apply(placed)
        return placed.info

    def _apply(self, placed: Placed) -> None:
        """Fold a commit this object wrote into the compile state (which is at its parent)."""
        self._compiled = None
        draft = placed.draft
        links = {placed.info.hash: tuple(t.content_hash for t in draft.tools)} if draft.tools else {}
        self._state.apply([placed.info], links)

    def _remember_tools(self, draft: Draft) -> None:
        for tool in draft.tools:
            if tool.content_hash not in self._tool_cache:
                self._tool_cache[tool.content_hash] = (tool.schema, self._counter.count(tool.canonical))

    # -- turns --------------------------------------------------------------------------------------

    @contextmanager
    def turn(self, *, refresh: bool = True) -> Generator[TurnRecord, None, None]:
        """Stage every commit made in the block and store them together when it ends.

        Each commit gets its hash at once and is visible through this object
        (``compile``, queries, ``get``, ``log``, ``head``), but is written
        only when the block ends: all in one transaction, so a crash or an
        error never leaves part of a turn stored. If the block raises,
        nothing of it is stored and the error says so. Compile inside the
        block does not read the store again: it shows the head the turn
        started from plus the staged commits. If another writer appended to
        the session meanwhile, the turn is stored after those commits with
        new hashes (see :class:`TurnRecord`). A turn inside a turn joins it.
        Rows that belong with the turn (:meth:`TurnRecord.attach`: the
        stored outputs of its tool results) are written in the same
        transaction, and told once it has committed.

        The turn starts by bringing this object's view up to the stored
        head. ``refresh=False`` skips that read when this object's own last
        write left its view at the stored head: for a caller that writes
        turn after turn with nothing in between (the evaluation loop). A
        commit another writer makes in that gap is then not shown inside
        the turn, which is stored after it.
        """
        with self._lock:
            turn = self._turn
            if turn is not None:
                turn.depth += 1
            else:
                if self._known_new and not refresh:
                    pass  # an empty session nobody else writes: the empty view is the stored one
                elif refresh or self._written_head is None or self._state.head != self._written_head:
                    with self._store.read() as conn:
                        self._refresh(conn)
                        self._tool_entries(conn, self._state.tool_hashes)
                turn = StagedTurn(base=self._state.head, base_seq=self._state.seq, record=TurnRecord())
                self._state.mark()  # staged commits are folded in; undone if stored elsewhere or dropped
                self._turn = turn
        try:
            yield turn.record
        except BaseException as exc:
            with self._lock:
                turn.depth -= 1
                if turn.depth == 0:
                    self._turn = None
                    self._drop(turn, exc)
            raise
        with self._lock:
            turn.depth -= 1
            if turn.depth > 0:
                return
            self._turn = None
            self._store_turn(turn)
        writes = turn.record.release_writes()
        for write in writes:  # outside the lock: these publish events
            write.committed()

    def _store_turn(self, turn: StagedTurn) -> None:
        """Write a finished turn and its attached rows in one transaction (caller holds the lock)."""
        record = turn.record
        record.open = False
        try:
            chain, moved = self._writer.store_turn(turn)
            self._known_new = self._known_new and not chain
        except BaseException as exc:
            self._drop(turn, exc)
            raise
        if moved:
            # The view holds the staged hashes: take them back out, and read on from the turn's
            # base (the other writers' commits, then this turn as stored) when next asked.
            self._state.rollback()
            self._compiled = None
            record.renamed = {
                old.info.hash: new.info.hash for old, new in zip(turn.chain, chain, strict=True)
            }
            self._written_head = None
        else:
            self._state.release()
            if chain:
                self._written_head = chain[-1].info.hash
        record.commits = tuple(p.info for p in chain)
        record.stored = True
        record.moved = moved

    def _drop(self, turn: StagedTurn, error: BaseException) -> None:
        """Forget a turn that will not be stored (caller holds the lock)."""
        turn.record.release_writes()
        self._state.rollback()
        if not turn.chain:
            return
        self._compiled = None
        hashes = ", ".join(p.info.hash[:12] for p in turn.chain)
        error.add_note(
            f"weakprompt: the turn in progress on transcript {self._session_id!r} was not stored: "
            f"its {len(turn.chain)} commit(s) ({hashes}) are gone"
        )

    # -- hooks --------------------------------------------------------------------------------------

    @property
    def hooks(self) -> ToolResultHooks:
        """This object's hook handlers and summarizer wiring (not shared with other objects)."""
        return self._hooks

    def on(self, event: HookEvent, handler: ToolResultHandler) -> None:
        """Let ``handler`` see every new tool result before it is committed (replaces the last one)."""
        self._hooks.on(event, handler)

    def off(self, event: HookEvent, handler: ToolResultHandler | None = None) -> bool:
        """Remove the ``event`` handler (only if it is ``handler``, when given); True if one was removed."""
        return self._hooks.off(event, handler)

    configure_tool_summarization = _configure_tool_summarization
    compress_tool_calls = _compress_tool_calls

    def get_blob(self, blob_hash: str) -> Message:
        """A stored message by content hash: any commit's ``blob_hash``, or a ``summarized_from``."""
        return load_message_blob(self._store, blob_hash)

    # -- tools --------------------------------------------------------------------------------------

    def set_tools(self, tools: Sequence[Mapping[str, JSONValue]] | None) -> None:
        """Tools linked to every later commit that does not pass its own ``tools=``.

        Validated now (a bad schema fails here, naming the tool); ``None``
        stops linking. The active set lives in this object, not the database.
        """
        self._active = None if tools is None else prepare_tools(tools)
        self._active_set = hash_tool_set([t.content_hash for t in self._active]) if self._active else None

    def get_tools(self) -> list[JSONObject]:
        """The active set as it will be stored (empty when none is set)."""
        return [t.schema for t in self._active or ()]

    def _tools_for(self, tools: ToolsArgument) -> tuple[tuple[PreparedTool, ...], str | None]:
        """The tools to link and their set hash (None when there are none)."""
        if tools is ACTIVE_TOOLS:
            return self._active or (), self._active_set
        if tools is None:
            return (), None
        prepared = prepare_tools(tools)
        return prepared, hash_tool_set([t.content_hash for t in prepared]) if prepared else None

    def get_commit_tools(self, commit: str) -> list[JSONObject]:
        """The schemas linked to one commit of this session, in order ([] when none)."""
        staged = self._staged(commit)
        if staged is not None:
            return [t.schema for t in staged.draft.tools]
        with self._store.read() as conn:
            self._require_commit(conn, commit)
            hashes = fetch_links(conn, commit)
            return [self._tool_schemas(conn, hashes)[i] for i in range(len(hashes))]

    def tool_versions(self, name: str) -> list[ToolDefinition]:
        """Every stored schema with this tool name (any session), oldest first."""
        if find_surrogate(name) is not None:
            return []  # such a name is refused when tools are set, so none is stored
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
        for placed in self._staged_chain():
            if placed.draft.tools:
                links[placed.info.hash] = tuple(t.content_hash for t in placed.draft.tools)
                names.update((t.content_hash, t.name) for t in placed.draft.tools)
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

    def _tool_entries(self, conn: Connection | None, hashes: Sequence[str]) -> list[tuple[JSONObject, int]]:
        """Schemas and token counts of tool hashes, read once and then cached (``conn`` None: open one)."""
        missing = [h for h in hashes if h not in self._tool_cache]
        if missing and conn is None:
            with self._store.read() as own:
                return self._tool_entries(own, hashes)
        if missing:
            assert conn is not None
            for h, definition in fetch_definitions(conn, missing).items():
                self._tool_cache[h] = (
                    definition.schema,
                    self._counter.count(canonical_json(definition.schema)),
                )
        return [self._tool_cache[h] for h in hashes]

    # -- reading ------------------------------------------------------------------------------------

    def log(self) -> list[CommitInfo]:
        """Every commit of the session, edits and originals alike, oldest first (staged ones last)."""
        staged = [p.info for p in self._staged_chain()]
        with self._store.read() as conn:
            return commit_infos(conn, fetch_commits(conn, self._session_id)) + staged

    def get(self, commit: str) -> CommitInfo:
        """One commit of this session by hash, staged or stored; TranscriptError if there is none."""
        staged = self._staged(commit)
        if staged is not None:
            return staged.info
        with self._store.read() as conn:
            return commit_infos(conn, [self._require_commit(conn, commit)])[0]

    def _staged_chain(self) -> list[Placed]:
        with self._lock:
            return list(self._turn.chain) if self._turn is not None else []

    def _staged(self, commit: object) -> Placed | None:
        with self._lock:
            turn = self._turn
            return turn.by_hash.get(commit) if turn is not None and isinstance(commit, str) else None

    def _require_commit(self, conn: Connection, commit: str) -> CommitRow:
        # A lone surrogate cannot even be sent as a query parameter; no hash has one anyway.
        usable = isinstance(commit, str) and find_surrogate(commit) is None
        row = fetch_commit(conn, commit) if usable else None
        if row is None or not in_chain(conn, self._session_id, row.session_id, row.seq):
            raise TranscriptError(f"no commit {commit!r} in session {self._session_id!r}")
        return row

    def compile(
        self, *, options: CompileOptions | None = None, load_tool_results: LoadToolResults = True
    ) -> CompiledContext:
        """The context to send: messages with edits applied, plus the latest linked tool set.

        Cached by head: after N new commits only those N are read and folded in.
        ``load_tool_results`` decides which stored tool results of earlier
        user turns are shown in full (see :mod:`weakprompt.transcript.lazy`):
        ``True`` (the default here) all of them, ``False`` none (each becomes
        a slim reference where that is shorter), a list of tool_call_ids just
        those. The evaluation loop's own default is ``False``.
        """
        options = with_lazy_loading(options, load_tool_results)
        if options is None or not options.transforms:
            with self._lock:
                context = self._base_context()
                if not self._state.compactions or (options is not None and not options.compacted):
                    return context
        return self.compile_view(options=options).context

    def compile_view(
        self, *, options: CompileOptions | None = None, load_tool_results: LoadToolResults = True
    ) -> CompileView:
        """Like :meth:`compile`, with the commit behind each message."""
        options = with_lazy_loading(options, load_tool_results)
        options = options or CompileOptions()
        with self._lock:
            context = self._base_context()
            view = CompileView(
                context=context,
                commits=tuple(self._state.slots),
                token_counter=self._counter,
                origins=tuple(self._state.origins),
            )
            compacted = options.compacted and self._state.compactions > 0
        if compacted:  # the compacted view first: later transforms (lazy results) see what is sent
            view = CompactedView()(view)
        for transform in options.transforms:
            view = transform(view)
        return view

    def _base_context(self) -> CompiledContext:
        """The cached plain view at the stored head, or a turn's staged tail (caller holds the lock)."""
        if self._turn is not None:
            return self._cached_context(None)
        with self._store.read() as conn:
            self._refresh(conn)
            return self._cached_context(conn)

    def _cached_context(self, conn: Connection | None) -> CompiledContext:
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
        self._known_new = False
        head = session_head(conn, self._session_id)
        head_hash = None if head is None else head[0]
        if head_hash == self._state.head:
            return
        self._compiled = None
        rows = fetch_commits(conn, self._session_id, after_seq=self._state.seq)
        commits = commit_infos(conn, rows)
        if not commits or not self._state.continues_from(commits[0]):
            self._state = CompileState()
            commits = commit_infos(conn, fetch_commits(conn, self._session_id))
        links = fetch_session_links(conn, self._session_id, after_seq=self._state.seq)
        self._state.apply(commits, links)

    # -- queries ------------------------------------------------------------------------------------

    def _view(self) -> list[CommitInfo]:
        with self._lock:
            if self._turn is None:
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


def _checked_calls(tool_calls: Sequence[ToolCall]) -> tuple[ToolCall, ...]:
    """``tool_calls`` as a tuple, or a ``TranscriptError`` naming the entry that is not a ToolCall."""
    hint = "build each with ToolCall(id=..., name=..., arguments=...) (from weakprompt import ToolCall)"
    given: object = tool_calls
    if isinstance(given, (ToolCall, str, bytes, Mapping)) or not isinstance(given, Sequence):
        raise TranscriptError(
            f"assistant: tool_calls must be a sequence of ToolCall, got a {type(given).__name__}; {hint}"
        )
    calls: list[ToolCall] = []
    for index, call in enumerate(typing.cast(Sequence[object], given)):
        if not isinstance(call, ToolCall):
            raise TranscriptError(
                f"assistant: tool_calls[{index}] is a {type(call).__name__}, expected a ToolCall; {hint}"
            )
        calls.append(call)
    return tuple(calls)


def _message(role: Role, text: str, *, tool_calls: tuple[ToolCall, ...], parts: tuple[Part, ...]) -> Message:
    try:
        return Message(role, text, tool_calls=tool_calls, parts=parts)
    except ValueError as exc:
        raise TranscriptError(f"cannot record the {role} message: {exc}") from exc
