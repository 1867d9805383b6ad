"""Small dialect-aware SQL helpers shared by the row modules.

Content-addressed rows (blobs, tool definitions, tool sets) are written with
"insert unless already there". SQLite and PostgreSQL do that in one
statement (``ON CONFLICT DO NOTHING``), which is also safe against a
concurrent writer; other databases fall back to look-then-insert.

Rows go in primary-key order: on PostgreSQL an insert waits for a concurrent
transaction inserting the same key, so two writers storing the same new rows
in opposite orders would deadlock; a single order makes one simply wait.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from sqlalchemy import Connection, Executable, Table, and_, select
from sqlalchemy.dialects import postgresql, sqlite

__all__ = ["insert_ignore"]

_CACHE: dict[tuple[str, str], Executable] = {}


def _statement(dialect: str, table: Table) -> Executable | None:
    key = (dialect, table.name)
    statement = _CACHE.get(key)
    if statement is None:
        if dialect == "sqlite":
            statement = sqlite.insert(table).on_conflict_do_nothing()
        elif dialect == "postgresql":
            statement = postgresql.insert(table).on_conflict_do_nothing()
        else:
            return None
        _CACHE[key] = statement
    return statement


def insert_ignore(conn: Connection, table: Table, rows: Sequence[Mapping[str, object]]) -> None:
    """Insert rows whose primary key is not stored yet; existing rows stay untouched."""
    if not rows:
        return
    statement = _statement(conn.dialect.name, table)
    if statement is not None:
        conn.execute(statement, _in_key_order(table, rows))
        return
    insert_ignore_portable(conn, table, rows)


def _in_key_order(table: Table, rows: Sequence[Mapping[str, object]]) -> list[dict[str, object]]:
    copies = [dict(r) for r in rows]
    if len(copies) > 1:
        names = [c.name for c in table.primary_key.columns]
        # Any fixed order will do; the text of the key values is one.
        copies.sort(key=lambda r: tuple(str(r[n]) for n in names))
    return copies


def insert_ignore_portable(conn: Connection, table: Table, rows: Sequence[Mapping[str, object]]) -> None:
    """Look-then-insert, for dialects without ``ON CONFLICT``."""
    keys = list(table.primary_key.columns)
    for row in rows:
        found = conn.execute(select(*keys).where(and_(*(k == row[k.name] for k in keys)))).first()
        if found is None:
            conn.execute(table.insert(), [dict(row)])
