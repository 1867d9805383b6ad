"""The tool-output store: every tool result of a session, stored once, out of the context.

Payloads are kept content-addressed (compressed when that pays) in the same
database as the transcript, so an output that repeats costs one small row, not another
copy. Each stored call keeps its arguments, tool name, time, size figures,
a deterministic summary and a short preview; the payload is read only when
it is asked for. Outputs stay until :meth:`ToolOutputStore.purge_session`
(or the evaluation's ``retention`` policy) removes them.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Mapping
from typing import TYPE_CHECKING

import attrs

from ...clock import Clock
from ...events import EventBus, ToolResultStored, publish
from ...jsontypes import JSONValue
from ...messages import ToolCall
from ...store.locks import advisory_lock
from ...store.output_payload import encode_payload, fetch_blob, put_output_blob
from ...store.output_record import ToolResultMetadata
from ...store.output_rows import (
    blob_exists,
    delete_orphan_blobs,
    delete_outputs,
    find_by_call,
    find_by_handle,
    has_oversized,
    insert_output,
    known_call_ids,
    list_outputs,
    lock_output_blob,
    mark_oversized,
    next_output_seq,
    write_state,
)
from ...tokens import DEFAULT_TOKEN_COUNTER, TokenCounter
from .extraction import DocumentStats, ExtractionSource, document_stats
from .ledger import OutputLedger
from .preparing import MAX_ID_CHARS, OversizedDecision, check_id, payload_bytes, prepare_output
from .records import PreparedOutput, StoredToolResult
from .staged import StagedOutput
from .summaries import DEFAULT_SUMMARIES, SummaryRegistry

if TYPE_CHECKING:
    from sqlalchemy import Connection

    from ...store import Store
    from ...transcript.turns import TurnRecord

__all__ = ["OversizedDecision", "StagedOutput", "ToolOutputStore"]

logger = logging.getLogger(__name__)

_PLANNED = object()
"""The ledger's transaction token for rows decided ahead of a deferred store's transaction."""


class ToolOutputStore:
    """The stored tool outputs of one session inside ``store``.

    Reads and writes are scoped to ``session_id``: another session's call
    ids and handles are simply not found. ``token_counter`` measures the
    ``tokens`` figure (use the model's own counter when there is one);
    ``summaries`` picks the summary function per tool; a store given an
    event bus (``dispatcher``, outside a run: in a run the loop reports each
    stored result once, with its commit) publishes
    :class:`~weakprompt.events.ToolResultStored` for each output it stores.
    """

    def __init__(
        self,
        store: Store,
        session_id: str,
        *,
        token_counter: TokenCounter | None = None,
        clock: Clock | None = None,
        summaries: SummaryRegistry | None = None,
        dispatcher: EventBus | None = None,
        sole_writer: bool = False,
    ) -> None:
        """``sole_writer``: this object is the only writer of a session with no outputs yet (a private
        store an evaluation made): it keeps count itself instead of reading (see :mod:`.ledger`)."""
        self._ledger = OutputLedger() if sole_writer else None
        self._store = store
        self._session_id = check_id("session_id", session_id)
        self._counter = token_counter or DEFAULT_TOKEN_COUNTER
        self._clock = clock or store.clock
        self._summaries = summaries or DEFAULT_SUMMARIES
        self._dispatcher = dispatcher

    @property
    def session_id(self) -> str:
        return self._session_id

    @property
    def store(self) -> Store:
        return self._store

    @property
    def token_counter(self) -> TokenCounter:
        return self._counter

    def __repr__(self) -> str:
        return f"ToolOutputStore(session_id={self._session_id!r}, store={self._store!r})"

    # -- writing ------------------------------------------------------------------------------------

    def measure(self, result: str | bytes) -> DocumentStats:
        """Bytes, lines and tokens of ``result`` as this store counts them (str is UTF-8 encoded)."""
        return document_stats(payload_bytes(result), self._counter)

    def store_result(
        self,
        tool_call_id: str,
        tool_name: str,
        args: str | Mapping[str, JSONValue],
        result: str | bytes,
        *,
        is_error: bool = False,
        oversized: OversizedDecision = False,
    ) -> ToolResultMetadata:
        """Store one tool call's output and return its reference.

        ``args`` is kept verbatim (a mapping is written as compact JSON).
        ``oversized`` records whether the model was shown the handle message
        instead of the output; pass a function to decide from the measured
        size. Storing the same call with the same output again changes
        nothing and returns the stored reference (``deduplicated``).
        Results of tools in ``NEVER_STORED_TOOLS`` are refused.
        """
        prepared = self.prepare(tool_call_id, tool_name, args, result, is_error=is_error, oversized=oversized)
        return self.store_prepared(prepared)

    def prepare(
        self,
        tool_call_id: str,
        tool_name: str,
        args: str | Mapping[str, JSONValue],
        result: str | bytes,
        *,
        is_error: bool = False,
        oversized: OversizedDecision = False,
    ) -> PreparedOutput:
        """Check, measure, hash and summarise one output for storing; the database is not touched.

        Raises :class:`ToolOutputStoreError` for anything :meth:`store_result`
        refuses. Store the result with :meth:`store_prepared`, or with a
        transcript turn through :meth:`stage`.
        """
        return prepare_output(
            self._session_id,
            tool_call_id,
            tool_name,
            args,
            result,
            is_error=is_error,
            oversized=oversized,
            counter=self._counter,
            summaries=self._summaries,
            clock=self._clock,
        )

    def store_prepared(self, prepared: PreparedOutput) -> ToolResultMetadata:
        """Store a prepared output in a transaction of its own, publish the event, return the reference."""
        prepared = self._encoded_if_new(prepared)
        with self._store.write(lock=self._lock_name) as conn:
            reference = self._write(conn, prepared)
        self._confirm()
        self._publish(reference)
        return reference

    def stage(
        self,
        turn: TurnRecord,
        prepared: PreparedOutput,
        *,
        on_stored: Callable[[ToolResultMetadata], None] | None = None,
    ) -> StagedOutput:
        """Store a prepared output with ``turn``: its row is written in the turn's own transaction.

        So the output and the commit of its result are stored together or
        not at all. Once the turn is stored, the event is published, then
        ``on_stored`` is called with the reference; a turn that is not
        stored writes nothing and calls nothing.
        """
        staged = StagedOutput(self, self._encoded_if_new(prepared), on_stored)
        turn.attach(staged)
        return staged

    def write_staged(self, conn: Connection, prepared: PreparedOutput) -> ToolResultMetadata:
        """A staged output's row, in the transaction of the turn that stores it (``StagedOutput``)."""
        advisory_lock(conn, self._lock_name)
        return self._write(conn, prepared)

    def plan_staged(
        self, prepared: PreparedOutput
    ) -> tuple[ToolResultMetadata, Callable[[Connection], None]] | None:
        """A staged output's row decided without a read, and its writing (``None``: that needs a read)."""
        return self._plan(prepared)

    def staged_stored(self, reference: ToolResultMetadata) -> None:
        """The turn holding a staged output committed: count its writes and publish the event."""
        self._confirm()
        self._publish(reference)

    @property
    def _lock_name(self) -> str:
        # The named lock serialises the dedupe check and the next seq per session (PostgreSQL).
        return f"tool_outputs:{self._session_id}"

    def _encoded_if_new(self, prepared: PreparedOutput) -> PreparedOutput:
        """A large payload is compressed outside the write lock, and only if it is not stored yet."""
        if prepared.encoded is not None:
            return prepared
        if self._ledger is not None:  # the one writer knows what it stored: no read
            if self._ledger.has_blob(prepared.stored_hash):
                return prepared
        else:
            with self._store.read() as conn:
                if blob_exists(conn, prepared.stored_hash):
                    return prepared
        return attrs.evolve(prepared, encoded=encode_payload(prepared.data))

    def _write(self, conn: Connection, prepared: PreparedOutput) -> ToolResultMetadata:
        """The row (and the payload, when new) of ``prepared``, inside ``conn``'s write transaction."""
        digest = prepared.stored_hash
        ledger = self._ledger
        if ledger is not None and not ledger.joins(conn.get_transaction()):
            ledger = self._ledger = None  # an earlier transaction never confirmed: ask the database
        call_id = prepared.tool_call_id
        if ledger is None:
            lock_output_blob(conn, digest)  # a concurrent purge must not delete the payload under us
            state = write_state(conn, self._session_id, call_id, digest)
            known, already, seq = state.call_stored, state.blob_stored, state.next_seq
        else:
            known, already, seq = ledger.has_call(call_id), ledger.has_blob(digest), ledger.next_seq()
        existing = find_by_call(conn, self._session_id, call_id) if known else None
        if existing is not None and (existing.stored_hash, existing.tool_name, existing.is_error) == (
            digest,
            prepared.tool_name,
            prepared.is_error,
        ):
            if prepared.oversized and not existing.oversized:
                mark_oversized(conn, self._session_id, existing.seq)
                existing = attrs.evolve(existing, oversized=True)
            return attrs.evolve(existing, deduplicated=True)
        if not already:
            encoded = prepared.encoded or encode_payload(prepared.data)
            put_output_blob(conn, digest, encoded, prepared.created_at)
        row = prepared.row(seq, deduplicated=already)
        insert_output(conn, row)
        if ledger is not None:
            ledger.add(call_id, digest)
        return row

    def _plan(
        self, prepared: PreparedOutput
    ) -> tuple[ToolResultMetadata, Callable[[Connection], None]] | None:
        """The row of ``prepared`` decided from the ledger alone, and its writing; None: that needs a read.

        Only the one writer of a fresh session's outputs (``sole_writer``)
        can decide without reading, and only for a call id it has not
        stored yet; the rows count as written once the turn is kept.
        """
        ledger = self._ledger
        call_id = prepared.tool_call_id
        if ledger is None or ledger.has_call(call_id) or not ledger.joins(_PLANNED):
            return None
        digest, created_at = prepared.stored_hash, prepared.created_at
        already = ledger.has_blob(digest)
        row = prepared.row(ledger.next_seq(), deduplicated=already)
        ledger.add(call_id, digest)
        # Encoded now, as a write would: what waits is the compressed payload, not the raw one.
        encoded = None if already else prepared.encoded or encode_payload(prepared.data)

        def write(conn: Connection) -> None:
            if encoded is not None:
                put_output_blob(conn, digest, encoded, created_at)
            insert_output(conn, row)

        return row, write

    def _confirm(self) -> None:
        """The transaction of the last writes committed (the ledger counts them now)."""
        if self._ledger is not None:
            self._ledger.confirm()

    def _publish(self, reference: ToolResultMetadata) -> None:
        if self._dispatcher is None or not self._dispatcher.wants(ToolResultStored):
            return
        event = ToolResultStored(
            session_id=reference.session_id,
            call=ToolCall(id=reference.tool_call_id, name=reference.tool_name, arguments=reference.arguments),
            is_error=reference.is_error,
            handle=reference.handle,
            size_bytes=reference.size_bytes,
            oversized=reference.oversized,
            deduplicated=reference.deduplicated,
            created_at=self._clock.now(),
        )
        publish(self._dispatcher, event, logger=logger, about=f"for call {reference.tool_call_id}")

    def mark_oversized(self, tool_call_id: str) -> bool:
        """Record that the stored call was shown by handle after all; False when there is no such call."""
        call_id = check_id("tool_call_id", tool_call_id)
        with self._store.write() as conn:
            row = find_by_call(conn, self._session_id, call_id)
            if row is None:
                return False
            if not row.oversized:
                mark_oversized(conn, self._session_id, row.seq)
        return True

    # -- reading ------------------------------------------------------------------------------------

    def get_result(self, tool_call_id: str) -> StoredToolResult | None:
        """The stored call with its full payload, or ``None`` when this session has no such call."""
        call_id = check_id("tool_call_id", tool_call_id)
        with self._store.read() as conn:
            row = find_by_call(conn, self._session_id, call_id)
            if row is None:
                return None
            return StoredToolResult(metadata=row, data=fetch_blob(conn, row.stored_hash))

    def get_metadata(self, tool_call_id: str) -> ToolResultMetadata | None:
        """Everything about the stored call except its payload (which is not read)."""
        call_id = check_id("tool_call_id", tool_call_id)
        with self._store.read() as conn:
            return find_by_call(conn, self._session_id, call_id)

    def list_results(self) -> list[ToolResultMetadata]:
        """Every stored call of this session, oldest first (no payloads)."""
        with self._store.read() as conn:
            return list_outputs(conn, self._session_id)

    def get_by_handle(self, handle: str) -> StoredToolResult | None:
        """The output behind ``handle`` (first call that stored it), or ``None`` for any other string."""
        if not isinstance(handle, str) or not handle or len(handle) > MAX_ID_CHARS:  # pyright: ignore[reportUnnecessaryIsInstance]
            return None
        with self._store.read() as conn:
            row = find_by_handle(conn, self._session_id, handle)
            if row is None:
                return None
            return StoredToolResult(metadata=row, data=fetch_blob(conn, row.stored_hash))

    def extraction_source(self, handle: str) -> ExtractionSource | None:
        """The output behind ``handle`` as the extraction module reads it."""
        found = self.get_by_handle(handle)
        return None if found is None else found.extraction_source()

    def has_oversized(self) -> bool:
        """True when some output of this session was kept out of the context behind a handle."""
        with self._store.read() as conn:
            return has_oversized(conn, self._session_id)

    def next_seq(self) -> int:
        """The ``seq`` the next stored call of this session will get (0 for none stored yet)."""
        with self._store.read() as conn:
            return next_output_seq(conn, self._session_id)

    def known_call_ids(self, limit: int = 10) -> list[str]:
        """Up to ``limit`` stored tool_call_ids of this session, newest first."""
        with self._store.read() as conn:
            return known_call_ids(conn, self._session_id, max(0, limit))

    # -- removing -----------------------------------------------------------------------------------

    def purge_session(self, session_id: str | None = None) -> int:
        """Delete every stored output of ``session_id`` (default: this session); returns the calls removed.

        Payloads that no other session still uses are deleted with them.
        """
        target = self._session_id if session_id is None else check_id("session_id", session_id)
        return self._delete(target, None)

    def discard(self, results: Iterable[ToolResultMetadata]) -> int:
        """Delete these stored calls of this session (e.g. what one evaluation stored)."""
        seqs = [r.seq for r in results if r.session_id == self._session_id]
        if not seqs:
            return 0
        return self._delete(self._session_id, seqs)

    def _delete(self, session_id: str, seqs: list[int] | None) -> int:
        self._ledger = None  # payloads may go that the ledger counts as stored
        with self._store.write() as conn:
            removed, hashes = delete_outputs(conn, session_id, seqs)
            delete_orphan_blobs(conn, hashes)
        return removed
