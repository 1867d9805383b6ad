"""One run per session of a store: a lease row, taken when a run starts and removed when it ends.

Two runs writing one session at once interleave its transcript (each reads
the head, then appends), and each would show the model the other's
messages. A guard on the ``Session`` object cannot see a second ``Session``
with the same id, nor another process. So a run takes the session's lease
in the store itself, in one write transaction (``BEGIN IMMEDIATE`` on
SQLite, the session's advisory lock on PostgreSQL), and a second run finds
the row and is refused with :class:`~weakprompt.errors.SessionBusyError`;
it does not wait, because a run may take minutes.

A process that dies leaves its row behind, so a row is honoured only while
its owner can still be alive:

- the owner is this process: only while the run that took it is still under
  way (a release that failed leaves nothing stale);
- the owner is another process on this host: only while that process lives
  (its pid exists and started when the row says, so a reused pid does not
  count), which lets a crash be resumed at once;
- the owner is on another host: only until ``expires_ms``, which a live
  owner keeps pushing :data:`LEASE_SECONDS` ahead from a heartbeat thread.

A private in-memory database (``"sqlite://"``) is reachable through its one
``Store`` object only, so its runs are counted in this process, with no row.
"""

from __future__ import annotations

import logging
import os
import socket
import threading
import time
import uuid
from typing import TYPE_CHECKING

import attrs
from sqlalchemy import bindparam, select
from sqlalchemy.engine import make_url

from ..errors import SessionBusyError, StoreError
from . import tables
from .engine import is_memory_database
from .prepared import PreparedStatement

if TYPE_CHECKING:
    from .store import Store

__all__ = [
    "LEASE_SECONDS",
    "RENEW_SECONDS",
    "SessionLease",
    "process_alive",
    "process_started",
    "renew",
    "renew_now",
    "take_session_lease",
]

LEASE_SECONDS = 60.0
"""A lease of an owner on another host lapses this long after its last heartbeat."""

RENEW_SECONDS = 20.0
"""How often a process pushes the expiry of the leases it holds forward."""

logger = logging.getLogger(__name__)

_lock = threading.Lock()
_live: dict[str, tuple[Store, str]] = {}  # token -> (store, session): leases held by runs of this process
_private: set[tuple[int, str]] = set()  # (id(store), session) of runs on private in-memory stores
_unreleased: dict[str, tuple[Store, str]] = {}  # token -> (store, session): rows a release failed to remove
_heartbeat: list[threading.Thread] = []  # the running heartbeat thread, if any
_wake = threading.Event()


@attrs.frozen
class SessionLease:
    """The right of one run to write one session of one store; :meth:`release` it when the run ends."""

    store: Store
    session_id: str
    token: str
    private: bool

    def release(self) -> None:
        """Give the session back (a no-op the second time; a closed store keeps nothing to release)."""
        with _lock:
            if self.private:
                _private.discard((id(self.store), self.session_id))
                return
            if _live.pop(self.token, None) is None:
                return
        if not _delete(self.store, self.session_id, self.token):
            # Still stored, the row would hold the session while this process lives: retried on each beat.
            with _lock:
                _unreleased[self.token] = (self.store, self.session_id)
            _start_heartbeat()


def _delete(store: Store, session_id: str, token: str) -> bool:
    """Remove a lease row of ours; False when the store failed (a closed store keeps nothing to remove)."""
    if store.closed:
        return True
    try:
        with store.write(lock=_lock_name(session_id)) as conn:
            _DELETE.executemany(conn, [{"session_id": session_id, "token": token}])
    except StoreError as exc:
        logger.warning("could not release the lease of session %r (retried later): %s", session_id, exc)
        return False
    return True


_COLUMNS = ("session_id", "token", "host", "pid", "pid_started", "acquired_at", "expires_ms")
_LEASES = tables.run_leases
_SELECT = PreparedStatement(
    select(*(_LEASES.c[name] for name in _COLUMNS)).where(_LEASES.c.session_id == bindparam("session_id"))
)
_INSERT = PreparedStatement(_LEASES.insert(), columns=_COLUMNS)
_DELETE = PreparedStatement(
    _LEASES.delete().where(
        (_LEASES.c.session_id == bindparam("session_id")) & (_LEASES.c.token == bindparam("token"))
    )
)


@attrs.frozen
class _Stored:
    token: str
    host: str
    pid: int
    started: str
    acquired_at: str
    expires_ms: int


def take_session_lease(store: Store, session_id: str, *, now_ms: int | None = None) -> SessionLease:
    """Take the lease of ``session_id`` in ``store``, or raise :class:`SessionBusyError` naming the holder."""
    if _is_private(store):
        key = (id(store), session_id)
        with _lock:
            if key in _private:
                raise SessionBusyError(_busy(session_id, "another run in this process"))
            _private.add(key)
        return SessionLease(store, session_id, "", private=True)
    token = uuid.uuid4().hex
    now = _now_ms() if now_ms is None else now_ms
    pid = os.getpid()
    row: dict[str, object] = {
        "session_id": session_id,
        "token": token,
        "host": _HOST,
        "pid": pid,
        "pid_started": _own_start(pid),
        "acquired_at": store.clock.now().isoformat(),
        "expires_ms": now + int(LEASE_SECONDS * 1000),
    }
    with _lock:  # registered first: a heartbeat or another run of ours sees it as live from here on
        _live[token] = (store, session_id)
    try:
        with store.write(lock=_lock_name(session_id)) as conn:
            found = _SELECT.first(conn, {"session_id": session_id})
            if found is not None:
                stored = _Stored(
                    str(found[1]), str(found[2]), int(found[3]), str(found[4]), str(found[5]), int(found[6])
                )
                holder = _holder(stored, now)
                if holder is not None:
                    raise SessionBusyError(_busy(session_id, f"{holder} (since {stored.acquired_at})"))
                logger.info(
                    "session %r: taking over the lease of a run that is gone (pid %s on %s)",
                    session_id,
                    stored.pid,
                    stored.host,
                )
                _DELETE.executemany(conn, [{"session_id": session_id, "token": stored.token}])
            _INSERT.executemany(conn, [row])
    except BaseException:
        with _lock:
            _live.pop(token, None)
        raise
    _start_heartbeat()
    return SessionLease(store, session_id, token, private=False)


def _holder(stored: _Stored, now_ms: int) -> str | None:
    """Who still holds a stored lease, in words; None when its owner is gone."""
    if stored.host == _HOST and stored.pid == os.getpid():
        with _lock:
            return "another run in this process" if stored.token in _live else None
    if stored.host == _HOST:
        return f"process {stored.pid}" if process_alive(stored.pid, stored.started) else None
    return f"process {stored.pid} on host {stored.host!r}" if stored.expires_ms > now_ms else None


def _busy(session_id: str, holder: str) -> str:
    return (
        f"session {session_id!r} is already running in this store, in {holder}; a session runs one "
        "evaluation at a time: wait for that run to end, or use another session id"
    )


def _lock_name(session_id: str) -> str:
    return f"run_leases:{session_id}"


def _is_private(store: Store) -> bool:
    """A database no other ``Store`` object can reach: a plain in-memory SQLite one."""
    if not store.in_memory:
        return False
    database = make_url(store.url).database  # not store.engine: that would build a deferred store's database
    return is_memory_database(database) and not (database or "").startswith("file:")


def process_started(pid: int) -> str:
    """When process ``pid`` started, as the kernel counts it ("" where that cannot be read)."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as stat:
            fields = stat.read().rsplit(b")", 1)[1].split()
    except (OSError, IndexError):
        return ""
    return fields[19].decode("ascii") if len(fields) > 19 else ""


def process_alive(pid: int, started: str) -> bool:
    """Whether process ``pid`` of this host exists and is the one that started at ``started``."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        pass  # someone else's process: it exists
    return not started or process_started(pid) in ("", started)


_started: dict[int, str] = {}  # this process's start, by pid (a forked child reads its own)


def _own_start(pid: int) -> str:
    started = _started.get(pid)
    if started is None:
        started = _started[pid] = process_started(pid)
    return started


def _now_ms() -> int:
    return int(time.time() * 1000)


_HOST = socket.gethostname()


def _forget_in_child() -> None:  # pragma: no cover - runs in a forked child, which coverage does not follow
    """A forked child runs none of its parent's runs, and has no heartbeat thread."""
    _live.clear()
    _private.clear()
    _unreleased.clear()
    _heartbeat.clear()


os.register_at_fork(after_in_child=_forget_in_child)


def _start_heartbeat() -> None:
    with _lock:
        if _heartbeat and _heartbeat[0].is_alive():
            return
        thread = threading.Thread(target=_beat, name="weakprompt-run-leases", daemon=True)
        _heartbeat[:] = [thread]
    thread.start()


def _beat() -> None:
    """Push the expiry of every lease this process holds forward, and retry failed releases.

    Ends after a beat with nothing left to do.
    """
    while True:
        _wake.wait(RENEW_SECONDS)
        _wake.clear()
        with _lock:
            held = list(_live.items())
            unreleased = list(_unreleased.items())
            if not held and not unreleased:
                _heartbeat.clear()
                return
        renew(held)
        for token, (store, session_id) in unreleased:
            if _delete(store, session_id, token):
                with _lock:
                    del _unreleased[token]


def renew_now() -> None:
    """Wake the heartbeat now: it renews every lease held, or ends when none is."""
    _wake.set()


def renew(held: list[tuple[str, tuple[Store, str]]], *, now_ms: int | None = None) -> None:
    """Push the given leases' expiry :data:`LEASE_SECONDS` past now (a closed or failing store is skipped)."""
    expires = (_now_ms() if now_ms is None else now_ms) + int(LEASE_SECONDS * 1000)
    table = tables.run_leases
    for token, (store, session_id) in held:
        if store.closed:
            continue
        try:
            with store.write(lock=_lock_name(session_id)) as conn:
                conn.execute(table.update().where(table.c.token == token).values(expires_ms=expires))
        except StoreError as exc:
            logger.warning("could not renew the lease of session %r: %s", session_id, exc)
