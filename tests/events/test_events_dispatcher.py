"""The in-process EventBus: routing, failure collection, thread safety."""

from __future__ import annotations

import logging
import threading
from dataclasses import dataclass

import pytest
from hypothesis import given
from hypothesis import strategies as st

from weakprompt.errors import WeakpromptError
from weakprompt.events import DispatchResult, EventBus, EventHandlerError, HandlerFailure, publish


@dataclass(frozen=True)
class Base:
    n: int


@dataclass(frozen=True)
class Child(Base):
    pass


@dataclass(frozen=True)
class Other:
    text: str


def test_handler_receives_events_of_its_type_only() -> None:
    d = EventBus()
    seen: list[object] = []
    d.subscribe(Base, seen.append)
    d.dispatch(Base(1))
    d.dispatch(Other("x"))
    assert seen == [Base(1)]


def test_subclass_events_reach_base_class_handlers() -> None:
    d = EventBus()
    base_seen: list[Base] = []
    child_seen: list[Child] = []
    d.subscribe(Base, base_seen.append)
    d.subscribe(Child, child_seen.append)
    result = d.dispatch(Child(2))
    assert base_seen == [Child(2)]
    assert child_seen == [Child(2)]
    assert result.handlers_invoked == 2
    assert d.dispatch(Base(3)).handlers_invoked == 1


def test_subscribe_all_receives_every_event_and_unsubscribes_via_object() -> None:
    d = EventBus()
    seen: list[object] = []
    d.subscribe_all(seen.append)
    d.dispatch(Base(1))
    d.dispatch(Other("y"))
    d.dispatch(42)
    assert seen == [Base(1), Other("y"), 42]
    assert d.unsubscribe(object, seen.append)
    d.dispatch(Base(5))
    assert len(seen) == 3


def test_handlers_run_in_subscription_order() -> None:
    d = EventBus()
    order: list[str] = []
    d.subscribe(Base, lambda e: order.append("first"))
    d.subscribe(object, lambda e: order.append("second"))
    d.subscribe(Base, lambda e: order.append("third"))
    d.dispatch(Base(0))
    assert order == ["first", "second", "third"]


def test_subscribing_the_same_handler_twice_calls_it_once() -> None:
    d = EventBus()
    seen: list[Base] = []
    d.subscribe(Base, seen.append)
    d.subscribe(Base, seen.append)
    result = d.dispatch(Base(1))
    assert seen == [Base(1)]
    assert result.handlers_invoked == 1
    assert d.handler_count() == 1


def test_unsubscribe_reports_whether_it_removed_something() -> None:
    d = EventBus()
    seen: list[Base] = []
    d.subscribe(Base, seen.append)
    assert d.unsubscribe(Base, seen.append) is True
    assert d.unsubscribe(Base, seen.append) is False
    result = d.dispatch(Base(1))
    assert seen == []
    assert result.handlers_invoked == 0
    assert result.ok


def test_a_raising_handler_does_not_stop_the_others() -> None:
    d = EventBus()
    seen: list[Base] = []

    def broken(event: Base) -> None:
        raise ValueError(f"cannot handle {event.n}")

    d.subscribe(Base, broken)
    d.subscribe(Base, seen.append)
    result = d.dispatch(Base(7))
    assert seen == [Base(7)]
    assert not result.ok
    assert result.handlers_invoked == 2
    assert len(result.errors) == 1
    failure = result.errors[0]
    assert "broken" in failure.handler
    assert isinstance(failure.exception, ValueError)
    assert str(failure.exception) == "cannot handle 7"


def test_raise_if_errors_names_each_handler_and_chains_the_first() -> None:
    d = EventBus()

    def one(event: Base) -> None:
        raise KeyError("k")

    def two(event: Base) -> None:
        raise RuntimeError("r")

    d.subscribe(Base, one, name="handler-one")
    d.subscribe(Base, two, name="handler-two")
    result = d.dispatch(Base(1))
    with pytest.raises(EventHandlerError) as info:
        result.raise_if_errors()
    err = info.value
    assert isinstance(err, WeakpromptError)
    assert "handler-one" in str(err) and "handler-two" in str(err)
    assert "Base" in str(err)
    assert isinstance(err.__cause__, KeyError)
    assert [f.handler for f in err.failures] == ["handler-one", "handler-two"]
    assert err.event == Base(1)


def test_raise_if_errors_is_silent_when_all_handlers_succeed() -> None:
    result = DispatchResult(event=Base(1), handlers_invoked=3)
    assert result.ok
    result.raise_if_errors()


def test_base_exceptions_are_not_swallowed() -> None:
    d = EventBus()

    def interrupt(event: Base) -> None:
        raise KeyboardInterrupt

    d.subscribe(Base, interrupt)
    with pytest.raises(KeyboardInterrupt):
        d.dispatch(Base(1))


def test_bad_subscriptions_are_rejected_clearly() -> None:
    d = EventBus()
    with pytest.raises(TypeError, match="event_type must be a class"):
        d.subscribe("Base", print)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="not callable"):
        d.subscribe(Base, 3)  # type: ignore[arg-type]


def test_handler_name_falls_back_to_repr_for_callables_without_qualname() -> None:
    class Callable_:
        def __call__(self, event: object) -> None:
            raise ValueError("x")

        def __repr__(self) -> str:
            return "<my callable>"

    d = EventBus()
    d.subscribe(Base, Callable_())
    assert d.dispatch(Base(1)).errors[0].handler == "<my callable>"


def test_handlers_may_subscribe_and_dispatch_while_being_dispatched() -> None:
    d = EventBus()
    seen: list[object] = []

    def nested(event: Base) -> None:
        d.subscribe(Other, seen.append)
        d.dispatch(Other(f"from {event.n}"))

    d.subscribe(Base, nested)
    result = d.dispatch(Base(1))
    assert result.ok
    assert seen == [Other("from 1")]


def test_handler_count_per_type() -> None:
    d = EventBus()
    d.subscribe(Base, print)
    d.subscribe(object, repr)
    assert d.handler_count(Child) == 2
    assert d.handler_count(Other) == 1
    assert d.handler_count() == 2


@given(st.lists(st.sampled_from(["sub_base", "sub_all", "unsub_base", "unsub_all"]), max_size=20))
def test_dispatch_reaches_exactly_the_current_subscribers(ops: list[str]) -> None:
    d = EventBus()
    calls: list[str] = []

    def on_base(event: Base) -> None:
        calls.append("base")

    def on_all(event: object) -> None:
        calls.append("all")

    expected: set[str] = set()
    for op in ops:
        if op == "sub_base":
            d.subscribe(Base, on_base)
            expected.add("base")
        elif op == "sub_all":
            d.subscribe_all(on_all)
            expected.add("all")
        elif op == "unsub_base":
            assert d.unsubscribe(Base, on_base) == ("base" in expected)
            expected.discard("base")
        else:
            assert d.unsubscribe(object, on_all) == ("all" in expected)
            expected.discard("all")
        calls.clear()
        d.dispatch(Base(0))
        assert sorted(calls) == sorted(expected)
        # a publisher asking first learns exactly whether anyone would get it
        assert d.wants(Base) == bool(expected) == d.wants(Child)
        assert d.wants(Other) == ("all" in expected)


def test_concurrent_subscribe_and_dispatch_lose_no_subscription() -> None:
    d = EventBus()
    counts = [0] * 8
    lock = threading.Lock()
    barrier = threading.Barrier(8)

    def worker(index: int) -> None:
        def handler(event: Base) -> None:
            with lock:
                counts[index] += 1

        barrier.wait()
        d.subscribe(Base, handler)
        for _ in range(200):
            d.dispatch(Base(index))

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert d.handler_count(Base) == 8
    before = list(counts)
    result = d.dispatch(Base(99))
    assert result.handlers_invoked == 8
    assert [after - b for after, b in zip(counts, before, strict=True)] == [1] * 8
    # every handler saw at least its own worker's 200 dispatches
    assert all(c >= 201 for c in counts)


def test_handler_failure_is_a_frozen_value() -> None:
    failure = HandlerFailure("h", ValueError("v"))
    with pytest.raises(AttributeError):
        failure.handler = "other"  # type: ignore[misc]


def test_publish_logs_each_failing_subscriber_and_still_reaches_the_others(
    caplog: pytest.LogCaptureFixture,
) -> None:
    d = EventBus()
    seen: list[object] = []

    def broken(event: Base) -> None:
        raise RuntimeError("subscriber bug")

    d.subscribe(Base, broken, name="broken")
    d.subscribe(Base, seen.append, name="recorder")
    own = logging.getLogger("tests.publisher")
    with caplog.at_level(logging.ERROR):
        outcome = publish(d, Base(7), logger=own, about="for call c1")
    assert seen == [Base(7)]
    assert [f.handler for f in outcome.errors] == ["broken"]
    [record] = caplog.records
    assert record.name == "tests.publisher"
    assert record.getMessage() == "subscriber broken raised on Base for call c1"
    assert record.exc_info is not None and str(record.exc_info[1]) == "subscriber bug"


def test_publish_without_failures_logs_nothing_and_defaults_to_the_events_logger(
    caplog: pytest.LogCaptureFixture,
) -> None:
    d = EventBus()
    with caplog.at_level(logging.DEBUG):
        assert publish(d, Other("x")).ok
    assert caplog.records == []
    d.subscribe(Other, lambda event: 1 / 0, name="zero")
    with caplog.at_level(logging.ERROR):
        publish(d, Other("x"))
    [record] = caplog.records
    assert (record.name, record.getMessage()) == ("weakprompt.events", "subscriber zero raised on Other")
