"""A sole writer's ledger: the same rows, numbers and dedup flags as asking the database every time.

An evaluation on the private store it made keeps count of its outputs
itself (``ToolOutputStore(sole_writer=True)``). Whatever it does (results
stored alone or with a turn, repeated calls and payloads, turns that fail
and roll back, a purge), it must store and report exactly what a store that
reads the database before each write does.
"""

from __future__ import annotations

from dataclasses import dataclass

from hypothesis import given, settings
from hypothesis import strategies as st

from weakprompt.runtime.results import ToolOutputStore
from weakprompt.runtime.results.store import StagedOutput
from weakprompt.store import Store
from weakprompt.transcript import Transcript


class Refused(Exception):
    pass


@dataclass(frozen=True)
class StoreAlone:
    call: str
    payload: str


@dataclass(frozen=True)
class InTurn:
    results: list[tuple[str, str]]
    fails: str  # "no", "in the block" (nothing is written), "in its transaction" (after the outputs)


class FailingWrite:
    """A row of the turn that cannot be written: its transaction rolls back after the outputs' rows."""

    def write(self, conn: object) -> None:
        raise Refused

    def committed(self) -> None:  # pragma: no cover - never committed
        raise AssertionError


@dataclass(frozen=True)
class Purge:
    pass


Op = StoreAlone | InTurn | Purge
calls = st.sampled_from(["c1", "c2", "c3", "c4"])
payloads = st.sampled_from(["sunny", "rain"])
operations: st.SearchStrategy[Op] = st.one_of(
    st.builds(StoreAlone, calls, payloads),
    st.builds(
        InTurn,
        st.lists(st.tuples(calls, payloads), min_size=1, max_size=3),
        st.sampled_from(["no", "in the block", "in its transaction"]),
    ),
    st.just(Purge()),
)


def _replay(ops: list[Op], *, sole_writer: bool) -> tuple[list[object], list[tuple[int, str, str, bool]]]:
    store = Store.open("sqlite://")
    outputs = ToolOutputStore(store, "s", sole_writer=sole_writer)
    transcript = Transcript(store, "s")
    seen: list[object] = []
    for op in ops:
        if isinstance(op, StoreAlone):
            ref = outputs.store_result(op.call, "weather", "{}", op.payload)
            seen.append((ref.seq, ref.deduplicated, ref.tool_call_id, ref.stored_hash))
        elif isinstance(op, InTurn):
            staged: list[StagedOutput] = []
            try:
                with transcript.turn() as turn:
                    for call, payload in op.results:
                        staged.append(outputs.stage(turn, outputs.prepare(call, "weather", "{}", payload)))
                        transcript.user(f"{call}: {payload}")
                    if op.fails == "in its transaction":
                        turn.attach(FailingWrite())
                    if op.fails == "in the block":
                        raise Refused
            except Refused:
                pass
            for item in staged:
                ref = item.reference
                seen.append(None if ref is None else (ref.seq, ref.deduplicated, ref.tool_call_id))
        else:
            seen.append(outputs.purge_session())
    rows = [(r.seq, r.tool_call_id, r.stored_hash, r.oversized) for r in outputs.list_results()]
    return seen, rows


@settings(max_examples=150, deadline=None)
@given(st.lists(operations, max_size=8))
def test_a_sole_writer_stores_and_reports_what_asking_the_database_would(ops: list[Op]) -> None:
    assert _replay(ops, sole_writer=True) == _replay(ops, sole_writer=False)
