"""The session: typed, immutable slices of state driven by events.

State lives in slices keyed by type (``session[Plan]``). Each slice is a
tuple that is replaced, never edited, so a snapshot only copies the small
table of slices and a restore puts the old table back exactly. Reducers turn
dispatched events into new slice states; the session subscribes them to its
event bus so publishing an event anywhere updates the session.
"""

from __future__ import annotations

import threading
import warnings
import weakref
from collections.abc import Callable, Iterable, Mapping
from types import MappingProxyType
from typing import Generic, TypeVar, cast

import attrs

from ..clock import SYSTEM_CLOCK, Clock
from ..errors import ConfigurationError
from ..events import DispatchResult, EventBus, ToolInvoked
from ._reducers import Reducer, SlicePolicy, append
from ._snapshot import SessionSnapshot, SnapshotMismatchError

__all__ = ["Session", "SessionFork", "SliceAccessor"]

S = TypeVar("S")
E = TypeVar("E")

_AnyReducer = Callable[[tuple[object, ...], object], tuple[object, ...]]


@attrs.frozen
class SliceWrite:
    """A write through ``session[T]`` recorded on a fork: ``seed`` / ``clear`` replace, ``append`` adds."""

    slice_type: type[object]
    values: tuple[object, ...]
    replace: bool


@attrs.frozen
class DispatchedEvent:
    """An event dispatched on a fork (its reducers ran there; replaying dispatches it for real)."""

    event: object


SessionOperation = SliceWrite | DispatchedEvent
"""One change a forked session recorded, in the order it happened."""


class SliceAccessor(Generic[S]):
    """Read and write one slice of a session: ``session[Plan]``.

    Writes through the accessor bypass reducers and events; they are meant
    for seeding state and for tests. Every read returns an immutable tuple.
    """

    __slots__ = ("_session", "_type")

    def __init__(self, session: Session, slice_type: type[S]) -> None:
        self._session = session
        self._type = slice_type

    @property
    def slice_type(self) -> type[S]:
        return self._type

    def all(self) -> tuple[S, ...]:
        """Every value in the slice, oldest first."""
        return self._session._read(self._type)  # pyright: ignore[reportPrivateUsage]

    def latest(self) -> S | None:
        """The newest value, or None when the slice is empty."""
        values = self.all()
        return values[-1] if values else None

    def where(self, predicate: Callable[[S], bool]) -> tuple[S, ...]:
        """The values for which ``predicate`` is true, in slice order."""
        return tuple(value for value in self.all() if predicate(value))

    def append(self, value: S) -> None:
        """Add one value to the end of the slice."""
        self._session._write(self._type, (value,), replace=False)  # pyright: ignore[reportPrivateUsage]

    def seed(self, values: Iterable[S]) -> None:
        """Replace the slice's content with ``values``."""
        self._session._write(self._type, tuple(values), replace=True)  # pyright: ignore[reportPrivateUsage]

    def clear(self) -> None:
        """Empty the slice."""
        self._session._write(self._type, (), replace=True)  # pyright: ignore[reportPrivateUsage]

    def __len__(self) -> int:
        return len(self.all())

    def __repr__(self) -> str:
        return f"SliceAccessor({self._type.__name__}, {len(self)} values)"


class _LogSlice:
    """A LOG slice: append-only in practice, so stored as a list.

    LOG slices are never snapshotted, so they need not be immutable; a list
    makes recording the n-th event O(1) instead of copying n-1 values. Reads
    get a tuple built once per change.
    """

    __slots__ = ("_items", "_view")

    def __init__(self, values: tuple[object, ...] = ()) -> None:
        self._items = list(values)
        self._view: tuple[object, ...] | None = values

    def view(self) -> tuple[object, ...]:
        view = self._view
        if view is None:
            view = self._view = tuple(self._items)
        return view

    def extend(self, values: tuple[object, ...]) -> None:
        self._items.extend(values)
        self._view = None

    def replace(self, values: tuple[object, ...]) -> None:
        self._items = list(values)
        self._view = values


class _ReducerHandler:
    """The bus subscription that applies one registered reducer.

    With ``unwrap`` set it listens to ``ToolInvoked`` instead and feeds the
    reducer the result's value, but only for successful calls: a failed call
    must leave no trace in STATE slices.

    It holds its session weakly: the session holds it (and so does the
    session's bus), and a strong reference back would make every
    session a reference cycle, freed only by the cyclic garbage collector.
    A handler whose session is gone does nothing.
    """

    __slots__ = (
        "active",
        "event_type",
        "is_log",
        "name",
        "reducer",
        "session_id",
        "session_ref",
        "slice_type",
        "unwrap",
    )

    def __init__(
        self,
        session: Session,
        slice_type: type[object],
        event_type: type[object],
        reducer: _AnyReducer,
        *,
        unwrap: bool,
        is_log: bool,
    ) -> None:
        self.session_ref = weakref.ref(session)
        self.session_id = session.session_id
        self.slice_type = slice_type
        self.event_type = event_type
        self.reducer = reducer
        self.unwrap = unwrap
        # A slice's policy never changes once set, so it can be fixed here.
        self.is_log = is_log
        # Cleared when the reducer is replaced or the session closes, so an
        # event already on its way to this handler is not applied.
        self.active = True
        reducer_name = getattr(reducer, "__qualname__", None) or repr(reducer)
        source = f"ToolInvoked value {event_type.__name__}" if unwrap else event_type.__name__
        self.name = (
            f"session {session.session_id}: reducer {reducer_name} for {slice_type.__name__} on {source}"
        )

    def __call__(self, event: object) -> None:
        event_session = getattr(event, "session_id", None)
        if isinstance(event_session, str) and event_session != self.session_id:
            return  # another session's event on a shared bus
        session = self.session_ref()
        if session is None:
            return  # the session was dropped without being closed
        if self.unwrap:
            invoked = cast(ToolInvoked, event)
            if not invoked.result.success:
                return
            event = invoked.result.value
            if not isinstance(event, self.event_type):
                return
        session._reduce(self, event)  # pyright: ignore[reportPrivateUsage]


def _renamed(old: str, new: str) -> None:
    warnings.warn(
        f"{old} is deprecated and will be removed in the next release; use {new} (the event bus)",
        DeprecationWarning,
        stacklevel=3,
    )


class Session:
    """Typed slices of state, changed by reducers, snapshotted for rollback.

    ``bus`` (the session's ``EventBus``) defaults to a private one. The
    session subscribes its reducers to it, so ``session.dispatch(event)``
    and ``session.bus.dispatch(event)`` are the same. Events carrying a
    ``session_id`` of another session are ignored, which lets several
    sessions share one bus. ``dispatcher`` is the bus's old name (it warns):
    "dispatcher" now names only the tool dispatcher.

    Every ``ToolInvoked`` is recorded once in the LOG slice
    ``session[ToolInvoked]``. A successful one whose result value is an
    instance of a type with reducers also runs those reducers with the value
    as the event, which is how tools feed state slices.
    """

    def __init__(
        self,
        bus: EventBus | None = None,
        session_id: str | None = None,
        clock: Clock | None = None,
        *,
        dispatcher: EventBus | None = None,
    ) -> None:
        if dispatcher is not None:
            _renamed("Session(dispatcher=...)", "Session(bus=...)")
            if bus is not None and bus is not dispatcher:
                raise ConfigurationError(
                    "Session: give the event bus once, as bus= (dispatcher= is its old name)"
                )
            bus = dispatcher
        self._session_id = session_id if session_id is not None else _new_session_id()
        self._bus = bus if bus is not None else EventBus()
        self._clock = clock if clock is not None else SYSTEM_CLOCK
        self._lock = threading.RLock()
        # STATE slices: immutable tuples; restore swaps the whole dict back.
        # LOG slices: list-backed, never snapshotted, never restored.
        self._state: dict[type[object], tuple[object, ...]] = {}
        self._log: dict[type[object], _LogSlice] = {}
        self._policies: dict[type[object], SlicePolicy] = {}
        self._log_types: set[type[object]] = set()
        self._handlers: dict[tuple[type[object], type[object]], tuple[_ReducerHandler, ...]] = {}
        self._closed = False
        self.register_reducer(ToolInvoked, ToolInvoked, append, policy=SlicePolicy.LOG)

    # -- identity ---------------------------------------------------------

    @property
    def session_id(self) -> str:
        return self._session_id

    @property
    def bus(self) -> EventBus:
        """The event bus the session's reducers listen on; the run publishes its events here."""
        return self._bus

    @property
    def dispatcher(self) -> EventBus:
        """Deprecated: the event bus's old name; use :attr:`bus`."""
        _renamed("Session.dispatcher", "Session.bus")
        return self._bus

    @property
    def clock(self) -> Clock:
        return self._clock

    def __repr__(self) -> str:
        return f"Session({self._session_id!r}, {len(self._state)} state slices, {len(self._log)} log slices)"

    # -- slices -----------------------------------------------------------

    def __getitem__(self, slice_type: type[S]) -> SliceAccessor[S]:
        if not isinstance(slice_type, type):
            raise TypeError(f"session[...] takes a class, got {slice_type!r}")
        return SliceAccessor(self, slice_type)

    def policy_of(self, slice_type: type[object]) -> SlicePolicy:
        """The slice's policy; slices never registered otherwise are STATE."""
        return self._policies.get(slice_type, SlicePolicy.STATE)

    def set_policy(self, slice_type: type[object], policy: SlicePolicy) -> None:
        """Fix a slice's policy before using it (reducer registration also does).

        A slice's policy can be set once; asking for a different one later is
        a :class:`ConfigurationError`, because snapshots already taken would
        disagree about the slice.
        """
        with self._lock:
            current = self._policies.get(slice_type)
            if current is policy:
                return
            if current is not None:
                raise ConfigurationError(
                    f"slice {slice_type.__name__} already has policy {current.name}; "
                    f"cannot change it to {policy.name}"
                )
            self._policies[slice_type] = policy
            if policy is SlicePolicy.LOG:
                self._log_types.add(slice_type)
                if slice_type in self._state:
                    self._log[slice_type] = _LogSlice(self._state.pop(slice_type))

    def state(self) -> Mapping[type[object], tuple[object, ...]]:
        """A read-only copy of every non-empty STATE slice (handy for equality in tests)."""
        with self._lock:
            return MappingProxyType(dict(self._state))

    def _log_slice(self, slice_type: type[object]) -> _LogSlice:
        """The LOG slice's storage, created on first use (caller holds the lock)."""
        log = self._log.get(slice_type)
        if log is None:
            log = self._log[slice_type] = _LogSlice()
        return log

    def _read(self, slice_type: type[S]) -> tuple[S, ...]:
        if slice_type in self._log_types:
            with self._lock:
                log = self._log.get(slice_type)
                return cast("tuple[S, ...]", log.view() if log is not None else ())
        return cast("tuple[S, ...]", self._state.get(slice_type, ()))

    def _write(self, slice_type: type[object], values: tuple[object, ...], *, replace: bool) -> None:
        for value in values:
            if not isinstance(value, slice_type):
                raise TypeError(
                    f"session[{slice_type.__name__}] only holds {slice_type.__name__} values, "
                    f"got {type(value).__name__}: {value!r}"
                )
        with self._lock:
            if slice_type in self._log_types:
                log = self._log_slice(slice_type)
                if replace:
                    log.replace(values)
                else:
                    log.extend(values)
                return
            new = values if replace else (*self._state.get(slice_type, ()), *values)
            self._store(self._state, slice_type, new)

    @staticmethod
    def _store(
        table: dict[type[object], tuple[object, ...]], slice_type: type[object], values: tuple[object, ...]
    ) -> None:
        # Empty slices are absent, so "never written" and "cleared" compare equal.
        if values:
            table[slice_type] = values
        else:
            table.pop(slice_type, None)

    # -- reducers and events ------------------------------------------------

    def register_reducer(
        self,
        slice_type: type[S],
        event_type: type[E],
        reducer: Reducer[S, E],
        *,
        policy: SlicePolicy = SlicePolicy.STATE,
    ) -> None:
        """Run ``reducer`` on ``slice_type`` for each dispatched ``event_type``.

        A slice has at most one reducer per event type: registering again
        replaces the previous one, so an event is never applied twice to the
        same slice. The reducer also runs for the value of every successful
        ``ToolInvoked`` whose value is an ``event_type``.
        """
        for what, tp in (("slice_type", slice_type), ("event_type", event_type)):
            if not isinstance(tp, type):
                raise TypeError(f"register_reducer: {what} must be a class, got {tp!r}")
        if not callable(reducer):
            raise TypeError(f"register_reducer: reducer for {slice_type.__name__} is not callable")
        slice_key = cast("type[object]", slice_type)
        event_key = cast("type[object]", event_type)
        any_reducer = cast(_AnyReducer, reducer)
        with self._lock:
            if self._closed:
                raise ConfigurationError(f"session {self._session_id} is closed")
            self.set_policy(slice_key, policy)
            is_log = policy is SlicePolicy.LOG
            handlers = [_ReducerHandler(self, slice_key, event_key, any_reducer, unwrap=False, is_log=is_log)]
            # A reducer on ToolInvoked or one of its bases already sees the event
            # itself; feeding it the value too would apply one call twice.
            if not issubclass(ToolInvoked, event_key):
                handlers.append(
                    _ReducerHandler(self, slice_key, event_key, any_reducer, unwrap=True, is_log=is_log)
                )
            self._unsubscribe((slice_key, event_key))
            self._handlers[(slice_key, event_key)] = tuple(handlers)
            for handler in handlers:
                self._bus.subscribe(ToolInvoked if handler.unwrap else event_key, handler, name=handler.name)

    def _unsubscribe(self, key: tuple[type[object], type[object]]) -> None:
        for handler in self._handlers.pop(key, ()):
            handler.active = False
            self._bus.unsubscribe(ToolInvoked if handler.unwrap else handler.event_type, handler)

    def _reduce(self, handler: _ReducerHandler, event: object) -> None:
        """Apply one reducer atomically; on any error the slice is untouched."""
        slice_type = handler.slice_type
        with self._lock:
            if not handler.active:
                return  # replaced or closed while the event was in flight
            log = self._log_slice(slice_type) if handler.is_log else None
            if log is not None and handler.reducer is append:
                log.extend((event,))  # the common case, O(1)
                return
            new = handler.reducer(self._state.get(slice_type, ()) if log is None else log.view(), event)
            if not isinstance(new, tuple):
                raise TypeError(f"{handler.name} returned {type(new).__name__}, expected a tuple")
            if log is None:
                self._store(self._state, slice_type, new)
            else:
                log.replace(new)

    def dispatch(self, event: object) -> DispatchResult:
        """Publish ``event`` on the session's bus (reducers included)."""
        return self._bus.dispatch(event)

    def close(self) -> None:
        """Unsubscribe the session's reducers from the bus; state stays readable."""
        with self._lock:
            for key in list(self._handlers):
                self._unsubscribe(key)
            self._closed = True

    # -- snapshots ------------------------------------------------------------

    def snapshot(self) -> SessionSnapshot:
        """Capture every STATE slice; costs one copy of the slice table."""
        with self._lock:
            return SessionSnapshot(self._session_id, MappingProxyType(self._state.copy()))

    def restore(self, snapshot: SessionSnapshot) -> None:
        """Put the STATE slices back exactly as captured; LOG slices are kept."""
        if not isinstance(snapshot, SessionSnapshot):
            raise TypeError(f"restore() takes a SessionSnapshot, got {type(snapshot).__name__}")
        if snapshot.session_id != self._session_id:
            raise SnapshotMismatchError(
                f"snapshot of session {snapshot.session_id} cannot restore session {self._session_id}"
            )
        with self._lock:
            state = snapshot.slices.copy()
            # A slice that became LOG after the snapshot keeps its log.
            for slice_type in self._log_types:
                state.pop(slice_type, None)
            self._state = state

    # -- forks ------------------------------------------------------------------

    def fork(self) -> SessionFork:
        """A private copy that records what is done to it, for :meth:`merge` later.

        Concurrent tool calls each run on their own fork of the state before
        the batch, so one call's rollback never undoes another's work. The
        fork has the same id, clock, reducers and state, but its own
        bus: events dispatched on it reach its reducers (so the call
        reads its own writes) and are recorded, not seen by this session's
        subscribers until the fork is merged.
        """
        return SessionFork(self)

    def merge(self, fork: SessionFork) -> tuple[DispatchResult, ...]:
        """Replay ``fork``'s recorded operations on this session, in order.

        Slice writes are written again and events are dispatched on this
        session's bus (so its reducers and subscribers see them now).
        The session then equals what it would be had the fork's work been
        done on it directly, from its state at that point. Returns the
        results of the dispatches, for their subscriber errors.
        """
        if fork.parent is not self:
            raise SnapshotMismatchError(
                f"a fork of session {fork.parent.session_id} cannot be merged into another session object"
            )
        results: list[DispatchResult] = []
        for operation in fork.operations:
            if isinstance(operation, SliceWrite):
                self._write(operation.slice_type, operation.values, replace=operation.replace)
            else:
                results.append(self.dispatch(operation.event))
        return tuple(results)


class SessionFork(Session):
    """A session copied from ``parent`` that records every change made to it (see :meth:`Session.fork`)."""

    def __init__(self, parent: Session) -> None:
        super().__init__(EventBus(), session_id=parent.session_id, clock=parent.clock)
        self._parent = parent
        self._operations: list[SessionOperation] = []
        recorder = f"fork of session {parent.session_id}: recorder"
        self._bus.subscribe_all(_ForkRecorder(self), name=recorder)
        with parent._lock:  # pyright: ignore[reportPrivateUsage]
            registered = [
                (key, handlers[0].reducer)
                for key, handlers in parent._handlers.items()  # pyright: ignore[reportPrivateUsage]
            ]
            for slice_type, policy in parent._policies.items():  # pyright: ignore[reportPrivateUsage]
                self.set_policy(slice_type, policy)
            self._state = dict(parent._state)  # pyright: ignore[reportPrivateUsage]
            self._log = {
                tp: _LogSlice(log.view())
                for tp, log in parent._log.items()  # pyright: ignore[reportPrivateUsage]
            }
        for (slice_type, event_type), reducer in registered:
            self.register_reducer(slice_type, event_type, reducer, policy=self.policy_of(slice_type))

    @property
    def parent(self) -> Session:
        return self._parent

    @property
    def operations(self) -> tuple[SessionOperation, ...]:
        """What was done to the fork so far, oldest first."""
        with self._lock:
            return tuple(self._operations)

    def _record_event(self, event: object) -> None:
        with self._lock:
            self._operations.append(DispatchedEvent(event))

    def _write(self, slice_type: type[object], values: tuple[object, ...], *, replace: bool) -> None:
        with self._lock:
            super()._write(slice_type, values, replace=replace)
            self._operations.append(SliceWrite(slice_type, values, replace))


class _ForkRecorder:
    """The fork's subscription that records each event; weak, like :class:`_ReducerHandler`."""

    __slots__ = ("fork_ref",)

    def __init__(self, fork: SessionFork) -> None:
        self.fork_ref = weakref.ref(fork)

    def __call__(self, event: object) -> None:
        fork = self.fork_ref()
        if fork is not None:
            fork._record_event(event)  # pyright: ignore[reportPrivateUsage]


def _new_session_id() -> str:
    import uuid  # here, not at the top: an agent's imports need not load uuid

    return str(uuid.uuid4())
