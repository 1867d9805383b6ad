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

import operator
from collections.abc import Callable, Mapping, Sequence
from typing import Any, NoReturn, cast

import attrs
from sqlalchemy import ClauseElement, Connection, Table
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.engine import Dialect
from sqlalchemy.exc import DBAPIError
from sqlalchemy.sql.compiler import SQLCompiler

from ..errors import StoreError
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

    @property
    def _in_order(self) -> Callable[[Mapping[str, object]], tuple[object, ...]]:
        names = self.positions or ()
        if len(names) == 1:
            name = names[0]
            return lambda values: (values[name],)
        if not names:
            return lambda values: ()
        return cast("Callable[[Mapping[str, object]], tuple[object, ...]]", operator.itemgetter(*names))

    def binder(self) -> Callable[[Mapping[str, object]], Any]:
        """A function from named values to the driver's parameters (a tuple, or a dict for named styles)."""
        defaults, processors = self.defaults, self.processors
        in_order = None if self.positions is None else self._in_order

        def bind(params: Mapping[str, object]) -> Any:
            values = {**defaults, **params} if defaults else params
            if processors:
                values = dict(values)
                for name, process in processors.items():
                    if name in values:
                        values[name] = process(values[name])
            return values if in_order is None else in_order(values)

        return bind


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
        self._by_dialect: dict[str, tuple[str, Callable[[Mapping[str, object]], Any]]] = {}
        self._last: tuple[Dialect, str, Callable[[Mapping[str, object]], Any]] | None = None

    def _for(self, conn: Connection) -> tuple[str, Callable[[Mapping[str, object]], Any]]:
        """SQL text and parameter binder for ``conn``'s dialect (the last one used is kept at hand)."""
        dialect = conn.dialect
        last = self._last
        if last is not None and last[0] is dialect:
            return last[1], last[2]
        key = f"{dialect.name}+{dialect.driver}"
        found = self._by_dialect.get(key)
        if found is None:
            statement = self._statement
            if not isinstance(statement, ClauseElement):
                statement = statement(dialect.name)
            compiled = _compile(statement, dialect, self._columns)
            found = (compiled.sql, compiled.binder())
            self._by_dialect[key] = found
        self._last = (dialect, *found)
        return found

    def executemany(self, conn: Connection, rows: Sequence[Mapping[str, object]]) -> None:
        """Run once per row in one driver call (nothing happens for no rows)."""
        if not rows:
            return
        sql, bind = self._for(conn)
        bound = [bind(row) for row in rows]
        try:
            _cursor(conn).executemany(sql, bound)
        except Exception as exc:
            _raise_wrapped(conn, sql, exc)

    def all(self, conn: Connection, params: Mapping[str, object]) -> list[Row]:
        """Every result row."""
        sql, bind = self._for(conn)
        try:
            cursor = _cursor(conn)
            cursor.execute(sql, bind(params))
            return list(cursor.fetchall())
        except Exception as exc:
            _raise_wrapped(conn, sql, exc)

    def first(self, conn: Connection, params: Mapping[str, object]) -> Row | None:
        """The first result row, or None."""
        rows = self.all(conn, params)
        return rows[0] if rows else None


_CURSOR = "weakprompt.prepared.cursor"


def _cursor(conn: Connection) -> Any:
    """The driver cursor prepared statements run on: one per driver connection, kept in its pool record.

    Every statement here either returns no rows or has them all fetched before
    the next one runs, so one cursor serves them all. A new cursor for each
    would cost its creation, and SQLite keeps a weak reference to every
    cursor a connection ever made until it sweeps them (every 200 cursors).
    """
    fairy = conn.connection
    driver = fairy.dbapi_connection
    info = fairy.info
    kept: tuple[object, Any] | None = info.get(_CURSOR)
    if kept is not None and kept[0] is driver:
        return kept[1]
    if driver is None:  # pragma: no cover - a checked-out connection always has one
        raise StoreError("the store's connection has no database connection")
    cursor = driver.cursor()
    info[_CURSOR] = (driver, cursor)
    return cursor


def _raise_wrapped(conn: Connection, sql: str, exc: Exception) -> NoReturn:
    """Raise what ``Connection.execute`` would have raised for this error (driver errors wrapped)."""
    if isinstance(exc, UnicodeEncodeError):
        # A lone surrogate in a value bound to a plain-text column: the driver cannot send it.
        raise StoreError(
            f"cannot store text with a lone surrogate ({exc.object[exc.start : exc.end]!r} at index "
            f"{exc.start}) in a plain-text column; JSON columns escape it, see weakprompt.canonical"
        ) from exc
    base: type[Exception] = conn.dialect.loaded_dbapi.Error
    if not isinstance(exc, base):
        raise exc
    raise DBAPIError.instance(sql, None, exc, base, dialect=conn.dialect) from exc


def _insert_ignore(table: Table) -> Callable[[str], ClauseElement]:
    def build(dialect: str) -> ClauseElement:
        if dialect == "sqlite":
            return sqlite.insert(table).on_conflict_do_nothing()
        return postgresql.insert(table).on_conflict_do_nothing()

    return build


class PreparedInsertIgnore:
    """Insert rows of ``columns`` unless their primary key is stored (content-addressed rows).

    One ``ON CONFLICT DO NOTHING`` statement on SQLite and PostgreSQL; on
    PostgreSQL the rows go in primary-key order (see :mod:`weakprompt.store.sql`
    for why; SQLite takes one lock for the whole write, so there the order
    does not matter). Other databases fall back to look-then-insert.
    """

    def __init__(self, table: Table, columns: Sequence[str]) -> None:
        self._table = table
        self._keys = tuple(c.name for c in table.primary_key.columns)
        self._statement = PreparedStatement(_insert_ignore(table), columns=columns)

    def executemany(self, conn: Connection, rows: Sequence[Mapping[str, object]]) -> None:
        if not rows:
            return
        name = conn.dialect.name
        if name not in {"sqlite", "postgresql"}:
            insert_ignore_portable(conn, self._table, rows)
            return
        if len(rows) > 1 and name == "postgresql":
            keys = self._keys
            rows = sorted(rows, key=lambda r: tuple(str(r[k]) for k in keys))
        self._statement.executemany(conn, rows)
