"""The session list: every transcript session of a store with its time, prompt, turns, tokens and status.

Built to stay fast on a large store (10,000 sessions, a million commits):

- the sessions are found with a loose index scan over the unique
  ``(session_id, seq)`` index (one index seek per session, a recursive
  CTE that SQLite and PostgreSQL both run), never a scan of the commits;
- each session's first commit (``seq = 0``, also an index seek) gives its
  start time and, for runs of ``evaluate()``, the prompt name;
- turns, tokens and status are counted only for the sessions on the page.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

import attrs
from sqlalchemy import Connection, bindparam, select, text

from ..runtime.loop import PROMPT_KEY
from ..safetext import safe_repr
from ..store import Store, tables
from ._json import as_int, as_object, as_str, load_object
from .status import DEFAULT_PAUSED_RUNS, PausedRuns, RunStatus, shape_status

__all__ = [
    "SessionListing",
    "SessionSummary",
    "list_sessions",
    "prompt_label",
    "row_problem",
    "session_exists",
]

_FIRST_COMMITS = text(
    """
    WITH RECURSIVE ids(session_id) AS (
        SELECT MIN(session_id) FROM commits
        UNION ALL
        SELECT (SELECT MIN(c.session_id) FROM commits c WHERE c.session_id > ids.session_id)
        FROM ids WHERE ids.session_id IS NOT NULL
    )
    SELECT ids.session_id, f.created_at, f.metadata_json, f.blob_hash
    FROM ids LEFT JOIN commits f ON f.session_id = ids.session_id AND f.seq = 0
    WHERE ids.session_id IS NOT NULL
    """
)

_LABEL_CHARS = 80
_CHUNK = 500


@attrs.frozen
class SessionSummary:
    """One line of the session list."""

    session_id: str
    started_at: str
    prompt: str
    ended_at: str = ""
    turns: int = 0
    commits: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    status: RunStatus = "failed"
    damaged: tuple[str, ...] = ()
    """What is wrong with each of the session's commit rows that cannot be read (those are not counted)."""

    @property
    def tokens(self) -> int:
        return self.input_tokens + self.output_tokens


@attrs.frozen
class SessionListing:
    """A page of sessions, newest first, and how many sessions match in all."""

    sessions: tuple[SessionSummary, ...]
    total: int
    offset: int
    limit: int
    query: str


def prompt_label(metadata: str, system_text: str | None) -> str:
    """The prompt's name from the system commit, or the first line of the system text for older runs."""
    return as_str(load_object(metadata).get(PROMPT_KEY)) or _first_line(system_text)


def _first_line(system_text: str | None) -> str:
    if system_text is None:
        return ""
    first = next((line.strip() for line in system_text.splitlines() if line.strip()), "")
    return first if len(first) <= _LABEL_CHARS else first[: _LABEL_CHARS - 1] + "…"


def _system_texts(conn: Connection, hashes: set[str]) -> dict[str, str]:
    """The text of each system blob among ``hashes`` (few: sessions of one prompt share theirs)."""
    found: dict[str, str] = {}
    ordered = sorted(hashes)
    for start in range(0, len(ordered), 500):
        chunk = ordered[start : start + 500]
        query = select(tables.blobs.c.hash, tables.blobs.c.content).where(tables.blobs.c.hash.in_(chunk))
        for blob_hash, content in conn.execute(query):
            payload = load_object(content)
            if payload.get("role") == "system":
                found[str(blob_hash)] = as_str(payload.get("content")) or ""
    return found


def list_sessions(
    store: Store,
    *,
    query: str = "",
    offset: int = 0,
    limit: int = 50,
    paused_runs: PausedRuns = DEFAULT_PAUSED_RUNS,
) -> SessionListing:
    """Sessions newest first whose id or prompt holds ``query`` (any case), ``limit`` from ``offset``."""
    needle = query.strip().casefold()
    with store.read() as conn:
        firsts = [
            (str(s), "" if t is None else str(t), as_str(load_object(m).get(PROMPT_KEY)), str(b))
            for s, t, m, b in conn.execute(_FIRST_COMMITS)
        ]
        unnamed = {b for _, _, name, b in firsts if not name}
        systems = _system_texts(conn, unnamed) if unnamed else {}
        rows = [(s, t, name or _first_line(systems.get(b))) for s, t, name, b in firsts]
        if needle:
            rows = [r for r in rows if needle in r[0].casefold() or needle in r[2].casefold()]
        rows.sort(key=lambda r: (_sort_time(r[1]), r[0]), reverse=True)
        page = rows[offset : offset + limit]
        details: dict[str, SessionSummary] = {}
        for start in range(0, len(page), _CHUNK):  # bound the IN list (the terminal lists every session)
            chunk = [r[0] for r in page[start : start + _CHUNK]]
            details.update(_page_details(conn, chunk, paused_runs))
    sessions = tuple(
        attrs.evolve(
            details.get(s, SessionSummary(session_id=s, started_at=t, prompt=p)), started_at=t, prompt=p
        )
        for s, t, p in page
    )
    return SessionListing(sessions=sessions, total=len(rows), offset=offset, limit=limit, query=query)


def session_exists(store: Store, session_id: str) -> bool:
    """Whether the store holds a commit or a stored output of ``session_id`` (one index seek each)."""
    with store.read() as conn:
        for table in (tables.commits, tables.tool_outputs):
            query = select(table.c.session_id).where(table.c.session_id == session_id).limit(1)
            if conn.execute(query).first() is not None:
                return True
    return False


def row_problem(seq: object, token_count: object) -> str | None:
    """What is wrong with a commit row's numbers, or ``None`` (SQLite keeps any value in any column)."""
    if not isinstance(seq, int) or isinstance(seq, bool):
        return f"seq {safe_repr(seq, 60)} is not a whole number"
    if token_count is not None and (not isinstance(token_count, int) or isinstance(token_count, bool)):
        return f"token_count {safe_repr(token_count, 60)} is not a whole number"
    return None


def _sort_time(value: str) -> float:
    try:
        return datetime.fromisoformat(value).timestamp()
    except ValueError:
        return 0.0


_PAGE_ROWS = text(
    "SELECT session_id, seq, role, operation, metadata_json, created_at, blob_hash, hash, token_count "
    "FROM commits WHERE session_id IN :ids"
).bindparams(bindparam("ids", expanding=True))


def _page_details(
    conn: Connection, session_ids: Sequence[str], paused_runs: PausedRuns
) -> dict[str, SessionSummary]:
    """Turns, tokens, last time and status of each session on the page (one query over their commits)."""
    counts: dict[str, list[int]] = {s: [0, 0, 0, 0] for s in session_ids}  # commits, turns, in, out
    ended: dict[str, str] = {}
    last: dict[str, tuple[int, str, str, str]] = {}  # seq, role, blob, metadata of the last APPEND
    damaged: dict[str, list[str]] = {}
    for (
        session_id,
        seq,
        role,
        operation,
        metadata,
        created_at,
        blob_hash,
        commit_hash,
        tokens,
    ) in conn.execute(_PAGE_ROWS, {"ids": list(session_ids)}):
        key = str(session_id)
        problem = row_problem(seq, tokens)
        if problem is not None:  # shown on the session's line; the rest is counted as usual
            damaged.setdefault(key, []).append(f"commit {str(commit_hash)[:12]}: {problem}")
            continue
        tally = counts[key]
        tally[0] += 1
        ended[key] = max(ended.get(key, ""), str(created_at))
        if operation != "APPEND":
            continue
        last[key] = max(last.get(key, (-1, "", "", "")), (seq, str(role), str(blob_hash), str(metadata)))
        if role == "assistant":
            tally[1] += 1
            usage = as_object(load_object(metadata).get("usage"))
            tally[2] += as_int(usage.get("input_tokens"))
            tally[3] += as_int(usage.get("output_tokens"))
    final_blobs = {blob for _, role, blob, _ in last.values() if role == "assistant"}
    calls_in = _blobs_with_calls(conn, final_blobs)
    paused = paused_runs.paused(conn, session_ids)
    details: dict[str, SessionSummary] = {}
    for key, (commits, turns, tokens_in, tokens_out) in counts.items():
        _, role, blob, meta = last.get(key, (0, "", "", ""))
        status: RunStatus = "paused" if key in paused else shape_status(role or None, blob in calls_in, meta)
        details[key] = SessionSummary(
            session_id=key,
            started_at="",
            prompt="",
            ended_at=ended.get(key, ""),
            turns=turns,
            commits=commits,
            input_tokens=tokens_in,
            output_tokens=tokens_out,
            status=status,
            damaged=tuple(damaged.get(key, ())),
        )
    return details


def _blobs_with_calls(conn: Connection, hashes: set[str]) -> set[str]:
    if not hashes:
        return set()
    query = select(tables.blobs.c.hash, tables.blobs.c.content).where(tables.blobs.c.hash.in_(sorted(hashes)))
    return {str(h) for h, content in conn.execute(query) if load_object(content).get("tool_calls")}
