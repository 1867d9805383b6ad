"""One session as the inspector shows it: turns in order, tool calls with their results, edits as
diffs with their provenance, the tool set of each turn, stored outputs and extractions, usage.

Reading stays proportional to what is shown: one pass over the session's
commit rows (no contents), then the contents, tool sets and stored-output
rows of the page's turns only.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Iterable, Sequence

import attrs
from sqlalchemy import Connection, bindparam, select, text

from ..jsontypes import JSONObject, JSONValue
from ..lazy import lazy_exports
from ..runtime.cache_prefix import CACHE_BUST_KEY
from ..runtime.child_runs import CHILD_SESSION_KEY
from ..runtime.pause_records import ApprovalNote, CallDecision, PauseRecord, approval_note, read_pauses
from ..runtime.results.extraction import EXTRACTION_KEY
from ..store import Store, tables
from ..transcript.compaction import COMPACTION_KEY, CompactionRecord
from ..transcript.lazy import STORED_OUTPUT_KEY, StoredOutputRef
from ..transcript.provenance import (
    EDITED_FROM,
    HOOK_ERROR,
    REDACTED_FROM,
    SUMMARIZATION_ERROR,
    SUMMARIZED_FROM,
    SUMMARIZER,
    TRIGGERED_BY,
)
from ..transcript.shaped import TOOL_OUTPUT_NAME
from ..transcript.tool_tracking import ToolSetChange
from ._json import as_int, as_object, as_str, load_object, pretty
from .charts import UsagePoint
from .diffs import DiffLine, line_diff
from .parts import PartView, part_views
from .sessions import prompt_label, row_problem
from .status import DEFAULT_PAUSED_RUNS, PausedRuns, RunStatus, shape_status
from .toolsets import compare_sets, set_members

__all__ = [
    "CallView",
    "CommitView",
    "DamagedRow",
    "EditView",
    "ExtractionView",
    "Provenance",
    "SessionView",
    "TraceRef",
    "TurnView",
    "UnknownSession",
    "load_session",
    "locate_commit",
]


class UnknownSession(LookupError):
    """The store has no commit for this session id."""


@attrs.frozen
class DamagedRow:
    """A commit row that cannot be placed in the session (e.g. a ``seq`` that is not a number).

    It is left out of the turns and listed on its own, so the rest of the
    session is still shown.
    """

    hash: str
    role: str
    problem: str


@attrs.frozen
class Provenance:
    """How a version of a tool result came to be (the transcript's provenance keys)."""

    triggered_by: str | None = None
    summarized_from: str | None = None
    edited_from: str | None = None
    redacted_from: str | None = None
    summarizer: str | None = None
    summarization_error: str | None = None
    hook_error: str | None = None

    @classmethod
    def of(cls, metadata: JSONObject) -> Provenance:
        return cls(
            triggered_by=as_str(metadata.get(TRIGGERED_BY)),
            summarized_from=as_str(metadata.get(SUMMARIZED_FROM)),
            edited_from=as_str(metadata.get(EDITED_FROM)),
            redacted_from=as_str(metadata.get(REDACTED_FROM)),
            summarizer=as_str(metadata.get(SUMMARIZER)),
            summarization_error=as_str(metadata.get(SUMMARIZATION_ERROR)),
            hook_error=as_str(metadata.get(HOOK_ERROR)),
        )


@attrs.frozen
class EditView:
    """One change of a result: a hook's rewrite at commit time, or a later EDIT commit."""

    commit_hash: str
    seq: int
    created_at: str
    kind: str  # "hook" (the committed text differs from the tool's output) or "edit" (an EDIT commit)
    before_hash: str | None
    provenance: Provenance
    diff: tuple[DiffLine, ...]


@attrs.frozen
class ExtractionView:
    """One ``tool_output`` call: which stored output, what was asked, which strategy answered."""

    handle: str
    request: str
    mode: str
    strategy: str
    fallback_reason: str | None
    model_calls: int | None
    output_seq: int | None


@attrs.frozen
class TraceRef:
    trace_id: str
    span_id: str | None


@attrs.frozen
class CommitView:
    hash: str
    seq: int
    role: str
    content: str
    created_at: str
    token_count: int
    is_error: bool = False
    edits: tuple[EditView, ...] = ()
    stored_output: StoredOutputRef | None = None
    """The stored output the commit refers to (the record the transcript keeps of it)."""
    stored_output_seq: int | None = None
    """The stored row of that output, for a link (``None`` when the row is gone)."""
    extraction: ExtractionView | None = None
    trace: TraceRef | None = None
    input_tokens: int = 0
    output_tokens: int = 0
    decision: ApprovalNote | None = None
    child_session: str | None = None
    """The session of the agent this call ran as a tool (``specs/SUBAGENTS.md``)."""
    cached_input_tokens: int = 0
    cache_write_tokens: int = 0
    cache_bust: CacheBustNote | None = None
    parts: tuple[PartView, ...] = ()
    """Images, documents and reasoning of the (newest) message, shown by ``_commit.html``'s ``parts``."""
    compaction: CompactionRecord | None = None
    """The compaction this commit records: its tier and the commits it covers (``specs/COMPACTION.md``)."""

    @property
    def cache_hit_rate(self) -> float | None:
        """Cached input / input of this reply's request (``None``: no input counted)."""
        return hit_rate(self.cached_input_tokens, self.input_tokens)


@attrs.frozen
class CacheBustNote:
    """What busted the prompt cache for the request a reply answered (its commit's ``cache_bust``)."""

    kind: str
    cause: str
    name: str
    old_hash: str
    new_hash: str
    previous_session: str | None = None


def cache_bust_note(metadata: JSONObject) -> CacheBustNote | None:
    """The reply's recorded bust, or ``None`` (none recorded, or not readable as one)."""
    recorded = as_object(metadata.get(CACHE_BUST_KEY))
    kind, cause, name = (as_str(recorded.get(k)) for k in ("kind", "cause", "name"))
    if kind is None or cause is None or name is None:
        return None
    return CacheBustNote(
        kind=kind,
        cause=cause,
        name=name,
        old_hash=as_str(recorded.get("old_hash")) or "-",
        new_hash=as_str(recorded.get("new_hash")) or "-",
        previous_session=as_str(recorded.get("previous_session")),
    )


@attrs.frozen
class CallView:
    id: str
    name: str
    arguments: str
    result: CommitView | None
    waiting: CallDecision | None = None
    """The call waits in the session's open pause (it has no result yet)."""


@attrs.frozen
class TurnView:
    number: int
    lead: tuple[CommitView, ...]
    reply: CommitView | None
    calls: tuple[CallView, ...]
    unanswered: tuple[CommitView, ...]  # results whose call id the reply does not name
    tool_set: ToolSetChange | None


@attrs.frozen
class SessionView:
    session_id: str
    prompt: str
    status: RunStatus
    started_at: str
    ended_at: str
    commits: int
    total_turns: int
    input_tokens: int
    output_tokens: int
    page: int
    pages: int
    per_page: int
    turns: tuple[TurnView, ...]
    usage: tuple[UsagePoint, ...]
    outputs: int
    pauses: tuple[PauseRecord, ...] = ()
    damaged: tuple[DamagedRow, ...] = ()
    cached_input_tokens: int = 0
    cache_write_tokens: int = 0

    @property
    def cache_hit_rate(self) -> float | None:
        """Cached input / input over the whole session (``None``: no input counted)."""
        return hit_rate(self.cached_input_tokens, self.input_tokens)


def hit_rate(cached: int, input_tokens: int) -> float | None:
    """The share of input tokens read from the provider's prompt cache, or ``None`` with no input."""
    if input_tokens <= 0:
        return None
    return min(max(cached, 0), input_tokens) / input_tokens


@attrs.frozen
class _Row:
    hash: str
    seq: int
    role: str
    operation: str
    edit_target: str | None
    blob_hash: str
    metadata: str
    created_at: str
    token_count: int


@attrs.define
class _Group:
    lead: list[_Row] = attrs.Factory(list[_Row])
    reply: _Row | None = None
    results: list[_Row] = attrs.Factory(list[_Row])


_ROWS = text(
    "SELECT hash, seq, role, operation, edit_target, blob_hash, metadata_json, created_at, token_count "
    "FROM commits WHERE session_id = :session ORDER BY seq"
)
_LINKS = text(
    "SELECT ct.commit_hash, ct.tool_set_hash FROM commit_tools ct "
    "JOIN commits c ON c.hash = ct.commit_hash WHERE c.session_id = :session"
)
_OUTPUTS_BY_CALL = text(
    "SELECT tool_call_id, seq FROM tool_outputs WHERE session_id = :session AND tool_call_id IN :ids"
).bindparams(bindparam("ids", expanding=True))
_OUTPUTS_BY_HANDLE = text(
    "SELECT handle, seq FROM tool_outputs WHERE session_id = :session AND handle IN :ids"
).bindparams(bindparam("ids", expanding=True))
_OUTPUT_COUNT = text("SELECT COUNT(*) FROM tool_outputs WHERE session_id = :session")

_HEADER = re.compile(
    r"^(?:ABSTRACT FROM TOOL OUTPUT|TOOL_OUTPUT FAILED FOR) .* WITH HANDLE (\S+), STRATEGY:([^:\n]*):"
)


def _read_rows(conn: Connection, session_id: str) -> tuple[list[_Row], list[DamagedRow]]:
    """The session's commit rows in order, and the rows whose numbers cannot be read."""
    rows: list[_Row] = []
    damaged: list[DamagedRow] = []
    for h, s, r, o, t, b, m, c, n in conn.execute(_ROWS, {"session": session_id}):
        problem = row_problem(s, n)
        if problem is not None:
            damaged.append(DamagedRow(str(h), str(r), problem))
            continue
        rows.append(
            _Row(str(h), s, str(r), str(o), None if t is None else str(t), str(b), str(m), str(c), n or 0)
        )
    return rows, damaged


def _group(rows: Iterable[_Row]) -> tuple[list[_Group], dict[str, list[_Row]]]:
    """Turns (messages that lead to a reply, the reply, its results) and the edits of each commit."""
    groups: list[_Group] = [_Group()]
    edits: dict[str, list[_Row]] = {}
    for row in rows:
        if row.operation != "APPEND":  # an EDIT always names its target (the original APPEND)
            edits.setdefault(row.edit_target or "", []).append(row)
            continue
        current = groups[-1]
        if row.role == "assistant":
            if current.reply is not None or current.results:
                groups.append(_Group())
            groups[-1].reply = row
        elif row.role == "tool":
            current.results.append(row)
        else:
            if current.reply is not None or current.results:
                groups.append(_Group())
            groups[-1].lead.append(row)
    return groups, edits


def _blobs(conn: Connection, hashes: Iterable[str]) -> dict[str, JSONObject]:
    ordered = sorted(set(hashes))
    found: dict[str, JSONObject] = {}
    for start in range(0, len(ordered), 500):
        query = select(tables.blobs.c.hash, tables.blobs.c.content).where(
            tables.blobs.c.hash.in_(ordered[start : start + 500])
        )
        found.update((str(h), load_object(c)) for h, c in conn.execute(query))
    return found


@attrs.frozen
class _Counts:
    """A reply commit's recorded usage (zero where a count is missing or not a number)."""

    input_tokens: int = 0
    output_tokens: int = 0
    cached_input_tokens: int = 0
    cache_write_tokens: int = 0


def _usage(metadata: JSONObject) -> _Counts:
    usage = as_object(metadata.get("usage"))
    return _Counts(
        input_tokens=as_int(usage.get("input_tokens")),
        output_tokens=as_int(usage.get("output_tokens")),
        cached_input_tokens=as_int(usage.get("cached_input_tokens")),
        cache_write_tokens=as_int(usage.get("cache_write_tokens")),
    )


def _point(number: int, counts: _Counts, per_page: int) -> UsagePoint:
    return UsagePoint(
        number,
        counts.input_tokens,
        counts.output_tokens,
        href=_turn_href(number, per_page),
        cached_input_tokens=counts.cached_input_tokens,
    )


def find_trace(metadata: JSONObject) -> TraceRef | None:
    """A trace id (and span id) stored with a commit, at the top level or under a tracing key."""
    for place in (metadata, *(as_object(metadata.get(k)) for k in ("otel", "trace", "tracing", "telemetry"))):
        trace_id = as_str(place.get("trace_id"))
        if trace_id:
            return TraceRef(trace_id=trace_id, span_id=as_str(place.get("span_id")))
    return None


def locate_commit(store: Store, session_id: str, commit_hash: str, *, per_page: int = 50) -> str | None:
    """The session page and anchor showing ``commit_hash`` (an edit: where its original is), or ``None``."""
    with store.read() as conn:
        rows, _ = _read_rows(conn, session_id)
    groups, _ = _group(rows)
    target = next((r.edit_target or r.hash for r in rows if r.hash == commit_hash), None)
    for number, group in enumerate(groups, start=1):
        members = (*group.lead, *([group.reply] if group.reply else []), *group.results)
        if any(r.hash == target for r in members):
            return _turn_href(number, per_page)
    return None


def load_session(
    store: Store,
    session_id: str,
    *,
    page: int = 1,
    per_page: int = 50,
    paused_runs: PausedRuns = DEFAULT_PAUSED_RUNS,
) -> SessionView:
    """The session's turns on ``page`` (1-based, ``per_page`` turns each) and its overview.

    Raises :class:`UnknownSession` when the store has no commit for ``session_id``.
    """
    with store.read() as conn:
        rows, damaged = _read_rows(conn, session_id)
        if not rows and not damaged:
            raise UnknownSession(session_id)
        groups, edits = _group(rows)
        pages = max(1, -(-len(groups) // per_page))
        page = min(max(page, 1), pages)
        start = (page - 1) * per_page
        shown = groups[start : start + per_page]
        counts = [
            (number + 1, _usage(load_object(g.reply.metadata)))
            for number, g in enumerate(groups)
            if g.reply is not None
        ]
        usage = tuple(_point(number, c, per_page) for number, c in counts)
        links = {str(c): str(s) for c, s in conn.execute(_LINKS, {"session": session_id})}
        tool_sets = _tool_sets(conn, groups, start, len(shown), links)
        pauses = read_pauses(conn, session_id)
        waiting = {call.call_id: call for pause in pauses if pause.paused for call in pause.waiting}
        builder = _Builder(conn, session_id, shown, edits, waiting)
        turns = tuple(
            builder.turn(start + index + 1, group, tool_sets[index]) for index, group in enumerate(shown)
        )
        first = rows[0] if rows else None
        system_text = None
        if first is not None and first.role == "system":
            system_text = as_str(builder.blob(first.blob_hash).get("content"))
        last = next((r for r in reversed(rows) if r.operation == "APPEND"), None)
        last_calls = last is not None and bool(
            _blobs(conn, [last.blob_hash]).get(last.blob_hash, {}).get("tool_calls")
        )
        paused = session_id in paused_runs.paused(conn, [session_id])
        outputs = int(conn.execute(_OUTPUT_COUNT, {"session": session_id}).scalar_one())
    return SessionView(
        session_id=session_id,
        prompt=prompt_label(first.metadata if first else "", system_text),
        status="paused"
        if paused
        else shape_status(
            None if last is None else last.role, last_calls, "" if last is None else last.metadata
        ),
        started_at=first.created_at if first else "",
        ended_at=max((r.created_at for r in rows), default=""),
        commits=len(rows) + len(damaged),
        total_turns=len(groups),
        input_tokens=sum(p.input_tokens for p in usage),
        output_tokens=sum(p.output_tokens for p in usage),
        cached_input_tokens=sum(c.cached_input_tokens for _, c in counts),
        cache_write_tokens=sum(c.cache_write_tokens for _, c in counts),
        page=page,
        pages=pages,
        per_page=per_page,
        turns=turns,
        usage=usage,
        outputs=outputs,
        pauses=pauses,
        damaged=tuple(damaged),
    )


def _turn_href(number: int, per_page: int) -> str:
    return f"?page={(number - 1) // per_page + 1}#turn-{number}"


def _tool_sets(
    conn: Connection, groups: Sequence[_Group], start: int, count: int, links: dict[str, str]
) -> list[ToolSetChange | None]:
    """The set linked to each shown turn's reply, compared with the set of the turn before it."""

    def linked(group: _Group) -> tuple[str, str] | None:
        """The reply's commit hash and its set's hash, when it has a set."""
        if group.reply is None or group.reply.hash not in links:
            return None
        return group.reply.hash, links[group.reply.hash]

    previous: tuple[str, str] | None = None
    for group in groups[:start]:
        previous = linked(group) or previous
    wanted = [linked(g) for g in groups[start : start + count]]
    members = set_members(conn, {link[1] for link in (*wanted, previous) if link is not None})
    changes: list[ToolSetChange | None] = []
    for link in wanted:
        if link is None:
            changes.append(None)
            continue
        commit_hash, set_hash = link
        before = (previous[0], members.get(previous[1], ())) if previous is not None else None
        changes.append(compare_sets(commit_hash, set_hash, members.get(set_hash, ()), before))
        previous = link
    return changes


class _Builder:
    """Reads what the shown turns need in a few batched queries, then builds their views."""

    def __init__(
        self,
        conn: Connection,
        session_id: str,
        groups: Sequence[_Group],
        edits: dict[str, list[_Row]],
        waiting: dict[str, CallDecision],
    ):
        self._edits = edits
        self._waiting = waiting
        shown = [r for g in groups for r in (*g.lead, *([g.reply] if g.reply else []), *g.results)]
        versions = [e for r in shown for e in edits.get(r.hash, [])]
        hashes = {r.blob_hash for r in (*shown, *versions)}
        for row in (*shown, *versions):
            metadata = load_object(row.metadata)
            for key in (EDITED_FROM, SUMMARIZED_FROM):
                original = as_str(metadata.get(key))
                if original:
                    hashes.add(original)
        self._blobs = _blobs(conn, hashes)
        call_ids: set[str] = set()
        handles: set[str] = set()
        for group in groups:
            for row in group.results:
                call_id = as_str(self.blob(row.blob_hash).get("tool_call_id"))
                if call_id and STORED_OUTPUT_KEY in load_object(row.metadata):
                    call_ids.add(call_id)
            if group.reply is not None:
                for call in self._calls(group.reply):
                    if call[1] == TOOL_OUTPUT_NAME:
                        handle = as_str(load_object(call[2]).get("handle"))
                        if handle:
                            handles.add(handle)
        self._by_call: dict[str, int] = {}
        if call_ids:
            for call_id, seq in conn.execute(
                _OUTPUTS_BY_CALL, {"session": session_id, "ids": sorted(call_ids)}
            ):
                self._by_call[str(call_id)] = max(int(seq), self._by_call.get(str(call_id), -1))
        self._by_handle: dict[str, int] = {}
        if handles:
            for handle, seq in conn.execute(
                _OUTPUTS_BY_HANDLE, {"session": session_id, "ids": sorted(handles)}
            ):
                key = str(handle)
                self._by_handle[key] = min(int(seq), self._by_handle.get(key, int(seq)))

    def blob(self, blob_hash: str) -> JSONObject:
        return self._blobs.get(blob_hash, {})

    def _calls(self, reply: _Row) -> list[tuple[str, str, str | JSONValue]]:
        calls: list[tuple[str, str, str | JSONValue]] = []
        raw = self.blob(reply.blob_hash).get("tool_calls")
        if isinstance(raw, list):
            for item in raw:
                call = as_object(item)
                calls.append((str(call.get("id", "")), str(call.get("name", "")), call.get("arguments", "")))
        return calls

    def turn(self, number: int, group: _Group, tool_set: ToolSetChange | None) -> TurnView:
        reply = self.commit(group.reply) if group.reply is not None else None
        results = {as_str(self.blob(r.blob_hash).get("tool_call_id")) or "": r for r in group.results}
        calls: list[CallView] = []
        answered: set[str] = set()
        if group.reply is not None:
            for call_id, name, arguments in self._calls(group.reply):
                row = results.get(call_id)
                if row is not None:
                    answered.add(call_id)
                extraction = self._extraction(arguments) if name == TOOL_OUTPUT_NAME else None
                calls.append(
                    CallView(
                        id=call_id,
                        name=name,
                        arguments=pretty(arguments if isinstance(arguments, (str, dict)) else ""),
                        result=None if row is None else self.commit(row, extraction=extraction),
                        waiting=self._waiting.get(call_id) if row is None else None,
                    )
                )
        unanswered = tuple(self.commit(r) for key, r in results.items() if key not in answered)
        return TurnView(
            number=number,
            lead=tuple(self.commit(r) for r in group.lead),
            reply=reply,
            calls=tuple(calls),
            unanswered=unanswered,
            tool_set=tool_set,
        )

    def _extraction(self, arguments: str | JSONValue) -> ExtractionView:
        decoded = load_object(arguments) if isinstance(arguments, str) else as_object(arguments)
        handle = as_str(decoded.get("handle")) or ""
        return ExtractionView(
            handle=handle,
            request=as_str(decoded.get("extract")) or "",
            mode=as_str(decoded.get("mode")) or "auto",
            strategy="",
            fallback_reason=None,
            model_calls=None,
            output_seq=self._by_handle.get(handle),
        )

    def commit(self, row: _Row, *, extraction: ExtractionView | None = None) -> CommitView:
        payload = self.blob(row.blob_hash)
        metadata = load_object(row.metadata)
        versions = [row, *self._edits.get(row.hash, [])]
        edit_views: list[EditView] = []
        hook = self._hook_edit(row, metadata, payload)
        if hook is not None:
            edit_views.append(hook)
        for before, after in itertools.pairwise(versions):
            edit_views.append(self._edit(before, after))
        newest = versions[-1]
        shown = self.blob(newest.blob_hash) if newest is not row else payload
        shown_metadata = load_object(newest.metadata) if newest is not row else metadata
        counts = _usage(metadata)
        stored = self._stored(metadata)
        if extraction is not None:
            extraction = self._with_outcome(extraction, shown, shown_metadata)
        return CommitView(
            hash=row.hash,
            seq=row.seq,
            role=row.role,
            content=as_str(shown.get("content")) or "",
            created_at=row.created_at,
            token_count=newest.token_count,
            is_error=shown.get("is_error") is True,
            edits=tuple(edit_views),
            stored_output=stored,
            stored_output_seq=self._by_call.get(stored.tool_call_id) if stored is not None else None,
            extraction=extraction,
            trace=find_trace(metadata),
            input_tokens=counts.input_tokens,
            output_tokens=counts.output_tokens,
            decision=approval_note(metadata),
            child_session=as_str(metadata.get(CHILD_SESSION_KEY)),
            cached_input_tokens=counts.cached_input_tokens,
            cache_write_tokens=counts.cache_write_tokens,
            cache_bust=cache_bust_note(metadata),
            parts=part_views(shown),
            compaction=CompactionRecord.from_json(metadata.get(COMPACTION_KEY)),
        )

    def _with_outcome(
        self, view: ExtractionView, payload: JSONObject, metadata: JSONObject
    ) -> ExtractionView:
        outcome = as_object(metadata.get(EXTRACTION_KEY))
        strategy = as_str(outcome.get("strategy"))
        handle = view.handle
        if strategy is None:  # a commit from before the outcome was kept: the reply header names it
            match = _HEADER.match(as_str(payload.get("content")) or "")
            strategy = match.group(2) if match else "unknown"
            handle = handle or (match.group(1) if match else "")
        calls = outcome.get("model_calls")
        return attrs.evolve(
            view,
            handle=handle,
            strategy=strategy,
            fallback_reason=as_str(outcome.get("fallback_reason")),
            model_calls=calls if isinstance(calls, int) else None,
            output_seq=view.output_seq if view.output_seq is not None else self._by_handle.get(handle),
        )

    def _hook_edit(self, row: _Row, metadata: JSONObject, payload: JSONObject) -> EditView | None:
        original = as_str(metadata.get(SUMMARIZED_FROM)) or as_str(metadata.get(EDITED_FROM))
        if row.operation != "APPEND" or not original:
            return None
        before = as_str(self.blob(original).get("content"))
        after = as_str(payload.get("content")) or ""
        diff = line_diff(before, after) if before is not None else (DiffLine("note", "original not found"),)
        return EditView(row.hash, row.seq, row.created_at, "hook", original, Provenance.of(metadata), diff)

    def _edit(self, before: _Row, after: _Row) -> EditView:
        old = as_str(self.blob(before.blob_hash).get("content")) or ""
        new = as_str(self.blob(after.blob_hash).get("content")) or ""
        metadata = load_object(after.metadata)
        return EditView(
            after.hash,
            after.seq,
            after.created_at,
            "edit",
            before.hash,
            Provenance.of(metadata),
            line_diff(old, new),
        )

    def _stored(self, metadata: JSONObject) -> StoredOutputRef | None:
        """The commit's stored-output reference, read leniently: a damaged one is still shown."""
        ref = as_object(metadata.get(STORED_OUTPUT_KEY))
        if not ref:
            return None
        return StoredOutputRef(
            tool_call_id=as_str(ref.get("tool_call_id")) or "",
            tool_name=as_str(ref.get("tool_name")) or "",
            handle=as_str(ref.get("handle")) or "",
            stored_hash=as_str(ref.get("stored_hash")) or "",
            size_bytes=as_int(ref.get("size_bytes")),
            lines=as_int(ref.get("lines")),
            tokens=as_int(ref.get("tokens")),
            summary=as_str(ref.get("summary")) or "",
            preview=as_str(ref.get("preview")) or "",
            is_error=ref.get("is_error") is True,
            oversized=ref.get("oversized") is True,
        )


# ``StoredOutputView`` repeated the transcript's ``StoredOutputRef`` field by field; a commit view
# now holds that record (``stored_output``) and the row's seq beside it. The old name warns.
__getattr__, __dir__ = lazy_exports(
    __name__, {}, __all__, renamed={"StoredOutputView": "weakprompt.transcript.lazy.StoredOutputRef"}
)
