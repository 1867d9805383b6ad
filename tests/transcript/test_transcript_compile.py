"""compile(): edit rules, the head-keyed incremental cache, determinism, transforms, other processes."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import attrs
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import weakprompt
from weakprompt.clock import FakeClock
from weakprompt.errors import TranscriptError
from weakprompt.messages import Message, ToolCall
from weakprompt.store import Store
from weakprompt.transcript import CompiledContext, CompileOptions, CompileView, Transcript
from weakprompt.transcript import transcript as transcript_module

TOOLS: list[dict[str, Any]] = [
    {"name": "a", "parameters": {"type": "object"}},
    {"type": "function", "function": {"name": "b", "parameters": {"type": "object"}}},
    {"name": "c", "input_schema": {"type": "object", "properties": {"x": {"type": "integer"}}}},
]


@pytest.fixture
def store(tmp_path: Path) -> Iterator[Store]:
    with Store.open(tmp_path / "c.db", clock=FakeClock()) as opened:
        yield opened


class FetchSpy:
    """Records how many commit rows each compile reads from the database."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.calls: list[tuple[int, int]] = []
        real = transcript_module.fetch_commits

        def spy(conn: Any, session_id: str, *, after_seq: int = -1) -> Any:
            rows = real(conn, session_id, after_seq=after_seq)
            self.calls.append((after_seq, len(rows)))
            return rows

        monkeypatch.setattr(transcript_module, "fetch_commits", spy)

    def rows_read(self) -> int:
        return sum(n for _, n in self.calls)


def test_empty_transcript_compiles_to_nothing(store: Store) -> None:
    assert Transcript(store, "s").compile() == CompiledContext(messages=())


def test_compile_after_one_append_reads_only_the_new_commit(
    store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    t = Transcript(store, "s")
    for i in range(50):
        t.user(f"m{i}")
    spy = FetchSpy(monkeypatch)
    cold = Transcript(store, "s")
    cold.compile()
    assert spy.rows_read() == 50
    spy.calls.clear()
    t.user("one more")  # written through another Transcript object
    compiled = cold.compile()
    assert spy.calls == [(49, 1)]
    assert compiled.messages[-1].content == "one more"
    assert len(compiled.messages) == 51


def test_own_appends_need_no_reads_at_all(store: Store, monkeypatch: pytest.MonkeyPatch) -> None:
    t = Transcript(store, "s")
    first = t.user("a")
    t.compile()
    spy = FetchSpy(monkeypatch)
    t.user("b")
    t.user("c", edit=first.hash)
    assert [m.content for m in t.compile().messages] == ["c", "b"]
    assert spy.calls == []


def test_unchanged_head_returns_the_cached_context(store: Store) -> None:
    t = Transcript(store, "s")
    t.user("a", tools=TOOLS)
    first = t.compile()
    assert t.compile() is first


def test_compile_recovers_from_a_state_that_does_not_continue(store: Store) -> None:
    t = Transcript(store, "s")
    t.user("a")
    t.compile()
    t._state = attrs.evolve(t._state, head="f" * 64)  # pyright: ignore[reportPrivateUsage]
    t._compiled = None  # pyright: ignore[reportPrivateUsage]
    t.user("b")
    assert [m.content for m in t.compile().messages] == ["a", "b"]


def test_edit_targeting_another_session_in_the_database_is_reported_as_damage(store: Store) -> None:
    foreign = Transcript(store, "other").user("x")
    t = Transcript(store, "s")
    own = t.user("mine")
    with store.write() as conn:
        conn.exec_driver_sql(
            "INSERT INTO commits VALUES (?, 's', 1, ?, 'EDIT', ?, 'user', ?, NULL, '{}', 1, ?)",
            ("e" * 64, own.hash, foreign.hash, own.blob_hash, own.created_at.isoformat()),
        )
    with pytest.raises(TranscriptError, match="damaged"):
        Transcript(store, "s").compile()


def test_messages_carry_commit_metadata(store: Store) -> None:
    t = Transcript(store, "s")
    t.user("x", metadata={"source": "cli"})
    assert t.compile().messages[0].metadata == {"source": "cli"}


def test_commit_hashes_align_with_messages(store: Store) -> None:
    t = Transcript(store, "s")
    a, b = t.user("a"), t.user("b")
    e = t.user("a2", edit=a.hash)
    assert t.compile().commit_hashes == (e.hash, b.hash)


# --- the transform seam -------------------------------------------------------------------------------


def shrink_tool_results(view: CompileView) -> CompileView:
    messages = [
        attrs.evolve(m, content=f"[result of {m.name} stored as {c.hash[:8]}]") if m.role == "tool" else m
        for m, c in zip(view.context.messages, view.commits, strict=True)
    ]
    return view.with_messages(messages)


def test_transforms_change_the_output_but_not_the_cache(store: Store) -> None:
    t = Transcript(store, "s")
    t.assistant("", tool_calls=[ToolCall("1", "grep", "{}")])
    result = t.tool_result("1", "grep", "x" * 4000)
    plain = t.compile()
    slim = t.compile(options=CompileOptions(transforms=(shrink_tool_results,)))
    assert slim.messages[1].content == f"[result of grep stored as {result.hash[:8]}]"
    assert slim.messages[1].tool_call_id == "1"
    assert slim.token_count < plain.token_count
    assert slim.token_count == plain.token_count - result.token_count + t.token_counter.count(
        slim.messages[1].content
    )
    assert t.compile() is plain


def test_transforms_compose_in_order(store: Store) -> None:
    t = Transcript(store, "s")
    t.user("abc")

    def upper(view: CompileView) -> CompileView:
        return view.with_messages([attrs.evolve(m, content=m.content.upper()) for m in view.context.messages])

    def exclaim(view: CompileView) -> CompileView:
        return view.with_messages(
            [attrs.evolve(m, content=m.content + "!!!!") for m in view.context.messages]
        )

    out = t.compile(options=CompileOptions(transforms=(upper, exclaim)))
    assert out.messages[0].content == "ABC!!!!"
    assert out.token_count == t.token_counter.count("ABC!!!!")


def test_transform_must_keep_positions(store: Store) -> None:
    t = Transcript(store, "s")
    t.user("a")
    with pytest.raises(TranscriptError, match="one message per position"):
        t.compile_view().with_messages([])


# --- determinism ----------------------------------------------------------------------------------------

_text = st.text(st.characters(codec="utf-8", exclude_categories=("Cs",)), max_size=20)
_op = st.one_of(
    st.tuples(st.just("user"), _text),
    st.tuples(st.just("system"), _text),
    st.tuples(st.just("assistant"), _text, st.lists(st.sampled_from(["a", "b", "c"]), max_size=2)),
    st.tuples(st.just("tool"), _text, st.booleans()),
    st.tuples(st.just("edit"), _text, st.integers(min_value=0)),
    st.tuples(st.just("tools"), st.lists(st.sampled_from(range(3)), max_size=3, unique=True) | st.none()),
    st.tuples(st.just("compile")),
)


def apply_ops(t: Transcript, ops: list[tuple[Any, ...]]) -> int:
    """Replays random operations; every "compile" step checks the incremental result there and then."""
    checked = 0
    calls = 0
    for op in ops:
        kind = op[0]
        if kind in ("user", "system"):
            getattr(t, kind)(op[1])
        elif kind == "assistant":
            calls += 1
            t.assistant(op[1], tool_calls=[ToolCall(f"id{calls}_{i}", n, "{}") for i, n in enumerate(op[2])])
        elif kind == "tool":
            t.tool_result(f"id{calls}_0", "a", op[1], is_error=op[2])
        elif kind == "edit":
            log = [c for c in t.log() if c.edit_target is None]
            if log:
                target = log[op[2] % len(log)]
                content = target.content
                t.commit(
                    attrs.evolve(content, content=op[1], metadata={}),
                    operation="EDIT",
                    edit_target=target.hash,
                )  # type: ignore[arg-type]
        elif kind == "tools":
            t.set_tools(None if op[1] is None else [TOOLS[i] for i in op[1]])
        else:
            compiled = t.compile()
            messages, hashes = reference_compile(t)
            assert (list(compiled.messages), list(compiled.commit_hashes)) == (messages, hashes)
            assert compiled == Transcript(t.store, t.session_id).compile()
            checked += 1
    return checked


def reference_compile(t: Transcript) -> tuple[list[Message], list[str]]:
    """Independent, naive fold over log(): the spec of compile()."""
    slots: list[Any] = []
    index: dict[str, int] = {}
    for commit in t.log():
        if commit.edit_target is None:
            index[commit.hash] = len(slots)
            slots.append(commit)
        else:
            slots[index[commit.edit_target]] = commit
    return [c.content for c in slots], [c.hash for c in slots]


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(_op, max_size=25))
def test_compile_is_deterministic_incremental_and_survives_reopening(
    tmp_path: Path, ops: list[tuple[Any, ...]]
) -> None:
    path = tmp_path / f"prop-{os.getpid()}-{id(ops)}.db"
    path.unlink(missing_ok=True)
    with Store.open(path, clock=FakeClock()) as store:
        t = Transcript(store, "p")
        apply_ops(t, ops)
        first = t.compile()
        assert t.compile() == first
        messages, hashes = reference_compile(t)
        assert list(first.messages) == messages
        assert list(first.commit_hashes) == hashes
        fresh = Transcript(store, "p").compile()  # a cold cache builds the same thing
        assert fresh == first
        assert fresh.token_count == first.token_count
        assert [m.metadata for m in fresh.messages] == [m.metadata for m in first.messages]
    with Store.open(path) as reopened:
        again = Transcript(reopened, "p").compile()
    assert again == first
    assert again.token_count == first.token_count
    assert again.to_openai_params() == first.to_openai_params()
    assert again.to_anthropic_params() == first.to_anthropic_params()
    path.unlink()


# --- other processes ----------------------------------------------------------------------------------

_WRITER = textwrap.dedent(
    """
    import sys
    from weakprompt.messages import ToolCall
    from weakprompt.store import Store
    from weakprompt.transcript import Transcript

    with Store.open(sys.argv[1]) as store:
        t = Transcript(store, sys.argv[2])
        t.set_tools([{"name": "grep", "parameters": {"type": "object"}}])
        t.system("sys")
        t.user("find main")
        t.assistant("", tool_calls=[ToolCall("g1", "grep", '{"p": "main"}')])
        r = t.tool_result("g1", "grep", "src/app.py:10 " + "é" * 100)
        t.tool_result("g1", "grep", "src/app.py:10", edit=r.hash)
        t.assistant("line 10")
    """
)

_READER = textwrap.dedent(
    """
    import json, sys
    from weakprompt.store import Store
    from weakprompt.transcript import Transcript

    with Store.open(sys.argv[1]) as store:
        t = Transcript(store, sys.argv[2])
        c = t.compile()
        print(json.dumps({"params": c.to_openai_params(), "hashes": list(c.commit_hashes),
                          "log": [x.hash for x in t.log()], "tokens": c.token_count}))
    """
)

_APPENDER = textwrap.dedent(
    """
    import sys
    from weakprompt.store import Store
    from weakprompt.transcript import Transcript

    with Store.open(sys.argv[1]) as store:
        t = Transcript(store, "shared")
        for i in range(int(sys.argv[3])):
            t.user(f"{sys.argv[2]}-{i}")
    """
)


def run_python(code: str, *args: str) -> str:
    src = str(Path(weakprompt.__file__).parent.parent)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([src, os.environ.get("PYTHONPATH", "")])}
    done = subprocess.run(
        [sys.executable, "-c", code, *args], capture_output=True, text=True, env=env, timeout=120, check=False
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_transcript_written_by_one_process_is_read_intact_by_another(tmp_path: Path) -> None:
    path = str(tmp_path / "shared.db")
    run_python(_WRITER, path, "s")
    with Store.open(path) as store:
        t = Transcript(store, "s")
        compiled = t.compile()
        assert [m.content for m in compiled.messages] == ["sys", "find main", "", "src/app.py:10", "line 10"]
        assert compiled.tools == ({"name": "grep", "parameters": {"type": "object"}},)
        assert len(t.log()) == 6
        assert t.log()[3].content.content == "src/app.py:10 " + "é" * 100
        t.user("thanks")  # and the other direction
        expected = {
            "params": t.compile().to_openai_params(),
            "hashes": list(t.compile().commit_hashes),
            "log": [x.hash for x in t.log()],
            "tokens": t.compile().token_count,
        }
    assert json.loads(run_python(_READER, path, "s")) == expected


def test_two_processes_appending_to_one_session_keep_the_chain_intact(tmp_path: Path) -> None:
    path = str(tmp_path / "race.db")
    Store.open(path).close()
    src = str(Path(weakprompt.__file__).parent.parent)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([src, os.environ.get("PYTHONPATH", "")])}
    procs = [
        subprocess.Popen([sys.executable, "-c", _APPENDER, path, name, "40"], env=env, stderr=subprocess.PIPE)
        for name in ("left", "right")
    ]
    for proc in procs:
        _, err = proc.communicate(timeout=120)
        assert proc.returncode == 0, err
    with Store.open(path) as store:
        log = Transcript(store, "shared").log()
    assert len(log) == 80
    assert [c.seq for c in log] == list(range(80))
    assert [c.parent for c in log] == [None] + [c.hash for c in log[:-1]]
    for side in ("left", "right"):
        mine = [c.content.content for c in log if c.content.content.startswith(side)]
        assert mine == [f"{side}-{i}" for i in range(40)]
