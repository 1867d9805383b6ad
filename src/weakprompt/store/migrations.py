"""Schema versions as an ordered list of steps.

Version N of the schema is what you get by applying steps 1..N to an empty
database; a new database is built exactly that way, so the upgrade path and
the fresh path can never drift apart. Each step owns frozen DDL for *its*
version (a private ``MetaData``), never the live objects of
:mod:`weakprompt.store.tables`.

Adding a step (e.g. tables for stored tool outputs): write a function
``def _vN(conn: Connection) -> None`` that creates or alters what it needs,
append ``Migration(N, "what it adds", _vN)`` to :data:`MIGRATIONS`, update
:mod:`~weakprompt.store.tables` to the new shape, and add a test that opens a
database written at version N-1.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import attrs
from sqlalchemy import (
    BigInteger,
    Boolean,
    CheckConstraint,
    Column,
    Connection,
    ForeignKey,
    Index,
    Integer,
    LargeBinary,
    MetaData,
    String,
    Table,
    Text,
    UniqueConstraint,
    inspect,
    select,
)
from sqlalchemy import func as sql_func

from ..clock import Clock
from ..errors import SchemaVersionError
from . import tables

__all__ = [
    "LATEST_VERSION",
    "MIGRATIONS",
    "Migration",
    "check_not_newer",
    "check_shape",
    "foreign_objects",
    "migrate",
    "read_version",
]


@attrs.frozen
class Migration:
    """One step from version ``version - 1`` to ``version``."""

    version: int
    description: str
    apply: Callable[[Connection], None]


def _v1_transcript(conn: Connection) -> None:
    """Version table, content-addressed blobs and the commit chain."""
    md = MetaData()
    Table(
        "weakprompt_schema",
        md,
        Column("version", Integer, primary_key=True, autoincrement=False),
        Column("description", Text, nullable=False),
        Column("applied_at", String(40), nullable=False),
    )
    Table(
        "blobs",
        md,
        Column("hash", String(64), primary_key=True),
        Column("content", Text, nullable=False),
        Column("size_bytes", Integer, nullable=False),
        Column("created_at", String(40), nullable=False),
    )
    Table(
        "commits",
        md,
        Column("hash", String(64), primary_key=True),
        Column("session_id", String(255), nullable=False),
        Column("seq", Integer, nullable=False),
        Column("parent_hash", String(64), ForeignKey("commits.hash"), nullable=True),
        Column("operation", String(8), nullable=False),
        Column("edit_target", String(64), ForeignKey("commits.hash"), nullable=True),
        Column("role", String(16), nullable=False),
        Column("blob_hash", String(64), ForeignKey("blobs.hash"), nullable=False),
        Column("message", Text, nullable=True),
        Column("metadata_json", Text, nullable=False),
        Column("token_count", Integer, nullable=False),
        Column("created_at", String(40), nullable=False),
        UniqueConstraint("session_id", "seq", name="uq_commits_session_seq"),
        CheckConstraint("operation IN ('APPEND', 'EDIT')", name="ck_commits_operation"),
    )
    md.create_all(conn)


def _v2_tool_tracking(conn: Connection) -> None:
    """Tool schemas and ordered tool sets, each stored once by content hash; one link per commit."""
    md = MetaData()
    # Referenced only so the foreign keys render; created by version 1.
    Table("commits", md, Column("hash", String(64), primary_key=True))
    Table(
        "tool_definitions",
        md,
        Column("content_hash", String(64), primary_key=True),
        Column("name", String(255), nullable=False, index=True),
        Column("schema_json", Text, nullable=False),
        Column("created_at", String(40), nullable=False),
    )
    Table(
        "tool_sets",
        md,
        Column("set_hash", String(64), primary_key=True),
        Column("tool_count", Integer, nullable=False),
        Column("created_at", String(40), nullable=False),
    )
    Table(
        "tool_set_members",
        md,
        Column("set_hash", String(64), ForeignKey("tool_sets.set_hash"), primary_key=True),
        Column("position", Integer, primary_key=True, autoincrement=False),
        Column("tool_hash", String(64), ForeignKey("tool_definitions.content_hash"), nullable=False),
        Index("ix_tool_set_members_tool", "tool_hash"),
        sqlite_with_rowid=False,
    )
    Table(
        "commit_tools",
        md,
        Column("commit_hash", String(64), ForeignKey("commits.hash"), primary_key=True),
        Column("tool_set_hash", String(64), ForeignKey("tool_sets.set_hash"), nullable=False, index=True),
    )
    new = [t for t in md.sorted_tables if t.name != "commits"]
    md.create_all(conn, tables=new)


def _v3_tool_outputs(conn: Connection) -> None:
    """Stored tool outputs: compressed payloads by content hash, one row per stored call."""
    md = MetaData()
    Table(
        "tool_output_blobs",
        md,
        Column("hash", String(64), primary_key=True),
        Column("data", LargeBinary, nullable=False),
        Column("encoding", String(16), nullable=False),
        Column("size_bytes", BigInteger, nullable=False),
        Column("stored_bytes", BigInteger, nullable=False),
        Column("created_at", String(40), nullable=False),
    )
    Table(
        "tool_outputs",
        md,
        Column("session_id", String(255), primary_key=True),
        Column("seq", Integer, primary_key=True, autoincrement=False),
        Column("tool_call_id", String(255), nullable=False),
        Column("handle", String(36), nullable=False),
        Column("blob_hash", String(64), ForeignKey("tool_output_blobs.hash"), nullable=False),
        Column("tool_name", String(255), nullable=False),
        Column("arguments", Text, nullable=False),
        Column("size_bytes", BigInteger, nullable=False),
        Column("lines", BigInteger, nullable=False),
        Column("tokens", BigInteger, nullable=False),
        Column("is_error", Boolean, nullable=False),
        Column("oversized", Boolean, nullable=False),
        Column("summary", Text, nullable=False),
        Column("preview", Text, nullable=False),
        Column("created_at", String(40), nullable=False),
        Index("ix_tool_outputs_call", "session_id", "tool_call_id"),
        Index("ix_tool_outputs_handle", "session_id", "handle"),
        Index("ix_tool_outputs_blob", "blob_hash"),
    )
    md.create_all(conn)


def _v4_paused_runs(conn: Connection) -> None:
    """Paused runs waiting for decisions, and the journal of a turn whose tools are running."""
    md = MetaData()
    Table(
        "paused_runs",
        md,
        Column("session_id", String(255), primary_key=True),
        Column("seq", Integer, primary_key=True, autoincrement=False),
        Column("status", String(16), nullable=False),
        Column("head_hash", String(64), nullable=True),
        Column("pending_json", Text, nullable=False),
        Column("state_json", Text, nullable=False),
        Column("decisions_json", Text, nullable=True),
        Column("decided_by", String(255), nullable=True),
        Column("created_at", String(40), nullable=False),
        Column("resumed_at", String(40), nullable=True),
        CheckConstraint("status IN ('paused', 'resumed')", name="ck_paused_runs_status"),
        Index("ix_paused_runs_status", "status"),
    )
    Table(
        "run_journal",
        md,
        Column("session_id", String(255), primary_key=True),
        Column("head_hash", String(64), nullable=True),
        Column("reply_json", Text, nullable=True),
        Column("calls_json", Text, nullable=False),
        Column("created_at", String(40), nullable=False),
    )
    md.create_all(conn)


def _v5_store_identity(conn: Connection) -> None:
    """A random id for the store, made once: approval tokens are bound to the store they were made in."""
    import uuid

    md = MetaData()
    identity = Table(
        "store_identity",
        md,
        Column("store_id", String(36), primary_key=True),
    )
    md.create_all(conn)
    conn.execute(identity.insert().values(store_id=uuid.uuid4().hex))


def _v6_run_leases(conn: Connection) -> None:
    """One row per session with a run under way: who runs it, until when (``run_leases`` module)."""
    md = MetaData()
    Table(
        "run_leases",
        md,
        Column("session_id", String(255), primary_key=True),
        Column("token", String(32), nullable=False),
        Column("host", String(255), nullable=False),
        Column("pid", BigInteger, nullable=False),
        Column("pid_started", String(32), nullable=False),
        Column("acquired_at", String(40), nullable=False),
        Column("expires_ms", BigInteger, nullable=False),
    )
    md.create_all(conn)


def _v_forks(conn: Connection) -> None:
    """Forks: a session that shares another's chain up to one of its commits (``fork_rows`` module)."""
    md = MetaData()
    # Referenced only so the foreign key renders; created by version 1.
    Table("commits", md, Column("hash", String(64), primary_key=True))
    forks = Table(
        "forks",
        md,
        Column("session_id", String(255), primary_key=True),
        Column("parent_session", String(255), nullable=False, index=True),
        Column("fork_commit", String(64), ForeignKey("commits.hash"), nullable=False),
        Column("fork_seq", Integer, nullable=False),
        Column("created_at", String(40), nullable=False),
    )
    md.create_all(conn, tables=[forks])


def _v_eval_results(conn: Connection) -> None:
    """One row per run of an eval case (``specs/EVALS.md``): its experiment, verdict, and session."""
    md = MetaData()
    Table(
        "eval_results",
        md,
        Column("experiment_id", String(64), primary_key=True),
        Column("case_name", String(255), primary_key=True),
        Column("repeat", Integer, primary_key=True, autoincrement=False),
        Column("case_index", Integer, nullable=False),
        Column("experiment_name", String(255), nullable=False),
        Column("dataset", String(255), nullable=False),
        Column("session_id", String(255), nullable=False),
        Column("passed", Boolean, nullable=False),
        Column("scores_json", Text, nullable=False),
        Column("outcomes_json", Text, nullable=False),
        Column("usage_json", Text, nullable=False),
        Column("turns", Integer, nullable=False),
        Column("duration_ms", BigInteger, nullable=False),
        Column("error", Text, nullable=True),
        Column("started_at", String(40), nullable=False),
        Index("ix_eval_results_name", "experiment_name"),
        Index("ix_eval_results_session", "session_id"),
    )
    md.create_all(conn)


def _v_part_blobs(conn: Connection) -> None:
    """Images and documents of messages, stored once by digest; message blobs name the digest."""
    md = MetaData()
    Table(
        "part_blobs",
        md,
        Column("digest", String(80), primary_key=True),
        Column("media_type", String(255), nullable=False),
        Column("size_bytes", BigInteger, nullable=False),
        Column("data", LargeBinary, nullable=False),
        Column("created_at", String(40), nullable=False),
    )
    md.create_all(conn)


MIGRATIONS: tuple[Migration, ...] = (
    Migration(1, "transcript: blobs and commits", _v1_transcript),
    Migration(
        2, "tool tracking: tool_definitions, tool_sets, tool_set_members, commit_tools", _v2_tool_tracking
    ),
    Migration(3, "tool outputs: tool_output_blobs, tool_outputs", _v3_tool_outputs),
    Migration(4, "approval and resume: paused_runs, run_journal", _v4_paused_runs),
    Migration(5, "store identity: store_identity", _v5_store_identity),
    Migration(6, "one run per session: run_leases", _v6_run_leases),
    Migration(7, "forks: sessions sharing a chain up to a commit", _v_forks),
    Migration(8, "eval results: eval_results", _v_eval_results),
    Migration(9, "message parts: part_blobs", _v_part_blobs),
)

LATEST_VERSION = MIGRATIONS[-1].version


def read_version(conn: Connection, *, read_only: bool = False) -> int:
    """The applied schema version; 0 for an empty database.

    Raises :class:`SchemaVersionError` for a database holding any schema
    object weakprompt did not create (not ours, see :func:`foreign_objects`)
    or an empty version table (damaged). ``read_only``: the caller never
    writes, so objects someone added beside a store of ours (one with our
    version table; say, an application's own table the inspector is told to
    read) are read past instead.
    """
    names = set(inspect(conn).get_table_names())
    foreign = foreign_objects(conn)
    if foreign and not (read_only and tables.schema_versions.name in names):
        shown = ", ".join(foreign[:5]) + (f" and {len(foreign) - 5} more" if len(foreign) > 5 else "")
        version_table = tables.schema_versions.name
        missing = "" if version_table in names else f" (and no {version_table!r} version table)"
        raise SchemaVersionError(
            f"not a weakprompt store: the database holds {shown}, which weakprompt did not create"
            f"{missing}; it is left as it is"
        )
    if tables.schema_versions.name not in names:
        return 0
    version = conn.execute(select(sql_func.max(tables.schema_versions.c.version))).scalar()
    if not isinstance(version, int):
        raise SchemaVersionError(
            f"the {tables.schema_versions.name!r} table is empty: the database is damaged"
        )
    return version


def migrate(
    conn: Connection, clock: Clock, *, migrations: Sequence[Migration] = MIGRATIONS
) -> tuple[int, int]:
    """Bring the database up to the newest version; returns ``(before, after)``.

    Runs inside the caller's transaction, so a failing step leaves the
    database at its old version. A database newer than the code is refused,
    never rewritten.
    """
    latest = migrations[-1].version
    before = read_version(conn)
    check_not_newer(before, latest)
    for step in migrations:
        if step.version <= before:
            continue
        step.apply(conn)
        conn.execute(
            tables.schema_versions.insert().values(
                version=step.version, description=step.description, applied_at=clock.now().isoformat()
            )
        )
    return before, latest


def check_not_newer(version: int, latest: int = LATEST_VERSION) -> None:
    """Refuse a database written by a newer weakprompt: this one cannot know its shape."""
    if version > latest:
        raise SchemaVersionError(
            f"the database schema is version {version}, newer than this weakprompt supports "
            f"({latest}); upgrade weakprompt to open it"
        )


def check_shape(conn: Connection) -> None:
    """Every live table and column must exist: catches damaged or foreign databases."""
    inspector = inspect(conn)
    present = set(inspector.get_table_names())
    for table in tables.metadata.sorted_tables:
        if table.name not in present:
            raise SchemaVersionError(f"the database is missing table {table.name!r}: damaged or not ours")
        columns = {c["name"] for c in inspector.get_columns(table.name)}
        missing = sorted(c.name for c in table.columns if c.name not in columns)
        if missing:
            raise SchemaVersionError(
                f"table {table.name!r} is missing columns {missing}: damaged or not ours"
            )


def foreign_objects(conn: Connection) -> list[str]:
    """Every schema object weakprompt did not create (``"view 'answer'"``), sorted; empty for ours.

    Any table, view, trigger, index or sequence that is not one of ours
    means someone else's database, even one holding only a view: the store
    must not add its tables beside it. SQLite's own objects (``sqlite_*``,
    such as the statistics ``ANALYZE`` writes) are not counted.
    """
    found = _sqlite_objects(conn) if conn.dialect.name == "sqlite" else _server_objects(conn)
    known_tables = set(tables.metadata.tables)
    known_indexes = _index_names()
    foreign: list[str] = []
    for kind, name, table in found:
        if name.startswith("sqlite_"):
            continue
        if kind == "table" and name in known_tables:
            continue
        if kind == "index" and known_indexes.get(name) == table:
            continue
        foreign.append(f"{kind} {name!r}")
    return sorted(foreign)


def _index_names() -> dict[str, str]:
    """Index name to table name, for every index the migrations create (named ones and PostgreSQL keys)."""
    names: dict[str, str] = {}
    for table in tables.metadata.sorted_tables:
        names[f"{table.name}_pkey"] = table.name
        for index in table.indexes:
            names[str(index.name)] = table.name
        for constraint in table.constraints:
            if isinstance(constraint, UniqueConstraint) and constraint.name:
                names[str(constraint.name)] = table.name
    return names


def _sqlite_objects(conn: Connection) -> list[tuple[str, str, str]]:
    rows = conn.exec_driver_sql("SELECT type, name, tbl_name FROM sqlite_master").all()
    return [(str(kind), str(name), str(table)) for kind, name, table in rows]


def _server_objects(conn: Connection) -> list[tuple[str, str, str]]:
    """Tables, views, sequences, indexes and triggers of the connection's default schema."""
    inspector = inspect(conn)
    found: list[tuple[str, str, str]] = []
    for name in inspector.get_table_names():
        found.append(("table", name, name))
        for index in inspector.get_indexes(name):
            if index.get("duplicates_constraint") is None and index["name"] is not None:
                found.append(("index", index["name"], name))
    found.extend(("view", name, name) for name in inspector.get_view_names())
    if conn.dialect.name == "postgresql":  # pragma: no branch - the only server dialect tested
        found.extend(("materialized view", name, name) for name in inspector.get_materialized_view_names())
        found.extend(("sequence", name, name) for name in inspector.get_sequence_names())
        triggers = conn.exec_driver_sql(
            "SELECT trigger_name, event_object_table FROM information_schema.triggers "
            "WHERE trigger_schema = current_schema()"
        ).all()
        found.extend(("trigger", str(name), str(table)) for name, table in triggers)
    return found
