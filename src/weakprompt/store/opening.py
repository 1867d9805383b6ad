"""Opening a database: judge it without writing, then migrate it, then switch it to WAL.

A file the store refuses must be left byte-identical. Two things used to
write to it before the refusal: the switch to WAL (done on connect, it
rewrites the file header) and the version check itself (run in the write
transaction that migrates). So an existing SQLite file is first judged
through a read-only connection: not SQLite at all, someone else's tables,
a newer weakprompt's schema, or a damaged current one are all refused there.
Only a file that passes is opened for writing, migrated inside one
transaction (a failing step rolls back, still in the file's own journal
mode), and switched to WAL once that transaction has committed.

A 0-byte file is what SQLite itself treats as an empty database, so it is
a new store, like a missing file.

Read-only stores (``read_only=True``) never write: no migration, no WAL
switch, and a database that would need either is refused.
"""

from __future__ import annotations

import contextlib
import errno
import os
import shlex
import sqlite3
import uuid
from pathlib import Path

from sqlalchemy import Connection, Engine

from ..clock import Clock
from ..errors import SchemaVersionError, StoreError
from .engine import (
    BUSY_TIMEOUT_SECONDS,
    SQLITE_MAGIC,
    build_engine,
    enable_wal,
    normalize_url,
    sqlite_file,
    transaction_options,
    uses_wal,
)
from .locks import SCHEMA_LOCK, advisory_lock
from .memory_template import MEMORY_URL, memory_engine
from .migrations import LATEST_VERSION, check_not_newer, check_shape, migrate, read_version
from .run_leases import process_alive

__all__ = ["open_engine"]


def open_engine(url: str, clock: Clock, *, read_only: bool) -> tuple[Engine, int]:
    """An engine on the checked (and, unless ``read_only``, migrated) database, and its version.

    Raises :class:`SchemaVersionError` / :class:`StoreError` for what it
    refuses, and lets SQLAlchemy errors through for the caller to word.
    """
    path = sqlite_file(url)
    if read_only:
        return _open_read_only(url, path)
    if url == MEMORY_URL:  # a new private database: a copy of the migrated template
        return memory_engine(clock), LATEST_VERSION
    return migrated_engine(url, clock, path)


def migrated_engine(url: str, clock: Clock, path: Path | None) -> tuple[Engine, int]:
    """An engine on ``url`` after judging the database (if it exists) and migrating it."""
    if path is not None:
        _check_folder(path)
        _sweep_leftovers(path)
        if not path.exists():
            _create(path, clock)
        recover_hot_journal(path)  # before the header: a creation cut short may not have written it yet
    if path is not None and _has_content(path):
        _check_header(path)
        engine = build_engine(url, read_only=True)
        try:
            with engine.connect() as conn, conn.begin():
                _judge(conn, read_only=False)
        finally:
            engine.dispose()
    engine = build_engine(url)
    try:
        with engine.connect() as conn:
            conn.execution_options(**transaction_options(engine.dialect.name, write=True))
            with conn.begin():
                # Two workers opening a fresh database must not both migrate it.
                advisory_lock(conn, SCHEMA_LOCK)
                _, version = migrate(conn, clock)
                check_shape(conn)
            if uses_wal(url):
                enable_wal(_driver_connection(conn))
    except BaseException:
        engine.dispose()
        raise
    return engine, version


def _check_folder(path: Path) -> None:
    """Refuse a store whose folder is missing, naming it: SQLite would only say it cannot open the file.

    The folder is not made here: a path with a typo would otherwise grow a
    new tree of folders and a new empty store, while the real one sits elsewhere.
    """
    folder = path.parent
    if folder.is_dir():
        return
    if folder.exists():
        raise StoreError(f"cannot create the store {str(path)!r}: {str(folder)!r} is not a folder")
    raise StoreError(
        f"cannot create the store {str(path)!r}: its folder {str(folder)!r} does not exist "
        f"(create it first, e.g. mkdir -p {shlex.quote(str(folder))})"
    )


def _open_read_only(url: str, path: Path | None) -> tuple[Engine, int]:
    if path is not None:
        if not path.exists():
            raise StoreError(f"no database file at {str(path)!r} to open read-only")
        journal = _hot_journal(path)
        if journal is not None:
            # SQLite cannot roll a hot journal back through a read-only connection: do it first.
            if not os.access(path.parent, os.W_OK):
                raise StoreError(
                    f"{str(path)!r} has a hot journal ({str(journal)!r}) left by a writer that stopped "
                    "midway, and its directory is read-only here, so it cannot be rolled back: open it "
                    "once with write access (Store.open without read_only) to recover it"
                )
            recover_hot_journal(path)
            if not _has_content(path):
                raise SchemaVersionError(
                    f"{str(path)!r} was being created when its writer stopped; rolled back, it is an "
                    "empty file, not a weakprompt store yet: read_only=True cannot create one"
                )
        if not _has_content(path):
            raise SchemaVersionError(
                f"{str(path)!r} is an empty file, not a weakprompt store yet; "
                "read_only=True cannot create one"
            )
        _check_header(path)
    engine = build_engine(url, read_only=True)
    try:
        with engine.connect() as conn:
            conn.execution_options(**transaction_options(engine.dialect.name, write=False))
            with conn.begin():
                version = _judge(conn, read_only=True)
    except BaseException:
        engine.dispose()
        raise
    return engine, version


def _judge(conn: Connection, *, read_only: bool) -> int:
    """Check the version (and, for the current one, the shape) of a database, writing nothing.

    ``read_only``: for a read-only store, which cannot migrate an older one.
    """
    version = read_version(conn, read_only=read_only)
    check_not_newer(version)
    if version == LATEST_VERSION:
        check_shape(conn)
    elif read_only:
        found = "an empty database" if version == 0 else f"schema version {version}"
        raise SchemaVersionError(
            f"the store is {found} and this weakprompt needs version {LATEST_VERSION}; read_only=True "
            "never creates or migrates one: open it once without read_only first"
        )
    return version


def _create(path: Path, clock: Clock) -> None:
    """Build a new store beside ``path`` and move it into place whole, or leave ``path`` missing.

    The database is migrated and switched to WAL in a file of its own, closed
    (which folds its WAL back in), flushed to disk, then linked to ``path``.
    A process killed at any point leaves either no file at ``path`` or a
    complete store; a link that finds ``path`` taken means another process
    won the race, and its store is opened instead. Leftovers of builders that
    died are removed by the next open. Where the file system has no hard
    links, the store is created in place, as a 0-byte file is (a kill then
    leaves a hot journal, which the next open rolls back).
    """
    building = path.with_name(f".{path.name}.{os.getpid()}.{uuid.uuid4().hex[:8]}{_BUILDING}")
    try:
        engine = build_engine(normalize_url(building))
        try:
            with engine.connect() as conn:
                conn.execution_options(**transaction_options(engine.dialect.name, write=True))
                with conn.begin():
                    migrate(conn, clock)
                    check_shape(conn)
                enable_wal(_driver_connection(conn))
        finally:
            engine.dispose()
        _fsync(building)
        try:
            os.link(building, path)
        except FileExistsError:
            return  # another process created it first: judged and opened as any existing file
        except OSError as exc:
            if exc.errno not in _NO_HARD_LINKS:
                raise
            return  # a file system without hard links: the store is created in place instead
        _fsync(path.parent)
    except OSError as exc:
        raise StoreError(f"cannot create the store at {str(path)!r}: {exc.strerror or exc}") from exc
    finally:
        _remove(building)


_NO_HARD_LINKS = frozenset({errno.EPERM, errno.EOPNOTSUPP, errno.ENOTSUP, errno.EMLINK, errno.EXDEV})
"""What ``link`` answers where a file system has no hard links (some network and FUSE mounts)."""

_BUILDING = ".weakprompt-new"
"""Suffix of a store being built beside its final path (see :func:`_create`)."""


def _sweep_leftovers(path: Path) -> None:
    """Remove what builders of ``path`` that died (in this host) left beside it."""
    prefix = f".{path.name}."
    try:
        names = os.listdir(path.parent)
    except OSError:
        return
    for name in names:
        if not (name.startswith(prefix) and name.endswith(_BUILDING)):
            continue
        pid = name[len(prefix) :].split(".", 1)[0]
        if pid.isdigit() and not process_alive(int(pid), ""):
            _remove(path.parent / name)


def _remove(building: Path) -> None:
    for suffix in ("", "-journal", "-wal", "-shm"):
        with contextlib.suppress(FileNotFoundError):
            Path(f"{building}{suffix}").unlink()


def _fsync(path: Path) -> None:
    descriptor = os.open(path, os.O_RDONLY)
    try:
        os.fsync(descriptor)
    finally:
        os.close(descriptor)


def _hot_journal(path: Path) -> Path | None:
    """The rollback journal of ``path`` when one with content is there (a write that did not finish)."""
    journal = Path(f"{path}-journal")
    return journal if _has_content(journal) else None


def recover_hot_journal(path: Path) -> None:
    """Let SQLite roll back a write that stopped midway, through a connection that may write.

    A read-only connection cannot roll a hot journal back, so it fails with
    "attempt to write a readonly database" instead. Rolling back restores
    what the file held before that write: it changes no committed content.
    """
    if _hot_journal(path) is None or not path.exists():
        return
    try:
        conn = sqlite3.connect(path, timeout=BUSY_TIMEOUT_SECONDS)
    except sqlite3.Error as exc:  # pragma: no cover - the file was just read
        raise StoreError(f"cannot roll back the hot journal of {str(path)!r}: {exc}") from exc
    try:
        conn.execute("SELECT count(*) FROM sqlite_master").fetchall()
    except sqlite3.Error as exc:
        raise StoreError(f"cannot roll back the hot journal of {str(path)!r}: {exc}") from exc
    finally:
        conn.close()


def _has_content(path: Path) -> bool:
    try:
        return path.stat().st_size > 0
    except FileNotFoundError:
        return False


def _check_header(path: Path) -> None:
    """Refuse a file that is not SQLite before SQLite opens it."""
    try:
        with path.open("rb") as file:
            head = file.read(len(SQLITE_MAGIC))
    except OSError as exc:
        raise StoreError(f"cannot read {str(path)!r}: {exc.strerror}") from exc
    if head != SQLITE_MAGIC:
        raise StoreError(
            f"cannot open the store at {str(path)!r}: the file is not a database (it does not start "
            "with the SQLite header)"
        )


def _driver_connection(conn: Connection) -> object:
    driver = conn.connection.dbapi_connection
    assert driver is not None  # a checked-out, open connection
    return driver
