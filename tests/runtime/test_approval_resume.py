"""Resume a paused run from the store: in another process, on SQLite and PostgreSQL; tokens; races.

specs/APPROVAL.md. The PostgreSQL cases use the server named by
WEAKPROMPT_PG_URL (see tests/store/test_store_postgres.py): they skip without it,
and fail under CI.
"""

from __future__ import annotations

import os
import subprocess
import sys
import threading
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from sqlalchemy import inspect, text

from approval_support import adapter_after_pause, make_prompt, script
from weakprompt.adapters.testing import ScriptedAdapter
from weakprompt.clock import FakeClock
from weakprompt.runtime import (
    Approve,
    Decision,
    Deny,
    PausedRun,
    ResumeError,
    approval_token,
    evaluate,
    paused_run,
    resume_sync,
)
from weakprompt.session import Session
from weakprompt.store import LATEST_VERSION, MIGRATIONS, Store, pause_rows, tables
from weakprompt.store.engine import WRITE_OPTION, build_engine, normalize_url
from weakprompt.store.migrations import migrate
from weakprompt.transcript import Transcript

ROOT = Path(__file__).resolve().parents[2]


def messages(store: Store, session_id: str) -> list[tuple[str, str, str | None, bool]]:
    compiled = Transcript(store, session_id).compile()
    return [(m.role, m.content, m.tool_call_id, m.is_error) for m in compiled.messages]


def pause(store: Store, session_id: str = "s1") -> PausedRun:
    response = evaluate(
        make_prompt(),
        adapter=ScriptedAdapter(script()),
        session=Session(session_id=session_id),
        store=store,
        input="Tidy /tmp.",
    )
    assert response.paused is not None
    return response.paused


def decide(paused: PausedRun) -> list[Decision]:
    first, second = paused.pending
    return [
        Approve(first.call_id, first.token, {"path": "/tmp/edited.txt"}),
        Deny(second.call_id, second.token, "no"),
    ]


RESUME_SCRIPT = """
import sys
from approval_support import adapter_after_pause, make_prompt
from weakprompt.runtime import Approve, Deny, paused_run, resume_sync
from weakprompt.store import Store

with Store.open(sys.argv[1]) as store:
    paused = paused_run(store, "s1")
    first, second = paused.pending
    decisions = [
        Approve(first.call_id, first.token, {"path": "/tmp/edited.txt"}),
        Deny(second.call_id, second.token, "no"),
    ]
    response = resume_sync(
        store, "s1", decisions, prompt=make_prompt(), adapter=adapter_after_pause(), decided_by="ops"
    )
    print(response.text)
"""


def run_script(code: str, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT / "src"), str(ROOT / "tests" / "support")])}
    return subprocess.run(
        [sys.executable, "-c", code, *args], capture_output=True, text=True, env=env, timeout=120, check=False
    )


def test_pause_here_resume_in_another_process_equals_inline_decisions(
    backend_url: str,
    tmp_path: Path,
) -> None:
    with Store.open(tmp_path / "inline.db") as inline_store:
        evaluate(
            make_prompt(),
            adapter=ScriptedAdapter(script()),
            session=Session(session_id="s1"),
            store=inline_store,
            input="Tidy /tmp.",
            approve=decide,
        )
        inline = messages(inline_store, "s1")
    with Store.open(backend_url) as store:
        pause(store)
    done = run_script(RESUME_SCRIPT, backend_url)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "Done."
    with Store.open(backend_url) as store:
        assert messages(store, "s1") == inline
        assert paused_run(store, "s1") is None


def snapshot(store: Store) -> dict[str, list[tuple[object, ...]]]:
    with store.read() as conn:
        return {
            t.name: sorted((tuple(r) for r in conn.execute(t.select())), key=repr)
            for t in tables.metadata.sorted_tables
        }


TAMPERINGS = st.sampled_from(
    ["token_char", "other_session", "other_args", "other_call", "missing", "twice", "stored_args"]
)


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(how=TAMPERINGS, index=st.integers(0, 1), position=st.integers(0, 63))
def test_tampered_decisions_are_refused_and_nothing_is_written(
    tmp_path: Path, how: str, index: int, position: int
) -> None:
    path = tmp_path / f"tamper-{how}-{index}-{position}.db"
    path.unlink(missing_ok=True)
    with Store.open(path) as store:
        paused = pause(store)
        decisions: list[Decision] = [Approve(p.call_id, p.token) for p in paused.pending]
        target = paused.pending[index]
        schema = target.schema_hash
        if how == "token_char":
            flipped = "0" if target.token[position] != "0" else "1"
            decisions[index] = Approve(
                target.call_id, target.token[:position] + flipped + target.token[position + 1 :]
            )
        elif how in ("other_session", "other_args"):
            with store.read() as conn:
                store_id = pause_rows.store_id(conn)
            other = how == "other_session"
            token = approval_token(
                store_id=store_id,
                session_id="s2" if other else "s1",
                seq=paused.seq,
                call_id=target.call_id,
                schema_hash=schema,
                arguments=target.arguments if other else {"path": f"/{position}"},
                key=None,
            )
            decisions[index] = Approve(target.call_id, token)
        elif how == "other_call":
            decisions[index] = Approve(f"x{position}", target.token)
        elif how == "missing":
            del decisions[index]
        elif how == "twice":
            decisions.append(decisions[index])
        else:  # someone edits the stored arguments: the stored token no longer matches them
            with store.write() as conn:
                row = conn.execute(tables.paused_runs.select()).mappings().one()
                conn.execute(
                    tables.paused_runs.update().values(
                        pending_json=row["pending_json"].replace("/tmp/a.txt", "/etc/passwd")
                    )
                )
        before = snapshot(store)
        with pytest.raises(ResumeError):
            resume_sync(store, "s1", decisions, prompt=make_prompt(), adapter=adapter_after_pause())
        assert snapshot(store) == before


def test_concurrent_resumes_exactly_one_wins(backend_url: str) -> None:
    path = backend_url
    with Store.open(path) as store:
        paused = pause(store)
    outcomes: list[str] = []
    barrier = threading.Barrier(4)

    def contender() -> None:
        with Store.open(path) as mine:
            barrier.wait()
            try:
                resume_sync(mine, "s1", decide(paused), prompt=make_prompt(), adapter=adapter_after_pause())
                outcomes.append("won")
            except ResumeError as exc:
                assert "already" in str(exc)
                outcomes.append("refused")

    threads = [threading.Thread(target=contender) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert sorted(outcomes) == ["refused", "refused", "refused", "won"]
    with Store.open(path) as store:
        results = [m for m in messages(store, "s1") if m[0] == "tool"]
        assert [m[2] for m in results] == ["c1", "c2", "c3"]


def test_version_4_adds_the_pause_tables_and_keeps_old_data(tmp_path: Path) -> None:
    path = tmp_path / "v3.db"
    engine = build_engine(normalize_url(path))
    try:
        with engine.connect() as conn:
            conn.execution_options(**{WRITE_OPTION: True})
            with conn.begin():
                assert migrate(conn, FakeClock(), migrations=MIGRATIONS[:3]) == (0, 3)
                conn.execute(text("INSERT INTO blobs VALUES ('h', 'x', 1, 'now')"))
            assert "paused_runs" not in inspect(conn).get_table_names()
    finally:
        engine.dispose()
    assert MIGRATIONS[3].version == 4 and "paused_runs" in MIGRATIONS[3].description
    with Store.open(path) as store:
        assert store.schema_version == LATEST_VERSION
        with store.read() as conn:
            assert {"paused_runs", "run_journal"} <= set(inspect(conn).get_table_names())
            assert conn.execute(text("SELECT content FROM blobs WHERE hash = 'h'")).scalar_one() == "x"
        pause(store)
        assert paused_run(store, "s1") is not None


def test_max_turns_caps_the_whole_run_not_each_resumption_of_it(tmp_path: Path) -> None:
    from weakprompt.errors import MaxTurnsExceededError

    store = Store.open(str(tmp_path / "runs.db"))
    paused = pause(store)  # one model call made before the pause
    with pytest.raises(MaxTurnsExceededError):
        resume_sync(
            store, "s1", decide(paused), prompt=make_prompt(), adapter=adapter_after_pause(), max_turns=1
        )
    # the decided calls ran and their turn is stored; the answer still needs a second model call
    assert [m[0] for m in messages(store, "s1")][-3:] == ["tool", "tool", "tool"]
    response = resume_sync(store, "s1", prompt=make_prompt(), adapter=adapter_after_pause(), max_turns=2)
    assert response.text == "Done." and response.turns == 1


def test_a_pause_stored_before_turns_were_kept_counts_none() -> None:
    from weakprompt.runtime.resumption import RunContext

    assert RunContext.from_json({"turn_start": None, "expanded": []}).turns == 0
    for hostile in (True, -3, "2", 1.5):
        assert RunContext.from_json({"turns": hostile}).turns == 0
    assert RunContext.from_json(RunContext(turns=4).to_json()) == RunContext(turns=4)
