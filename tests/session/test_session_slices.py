"""Session slices, accessors, reducers and policies."""

from __future__ import annotations

import threading
from dataclasses import dataclass

import pytest
from hypothesis import given
from hypothesis import strategies as st

from weakprompt.clock import FakeClock
from weakprompt.errors import ConfigurationError
from weakprompt.events import EventBus
from weakprompt.session import Session, SlicePolicy, append, replace_latest, upsert_by


@dataclass(frozen=True)
class Note:
    text: str


@dataclass(frozen=True)
class Item:
    key: str
    value: int


@dataclass(frozen=True)
class AddItem:
    key: str
    value: int
    session_id: str | None = None


def test_defaults_give_each_session_its_own_id_and_dispatcher() -> None:
    a, b = Session(), Session()
    assert a.session_id != b.session_id
    assert a.bus is not b.bus
    clock = FakeClock()
    d = EventBus()
    s = Session(bus=d, session_id="fixed", clock=clock)
    assert (s.session_id, s.bus, s.clock) == ("fixed", d, clock)
    assert "fixed" in repr(s)


def test_accessor_reads_and_writes() -> None:
    s = Session()
    notes = s[Note]
    assert notes.all() == ()
    assert notes.latest() is None
    notes.append(Note("a"))
    notes.append(Note("b"))
    assert notes.all() == (Note("a"), Note("b"))
    assert notes.latest() == Note("b")
    assert notes.where(lambda n: n.text == "a") == (Note("a"),)
    assert len(notes) == 2
    assert notes.slice_type is Note
    assert "Note" in repr(notes)
    notes.seed([Note("x")])
    assert s[Note].all() == (Note("x"),)
    notes.clear()
    assert s[Note].all() == ()
    assert Note not in s.state()


def test_accessor_rejects_values_of_another_type() -> None:
    s = Session()
    s[Note].append(Note("keep"))
    with pytest.raises(TypeError, match=r"session\[Note\] only holds Note values, got Item"):
        s[Note].append(Item("k", 1))  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="got str"):
        s[Note].seed([Note("ok"), "not a note"])  # type: ignore[list-item]
    assert s[Note].all() == (Note("keep"),)


def test_getitem_requires_a_class() -> None:
    with pytest.raises(TypeError, match="takes a class"):
        Session()["Note"]  # type: ignore[index]


def test_builtin_append_reducer() -> None:
    s = Session()
    s.register_reducer(Note, Note, append)
    for text in "abc":
        assert s.dispatch(Note(text)).ok
    assert s[Note].all() == (Note("a"), Note("b"), Note("c"))


def test_builtin_replace_latest_reducer() -> None:
    s = Session()
    s.register_reducer(Note, Note, replace_latest)
    s.dispatch(Note("a"))
    s.dispatch(Note("b"))
    assert s[Note].all() == (Note("b"),)


def test_builtin_upsert_by_keeps_position_and_appends_new_keys() -> None:
    s = Session()
    s.register_reducer(Item, Item, upsert_by(lambda i: i.key))
    s.dispatch(Item("a", 1))
    s.dispatch(Item("b", 2))
    s.dispatch(Item("a", 3))
    assert s[Item].all() == (Item("a", 3), Item("b", 2))


@given(st.lists(st.tuples(st.sampled_from("abcde"), st.integers()), max_size=30))
def test_upsert_by_matches_a_dict_model(ops: list[tuple[str, int]]) -> None:
    reducer = upsert_by(lambda i: i.key)
    state: tuple[Item, ...] = ()
    model: dict[str, int] = {}
    for key, value in ops:
        state = reducer(state, Item(key, value))
        model[key] = value
    assert [(i.key, i.value) for i in state] == list(model.items())


def test_reducer_may_map_one_event_type_onto_another_slice() -> None:
    s = Session()

    def add(state: tuple[Item, ...], event: AddItem) -> tuple[Item, ...]:
        return (*state, Item(event.key, event.value))

    s.register_reducer(Item, AddItem, add)
    s.dispatch(AddItem("k", 5))
    assert s[Item].all() == (Item("k", 5),)
    assert s[AddItem].all() == ()


def test_registering_again_replaces_the_reducer_so_events_apply_once() -> None:
    s = Session()
    s.register_reducer(Note, Note, append)
    s.register_reducer(Note, Note, append)
    s.dispatch(Note("once"))
    assert s[Note].all() == (Note("once"),)
    s.register_reducer(Note, Note, replace_latest)
    s.dispatch(Note("two"))
    assert s[Note].all() == (Note("two"),)


def test_a_raising_reducer_leaves_the_slice_unchanged_and_is_reported() -> None:
    s = Session()
    s[Item].seed([Item("a", 1)])

    def explode(state: tuple[Item, ...], event: AddItem) -> tuple[Item, ...]:
        raise ValueError(f"refusing {event.key}")

    s.register_reducer(Item, AddItem, explode)
    result = s.dispatch(AddItem("b", 2))
    assert s[Item].all() == (Item("a", 1),)
    assert not result.ok
    (failure,) = result.errors
    assert isinstance(failure.exception, ValueError)
    assert "refusing b" in str(failure.exception)
    assert "explode" in failure.handler and "Item" in failure.handler and "AddItem" in failure.handler


def test_one_failing_reducer_does_not_block_another_slice() -> None:
    s = Session()

    def explode(state: tuple[Note, ...], event: Item) -> tuple[Note, ...]:
        raise RuntimeError("no")

    s.register_reducer(Note, Item, explode)
    s.register_reducer(Item, Item, append)
    result = s.dispatch(Item("a", 1))
    assert s[Item].all() == (Item("a", 1),)
    assert s[Note].all() == ()
    assert len(result.errors) == 1


def test_a_reducer_returning_a_non_tuple_is_an_error() -> None:
    s = Session()
    s[Note].append(Note("before"))

    def as_list(state: tuple[Note, ...], event: Note) -> tuple[Note, ...]:
        return [*state, event]  # type: ignore[return-value]

    s.register_reducer(Note, Note, as_list)
    result = s.dispatch(Note("after"))
    assert s[Note].all() == (Note("before"),)
    (failure,) = result.errors
    assert isinstance(failure.exception, TypeError)
    assert "returned list, expected a tuple" in str(failure.exception)


def test_reducer_returning_empty_tuple_empties_the_slice() -> None:
    s = Session()
    s[Note].append(Note("x"))
    s.register_reducer(Note, AddItem, lambda state, event: ())
    s.dispatch(AddItem("k", 1))
    assert s[Note].all() == ()
    assert s.state() == {}


def test_register_reducer_validates_arguments() -> None:
    s = Session()
    with pytest.raises(TypeError, match="slice_type must be a class"):
        s.register_reducer("Note", Note, append)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="event_type must be a class"):
        s.register_reducer(Note, None, append)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="not callable"):
        s.register_reducer(Note, Note, "append")  # type: ignore[arg-type]


def test_policies_default_to_state_and_cannot_change_once_set() -> None:
    s = Session()
    assert s.policy_of(Note) is SlicePolicy.STATE
    s.register_reducer(Note, Note, append, policy=SlicePolicy.LOG)
    assert s.policy_of(Note) is SlicePolicy.LOG
    s.register_reducer(Note, AddItem, lambda st_, ev: st_, policy=SlicePolicy.LOG)
    with pytest.raises(ConfigurationError, match="Note already has policy LOG; cannot change it to STATE"):
        s.register_reducer(Note, Item, lambda st_, ev: st_)


def test_setting_log_policy_moves_existing_values_out_of_state() -> None:
    s = Session()
    s[Note].append(Note("a"))
    assert Note in s.state()
    s.set_policy(Note, SlicePolicy.LOG)
    assert Note not in s.state()
    assert s[Note].all() == (Note("a"),)


def test_events_of_another_session_are_ignored_on_a_shared_dispatcher() -> None:
    d = EventBus()
    one = Session(bus=d, session_id="one")
    two = Session(bus=d, session_id="two")
    for s in (one, two):
        s.register_reducer(Item, AddItem, lambda st_, ev: (*st_, Item(ev.key, ev.value)))
    d.dispatch(AddItem("a", 1, session_id="one"))
    d.dispatch(AddItem("b", 2, session_id=None))
    assert one[Item].all() == (Item("a", 1), Item("b", 2))
    assert two[Item].all() == (Item("b", 2),)


def test_dispatching_on_the_dispatcher_directly_updates_the_session() -> None:
    s = Session()
    s.register_reducer(Note, Note, append)
    s.bus.dispatch(Note("direct"))
    assert s[Note].all() == (Note("direct"),)


def test_close_unsubscribes_reducers_but_keeps_state() -> None:
    d = EventBus()
    s = Session(bus=d)
    s.register_reducer(Note, Note, append)
    s.dispatch(Note("a"))
    s.close()
    assert d.handler_count() == 0
    s.dispatch(Note("b"))
    assert s[Note].all() == (Note("a"),)
    with pytest.raises(ConfigurationError, match="closed"):
        s.register_reducer(Note, Note, append)


def test_reducer_replaced_while_an_event_is_in_flight_is_not_applied() -> None:
    d = EventBus()
    s = Session(bus=d)
    calls: list[str] = []

    def old(state: tuple[Note, ...], event: Note) -> tuple[Note, ...]:
        calls.append("old")
        return (*state, event)

    def new(state: tuple[Note, ...], event: Note) -> tuple[Note, ...]:
        calls.append("new")
        return (*state, event)

    def swap(event: Note) -> None:
        s.register_reducer(Note, Note, new)
        d.unsubscribe(Note, swap)

    d.subscribe(Note, swap)  # runs before the session's reducer
    s.register_reducer(Note, Note, old)
    s.dispatch(Note("1"))  # swap replaces `old` mid-dispatch: `old` must not run
    assert calls == []
    assert s[Note].all() == ()
    s.dispatch(Note("2"))
    assert calls == ["new"]
    assert s[Note].all() == (Note("2"),)


def test_reducers_are_applied_atomically_across_threads() -> None:
    s = Session()
    s.register_reducer(Note, Note, append)
    barrier = threading.Barrier(4)

    def worker(index: int) -> None:
        barrier.wait()
        for n in range(250):
            s.dispatch(Note(f"{index}-{n}"))

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    values = s[Note].all()
    assert len(values) == 1000
    assert len(set(values)) == 1000


def test_log_slices_support_the_whole_accessor_and_custom_reducers() -> None:
    s = Session()
    s.set_policy(Note, SlicePolicy.LOG)
    log = s[Note]
    assert log.all() == ()
    log.append(Note("a"))
    log.append(Note("b"))
    first = log.all()
    assert first == (Note("a"), Note("b"))
    assert log.all() is first  # the tuple view is built once per change
    log.seed([Note("s")])
    assert log.all() == (Note("s"),)
    s.register_reducer(Note, AddItem, lambda st_, ev: (*st_[-1:], Note(ev.key)), policy=SlicePolicy.LOG)
    s.dispatch(AddItem("k", 1))
    s.dispatch(AddItem("m", 2))
    assert log.all() == (Note("k"), Note("m"))

    def explode(state: tuple[Note, ...], event: Item) -> tuple[Note, ...]:
        raise ValueError("no")

    s.register_reducer(Note, Item, explode, policy=SlicePolicy.LOG)
    assert not s.dispatch(Item("x", 1)).ok
    assert log.all() == (Note("k"), Note("m"))
    log.clear()
    assert log.all() == ()
    assert s.state() == {}


def test_many_log_appends_keep_every_event_in_order() -> None:
    s = Session()
    s.register_reducer(Note, Note, append, policy=SlicePolicy.LOG)
    for i in range(5000):
        s.dispatch(Note(str(i)))
    assert [n.text for n in s[Note].all()] == [str(i) for i in range(5000)]
