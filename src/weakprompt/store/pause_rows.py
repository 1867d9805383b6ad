"""The SQL of paused runs and of the run journal (``specs/APPROVAL.md``).

Both tables hold JSON text the runtime writes and reads; the store only
knows rows. ``paused_runs`` has one row per pause of a session (``seq``
counts from 1): ``status`` is ``paused`` until one resume claims it, which
sets ``resumed``, the decisions and who made them. ``run_journal`` has at
most one row per session: the turn whose tool calls are running now. The
row is written before the calls start and deleted in the transaction that
stores the turn, so a row that is still there after a crash names the
calls that may have run without their results being stored.
"""

from __future__ import annotations

import attrs
from sqlalchemy import Connection, RowMapping, and_, bindparam, delete, func, inspect, select, update

from ..errors import StoreError
from . import tables
from .prepared import PreparedStatement

__all__ = [
    "JournalRow",
    "PauseRow",
    "claim_pause",
    "clear_journal",
    "has_pause_table",
    "insert_pause",
    "latest_pause",
    "next_pause_seq",
    "paused_rows",
    "pause_history",
    "read_journal",
    "store_id",
    "write_journal",
]


@attrs.frozen
class PauseRow:
    """One row of ``paused_runs``: JSON columns kept as their text."""

    session_id: str
    seq: int
    status: str
    head_hash: str | None
    pending_json: str
    state_json: str
    created_at: str
    decisions_json: str | None = None
    decided_by: str | None = None
    resumed_at: str | None = None


@attrs.frozen
class JournalRow:
    """The row of ``run_journal`` for one session."""

    session_id: str
    head_hash: str | None
    reply_json: str | None
    calls_json: str
    created_at: str


_PAUSES = tables.paused_runs
_JOURNAL = tables.run_journal


def next_pause_seq(conn: Connection, session_id: str) -> int:
    latest = conn.execute(select(func.max(_PAUSES.c.seq)).where(_PAUSES.c.session_id == session_id)).scalar()
    return (latest if isinstance(latest, int) else 0) + 1


def insert_pause(conn: Connection, row: PauseRow) -> None:
    conn.execute(_PAUSES.insert().values(**attrs.asdict(row)))


def _row(mapping: RowMapping) -> PauseRow:
    return PauseRow(**{field.name: mapping[field.name] for field in attrs.fields(PauseRow)})


def latest_pause(conn: Connection, session_id: str) -> PauseRow | None:
    """The session's most recent pause, whatever its status."""
    query = select(_PAUSES).where(_PAUSES.c.session_id == session_id).order_by(_PAUSES.c.seq.desc()).limit(1)
    found = conn.execute(query).mappings().first()
    return _row(found) if found is not None else None


def paused_rows(conn: Connection, *, session_id: str | None = None) -> list[PauseRow]:
    """Every pause still waiting for decisions (of one session, or of all), oldest first."""
    query = select(_PAUSES).where(_PAUSES.c.status == "paused")
    if session_id is not None:
        query = query.where(_PAUSES.c.session_id == session_id)
    query = query.order_by(_PAUSES.c.created_at, _PAUSES.c.session_id, _PAUSES.c.seq)
    return [_row(found) for found in conn.execute(query).mappings()]


def pause_history(conn: Connection, *, session_id: str | None = None) -> list[PauseRow]:
    """Every pause, waiting or decided (of one session, or of all), oldest first."""
    query = select(_PAUSES)
    if session_id is not None:
        query = query.where(_PAUSES.c.session_id == session_id)
    query = query.order_by(_PAUSES.c.created_at, _PAUSES.c.session_id, _PAUSES.c.seq)
    return [_row(found) for found in conn.execute(query).mappings()]


def has_pause_table(conn: Connection) -> bool:
    """Whether the store has ``paused_runs`` (a viewer may open a store made before it)."""
    return inspect(conn).has_table(_PAUSES.name)


def store_id(conn: Connection) -> str:
    """The store's random id (made with the store): approval tokens name the store they belong to."""
    found = conn.execute(select(tables.store_identity.c.store_id)).scalars().all()
    if len(found) != 1:
        raise StoreError(
            f"the store's {tables.store_identity.name!r} table holds {len(found)} rows instead of one: "
            "the database is damaged"
        )
    return str(found[0])


def claim_pause(
    conn: Connection, session_id: str, seq: int, *, decisions_json: str, decided_by: str | None, now: str
) -> bool:
    """Mark the pause resumed with its decisions; False when it was not (or no longer) paused."""
    result = conn.execute(
        update(_PAUSES)
        .where(and_(_PAUSES.c.session_id == session_id, _PAUSES.c.seq == seq, _PAUSES.c.status == "paused"))
        .values(status="resumed", decisions_json=decisions_json, decided_by=decided_by, resumed_at=now)
    )
    return result.rowcount == 1


# The journal is written before every tool turn of a run on a file or server store, and cleared
# with the turn: prepared, as the transcript's own hot statements are (see prepared.py).
_DELETE_JOURNAL = PreparedStatement(delete(_JOURNAL).where(_JOURNAL.c.session_id == bindparam("session_id")))
_INSERT_JOURNAL = PreparedStatement(
    _JOURNAL.insert(), columns=tuple(field.name for field in attrs.fields(JournalRow))
)


def write_journal(conn: Connection, row: JournalRow) -> None:
    """Record the turn whose calls are about to run (replacing the session's previous row)."""
    _DELETE_JOURNAL.executemany(conn, [{"session_id": row.session_id}])
    _INSERT_JOURNAL.executemany(conn, [attrs.asdict(row)])


def read_journal(conn: Connection, session_id: str) -> JournalRow | None:
    found = conn.execute(select(_JOURNAL).where(_JOURNAL.c.session_id == session_id)).mappings().first()
    if found is None:
        return None
    return JournalRow(**{field.name: found[field.name] for field in attrs.fields(JournalRow)})


def clear_journal(conn: Connection, session_id: str) -> None:
    _DELETE_JOURNAL.executemany(conn, [{"session_id": session_id}])
