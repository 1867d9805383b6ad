"""Hot-path statements: compiled once per dialect, run on the driver's cursor.

``Connection.execute`` spends far longer in SQLAlchemy (cache-key lookup,
events, result wrapping) than SQLite spends on a keyed lookup or a one-row
insert: measured here, about 80 µs against 3 µs. The transcript runs a few
such statements for every commit, so those few are compiled once per dialect
by SQLAlchemy and then executed with the DBAPI cursor of the connection that
already holds the store's transaction. The SQL and the transaction are the
same; only the per-call machinery is skipped. Driver errors are re-raised
as SQLAlchemy's ``DBAPIError`` family, exactly as ``Connection.execute``
raises them, so the store's error handling does not change.

Only statements whose bound values need no type conversion beyond what the
driver does belong here (strings, integers); anything else should go
through ``Connection.execute``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

import attrs
from sqlalchemy import ClauseElement, Connection, Table
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.engine import Dialect
from sqlalchemy.exc import DBAPIError
from sqlalchemy.sql.compiler import SQLCompiler

from .sql import insert_ignore_portable

__all__ = ["PreparedInsertIgnore", "PreparedStatement", "Row"]

Row = tuple[Any, ...]
"""One result row as the driver returns it (plain values in select order)."""

_Processor = Callable[[Any], Any]


@attrs.frozen
class _Compiled:
    """One statement compiled for one dialect, with what is needed to bind its values."""

    sql: str
    positions: tuple[str, ...] | None  # None: the driver takes named parameters
    defaults: Mapping[str, object]  # values the statement itself binds (LIMIT 1, ...)
    processors: Mapping[str, _Processor]

    def bind(self, params: Mapping[str, object]) -> Any:
        """The driver's parameters for one execution: a tuple, or a dict for named styles."""
        values = {**self.defaults, **params} if self.defaults else params
        if self.processors:
            values = dict(values)
            for name, process in self.processors.items():
                if name in values:
                    values[name] = process(values[name])
        if self.positions is None:
            return values
        return tuple(values[name] for name in self.positions)


def _compile(statement: ClauseElement, dialect: Dialect, columns: Sequence[str] | None) -> _Compiled:
    compiled = statement.compile(dialect=dialect, column_keys=list(columns) if columns is not None else None)
    if not isinstance(compiled, SQLCompiler):  # pragma: no cover - DDL is never prepared
        raise TypeError(f"not a DML/select statement: {statement!r}")
    required = {bind.key for bind in compiled.binds.values() if bind.required}
    placeholders = dict.fromkeys(required)
    constructed = compiled.construct_params(placeholders)
    defaults = {name: value for name, value in constructed.items() if name not in required}
    processors: dict[str, _Processor] = {}
    for name in constructed:
        bind = compiled.binds.get(name)
        process = None if bind is None else bind.type.bind_processor(dialect)
        if process is not None:
            processors[name] = process
    positions = tuple(compiled.positiontup or ()) if compiled.positional else None
    return _Compiled(sql=compiled.string, positions=positions, defaults=defaults, processors=processors)


class PreparedStatement:
    """A statement (or one per dialect, from ``build``) run straight on the driver's cursor.

    ``columns`` names the columns an INSERT sets (every row must give those
    keys). Compiled lazily, once per dialect, and shared by every store.
    """

    def __init__(
        self,
        statement: ClauseElement | Callable[[str], ClauseElement],
        *,
        columns: Sequence[str] | None = None,
    ) -> None:
        self._statement = statement
        self._columns = tuple(columns) if columns is not None else None
        self._by_dialect: dict[str, _Compiled] = {}

    def _for(self, conn: Connection) -> _Compiled:
        dialect = conn.dialect
        key = f"{dialect.name}+{dialect.driver}"
        compiled = self._by_dialect.get(key)
        if compiled is None:
            statement = self._statement
            if not isinstance(statement, ClauseElement):
                statement = statement(dialect.name)
            compiled = _compile(statement, dialect, self._columns)
            self._by_dialect[key] = compiled
        return compiled

    def execute(self, conn: Connection, params: Mapping[str, object]) -> None:
        """Run once with ``params``; no result is read."""
        compiled = self._for(conn)
        bound = compiled.bind(params)
        cursor = conn.connection.cursor()
        try:
            cursor.execute(compiled.sql, bound)
        except Exception as exc:
            raise _wrapped(conn, compiled.sql, exc) from exc
        finally:
            cursor.close()

    def executemany(self, conn: Connection, rows: Sequence[Mapping[str, object]]) -> None:
        """Run once per row in one driver call (nothing happens for no rows)."""
        if not rows:
            return
        compiled = self._for(conn)
        bound = [compiled.bind(row) for row in rows]
        cursor = conn.connection.cursor()
        try:
            cursor.executemany(compiled.sql, bound)
        except Exception as exc:
            raise _wrapped(conn, compiled.sql, exc) from exc
        finally:
            cursor.close()

    def all(self, conn: Connection, params: Mapping[str, object]) -> list[Row]:
        """Every result row."""
        compiled = self._for(conn)
        bound = compiled.bind(params)
        cursor = conn.connection.cursor()
        try:
            cursor.execute(compiled.sql, bound)
            return [tuple(row) for row in cursor.fetchall()]
        except Exception as exc:
            raise _wrapped(conn, compiled.sql, exc) from exc
        finally:
            cursor.close()

    def first(self, conn: Connection, params: Mapping[str, object]) -> Row | None:
        """The first result row, or None."""
        rows = self.all(conn, params)
        return rows[0] if rows else None


def _wrapped(conn: Connection, sql: str, exc: Exception) -> BaseException:
    """The exception ``Connection.execute`` would have raised for this driver error."""
    base: type[Exception] = conn.dialect.loaded_dbapi.Error
    if not isinstance(exc, base):
        return exc
    return DBAPIError.instance(sql, None, exc, base, dialect=conn.dialect)


def _insert_ignore(table: Table) -> Callable[[str], ClauseElement]:
    def build(dialect: str) -> ClauseElement:
        if dialect == "sqlite":
            return sqlite.insert(table).on_conflict_do_nothing()
        return postgresql.insert(table).on_conflict_do_nothing()

    return build


class PreparedInsertIgnore:
    """Insert rows of ``columns`` unless their primary key is stored (content-addressed rows).

    One ``ON CONFLICT DO NOTHING`` statement on SQLite and PostgreSQL, rows in
    primary-key order (see :mod:`weakprompt.store.sql` for why); other
    databases fall back to look-then-insert.
    """

    def __init__(self, table: Table, columns: Sequence[str]) -> None:
        self._table = table
        self._keys = tuple(c.name for c in table.primary_key.columns)
        self._statement = PreparedStatement(_insert_ignore(table), columns=columns)

    def executemany(self, conn: Connection, rows: Sequence[Mapping[str, object]]) -> None:
        if not rows:
            return
        if conn.dialect.name not in ("sqlite", "postgresql"):
            insert_ignore_portable(conn, self._table, rows)
            return
        if len(rows) > 1:
            keys = self._keys
            rows = sorted(rows, key=lambda r: tuple(str(r[k]) for k in keys))
        self._statement.executemany(conn, rows)
