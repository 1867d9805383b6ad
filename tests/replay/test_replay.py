"""Replay: a recorded session re-run offline, each request checked, the first divergence named."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from replay_support import RAN, Answer, NoProvider, make_prompt, record, script
from weakprompt import Agent, Approve, Deny, Session, Store, ToolResult, Transcript, evaluate, tool
from weakprompt.adapters.testing import ScriptedAdapter, text_turn, tool_call, tool_call_turn
from weakprompt.errors import ConfigurationError, OutputValidationError
from weakprompt.messages import Message
from weakprompt.model import ModelSettings
from weakprompt.replay import RecordedTurn, ReplayAdapter, ReplayDivergence, replay, replay_sync
from weakprompt.runtime import resume_sync


@pytest.fixture(autouse=True)
def _fresh_log() -> None:
    RAN.clear()


def test_unchanged_replay_is_identical_and_calls_no_provider(tmp_path: Path) -> None:
    db = record(tmp_path / "rec.db")
    with Store.open(db) as store:
        before = [(c.hash, c.seq) for c in Transcript(store, "rec").log()]
        agent = Agent(NoProvider(), template=make_prompt().template)
        report = replay_sync(store, "rec", agent=agent)
        assert report.identical and report.divergence is None
        assert (report.turns, report.recorded_turns) == (2, 2)
        assert RAN == []  # stored results answered every call
        assert [(c.hash, c.seq) for c in Transcript(store, "rec").log()] == before  # the original untouched
        replayed = Transcript(report.replay_store, report.replay_session_id).compile().messages
        recorded = Transcript(store, "rec").compile().messages
        assert [(m.role, m.content, m.tool_calls) for m in replayed] == [
            (m.role, m.content, m.tool_calls) for m in recorded
        ]


def test_replay_is_async_and_records_into_the_session_asked_for(tmp_path: Path) -> None:
    db = record(tmp_path / "rec.db")
    with Store.open(db) as store:
        report = asyncio.run(replay(store, "rec", prompt=make_prompt().template, into="again", record=True))
        assert report.identical and report.replay_session_id == "again" and report.replay_store is store
        with pytest.raises(ConfigurationError, match="already exists"):
            asyncio.run(replay(store, "rec", prompt=make_prompt(), into="again", record=True))


def test_a_replay_writes_nothing_to_the_recorded_store_unless_asked_to_record(tmp_path: Path) -> None:
    db = record(tmp_path / "rec.db")
    with Store.open(db) as store:
        writes = store.write_count
        report = replay_sync(store, "rec", prompt=make_prompt(), into="again")
        assert report.identical and store.write_count == writes and store.session_ids() == ["rec"]
        assert report.replay_store is not store and report.replay_store.in_memory
        assert Transcript(report.replay_store, "again").head is not None
        again = replay_sync(store, "rec", prompt=make_prompt(), into="again")  # nothing stored to clash
        assert again.identical
        kept = replay_sync(store, "rec", prompt=make_prompt(), record=True)
        assert kept.replay_store is store and store.write_count > writes
        assert sorted(store.session_ids()) == sorted(["rec", kept.replay_session_id])


def test_tools_run_executes_the_handlers_again(tmp_path: Path) -> None:
    db = record(tmp_path / "rec.db")
    with Store.open(db) as store:
        report = replay_sync(store, "rec", prompt=make_prompt(), tools="run")
    assert report.identical
    assert sorted(RAN) == ["cup", "mug"]


def test_a_tool_that_now_answers_differently_is_a_message_divergence(tmp_path: Path) -> None:
    db = record(tmp_path / "rec.db")

    @tool(name="stock", description="Units in stock.")
    def stock(sku: str) -> ToolResult[int]:
        return ToolResult.ok(99)

    from weakprompt import MarkdownSection, Prompt, PromptTemplate

    sections = [
        MarkdownSection(title="Shop", key="shop", template="Answer stock questions.", tools=[stock]),
        MarkdownSection(title="Style", key="style", template="Be brief."),
    ]
    changed = Prompt(PromptTemplate(ns="tests", key="shop", sections=sections, output_type=Answer))
    with Store.open(db) as store:
        assert replay_sync(store, "rec", prompt=changed).identical  # stored results: the handler is not asked
        divergence = replay_sync(store, "rec", prompt=changed, tools="run").divergence
    assert divergence is not None
    assert (divergence.kind, divergence.turn, divergence.role, divergence.message_index) == (
        "message",
        2,
        "tool",
        3,
    )
    assert "99" in divergence.diff


MUTATIONS = ("section", "description", "schema", "output", "tool_added", "settings")


@dataclass(frozen=True)
class Schema2:
    total: int
    note: str


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    kind=st.sampled_from(MUTATIONS),
    word=st.text(alphabet="abcdefghijklmnopqrstuvwxyz", min_size=1, max_size=12),
)
def test_each_mutation_is_named_by_the_report(
    tmp_path_factory: pytest.TempPathFactory, kind: str, word: str
) -> None:
    db = record(tmp_path_factory.mktemp("m") / "rec.db")

    @tool(name=f"extra_{word}", description="Another tool.")
    def extra(x: int) -> ToolResult[int]:
        return ToolResult.ok(x)

    @tool(name="stock", description="Units in stock.")
    def stock_with_more(sku: str, warehouse: str = "main") -> ToolResult[int]:
        return ToolResult.ok(0)

    if kind == "section":
        changed = make_prompt(style=f"Be brief, {word}.")
    elif kind == "description":
        changed = make_prompt(description=f"Units in stock ({word}).")
    elif kind == "output":
        changed = make_prompt(output_type=Schema2)
    elif kind == "tool_added":
        changed = make_prompt(extra_tool=extra)
    elif kind == "settings":
        changed = make_prompt(model_settings=ModelSettings(seed=len(word)))
    else:
        from weakprompt import MarkdownSection, Prompt, PromptTemplate

        sections = [
            MarkdownSection(
                title="Shop", key="shop", template="Answer stock questions.", tools=[stock_with_more]
            ),
            MarkdownSection(title="Style", key="style", template="Be brief."),
        ]
        changed = Prompt(PromptTemplate(ns="tests", key="shop", sections=sections, output_type=Answer))
    with Store.open(db) as store:
        divergence = replay_sync(store, "rec", prompt=changed).divergence
    assert divergence is not None
    if kind == "section":
        assert (divergence.kind, divergence.section_path, divergence.turn) == ("section", "style", 1)
        assert divergence.section_hash == changed.render().sections[1].text_hash
        assert divergence.replayed_hash == divergence.section_hash
        assert divergence.recorded_hash == make_prompt().render().sections[1].text_hash
    elif kind in ("description", "schema"):
        assert (divergence.kind, divergence.tool_name, divergence.turn) == ("tool", "stock", 1)
        assert divergence.recorded_hash != divergence.replayed_hash
        assert ("description" if kind == "description" else "parameters") in divergence.diff
    elif kind == "output":
        assert (divergence.kind, divergence.turn) == ("output", 1)
        assert None is not divergence.recorded_hash != divergence.replayed_hash is not None
    elif kind == "settings":
        assert (divergence.kind, divergence.setting, divergence.turn) == ("settings", "seed", 1)
        assert divergence.summary == f"model setting 'seed' is {len(word)}; the recording used not set"
    else:
        assert (divergence.kind, divergence.tool_name) == ("tools", f"extra_{word}")


def test_raise_divergence_raises_the_typed_divergence(tmp_path: Path) -> None:
    db = record(tmp_path / "rec.db")
    with Store.open(db) as store, pytest.raises(ReplayDivergence) as raised:
        replay_sync(store, "rec", prompt=make_prompt(rules="Answer."), raise_divergence=True)
    assert raised.value.section_path == "shop"
    assert str(raised.value).startswith("turn 1: the text of section 'shop'")
    assert "section_hash:" in raised.value.describe()


def test_a_replay_that_raises_closes_its_private_store_and_never_the_given_one(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    db = record(tmp_path / "rec.db")
    with Store.open(db) as store:
        opened: list[Store] = []
        real_open = Store.open

        def spy(*args: object, **kwargs: object) -> Store:
            made = real_open(*args, **kwargs)  # type: ignore[arg-type]
            opened.append(made)
            return made

        monkeypatch.setattr(Store, "open", spy)
        with pytest.raises(ReplayDivergence):
            replay_sync(store, "rec", prompt=make_prompt(rules="Answer."), raise_divergence=True)
        assert len(opened) == 1 and opened[0].closed  # no report hands it out: closed at once

        async def broken(*args: object, **kwargs: object) -> None:
            raise RuntimeError("the run failed")

        monkeypatch.setattr("weakprompt.replay._replay.run_with", broken)
        with pytest.raises(RuntimeError, match="the run failed"):
            replay_sync(store, "rec", prompt=make_prompt())
        assert len(opened) == 2 and opened[1].closed
        with pytest.raises(RuntimeError, match="the run failed"):
            replay_sync(store, "rec", prompt=make_prompt(), record=True)
        assert len(opened) == 2 and not store.closed  # the caller's store is the caller's to close


def test_bad_calls_are_refused_with_what_was_wrong(tmp_path: Path) -> None:
    db = record(tmp_path / "rec.db")
    with Store.open(db) as store:
        with pytest.raises(ConfigurationError, match="exactly one of prompt= or agent="):
            replay_sync(store, "rec")
        with pytest.raises(ConfigurationError, match="tools must be"):
            replay_sync(store, "rec", prompt=make_prompt(), tools="again")  # type: ignore[arg-type]
        with pytest.raises(ConfigurationError, match="'nope' has no commits"):
            replay_sync(store, "nope", prompt=make_prompt())


def _approval_prompt(ran: list[str]):  # type: ignore[no-untyped-def]
    from weakprompt import MarkdownSection, Prompt, PromptTemplate

    @tool(name="delete_file", description="Delete a file.", requires_approval=True)
    def delete_file(path: str) -> ToolResult[str]:
        ran.append(path)
        return ToolResult.ok(f"deleted {path}")

    return Prompt(
        PromptTemplate(
            ns="tests",
            key="files",
            sections=[MarkdownSection(title="Files", key="files", template="Tidy up.", tools=[delete_file])],
        )
    )


def test_a_paused_and_resumed_session_replays_without_asking_again(tmp_path: Path) -> None:
    ran: list[str] = []
    calls = tool_call_turn(
        tool_call("delete_file", {"path": "/tmp/a"}, id="c1"),
        tool_call("delete_file", {"path": "/etc"}, id="c2"),
    )
    with Store.open(tmp_path / "p.db") as store:
        paused = evaluate(
            _approval_prompt(ran),
            adapter=ScriptedAdapter([calls]),
            session=Session(session_id="p"),
            store=store,
            input="clean",
        ).paused
        assert paused is not None
        tokens = {p.call_id: p.token for p in paused.pending}
        resume_sync(
            store,
            "p",
            [Approve("c1", tokens["c1"]), Deny("c2", tokens["c2"])],
            prompt=_approval_prompt(ran),
            adapter=ScriptedAdapter([text_turn("Done.")]),
        )
        assert ran == ["/tmp/a"]
        ran.clear()
        stored = replay_sync(store, "p", prompt=_approval_prompt(ran))
        assert stored.identical and stored.turns == 2 and ran == []
        again = replay_sync(store, "p", prompt=_approval_prompt(ran), tools="run")
        assert again.identical and ran == ["/tmp/a"]  # the approved call ran again, the denied one never


def test_the_adapter_reports_a_call_beyond_the_recording_and_a_missing_message() -> None:
    from weakprompt.model import CompiledContext, ModelRequest

    system = Message(role="system", content="S")
    recorded = RecordedTurn(
        (system, Message(role="user", content="hi")), (), Message(role="assistant", content="ok")
    )
    adapter = ReplayAdapter([recorded])
    assert (adapter.name, adapter.model, adapter.context_window, adapter.token_counter) == (
        "replay",
        "replay",
        None,
        None,
    )
    with pytest.raises(ReplayDivergence) as short:
        adapter.complete(ModelRequest(context=CompiledContext(messages=(system,))))
    assert (short.value.kind, short.value.message_index, short.value.role) == ("message", 1, "user")
    assert "lacks" in short.value.summary
    with pytest.raises(ReplayDivergence) as longer:
        adapter.complete(ModelRequest(context=CompiledContext(messages=(*recorded.messages, system))))
    assert "has message 2" in longer.value.summary
    turn = adapter.complete(ModelRequest(context=CompiledContext(messages=recorded.messages)))
    assert turn.text == "ok" and adapter.served == 1
    with pytest.raises(ReplayDivergence) as extra:
        adapter.complete(ModelRequest(context=CompiledContext(messages=recorded.messages)))
    assert (extra.value.kind, extra.value.turn) == ("turns", 2)


def _not_empty(answer: object) -> None:
    if isinstance(answer, Answer) and answer.total == 0:
        raise OutputValidationError("a total of 0 cannot be right")


def test_a_rejected_answer_replays_with_its_validator_and_ends_early_without(tmp_path: Path) -> None:
    replies = [
        tool_call_turn(tool_call("stock", {"sku": "mug"}, id="c1")),
        text_turn('{"total": 0}'),
        text_turn('{"total": 12}'),
    ]
    with Store.open(tmp_path / "v.db") as store:
        evaluate(
            make_prompt(),
            adapter=ScriptedAdapter(replies),
            session=Session(session_id="v"),
            store=store,
            input="Mugs?",
            output_validators=(_not_empty,),
        )
        agent = Agent(NoProvider(), template=make_prompt().template, output_validators=(_not_empty,))
        assert replay_sync(store, "v", agent=agent).identical  # the correction is not a new input
        early = replay_sync(store, "v", prompt=make_prompt()).divergence
    assert early is not None
    assert (early.kind, early.turn) == ("turns", 3)
    assert "after 2 model call(s); the recording has 3" in early.summary


def test_tools_run_awaits_an_async_handler(tmp_path: Path) -> None:
    from weakprompt import MarkdownSection, Prompt, PromptTemplate

    @tool(name="stock", description="Units in stock.")
    async def stock(sku: str) -> ToolResult[int]:
        RAN.append(f"async {sku}")
        return ToolResult.ok({"mug": 12, "cup": 3}[sku])

    sections = [
        MarkdownSection(title="Shop", key="shop", template="Answer stock questions.", tools=[stock]),
        MarkdownSection(title="Style", key="style", template="Be brief."),
    ]
    prompt = Prompt(PromptTemplate(ns="tests", key="shop", sections=sections, output_type=Answer))
    db = record(tmp_path / "rec.db")
    with Store.open(db) as store:
        assert replay_sync(store, "rec", prompt=prompt, tools="run").identical
    assert sorted(RAN) == ["async cup", "async mug"]


def test_the_adapter_streams_the_recorded_reply_and_names_fields_beyond_the_text() -> None:
    from weakprompt.model import CompiledContext, ModelRequest, ReplyCompleted

    tool_message = Message(role="tool", content="12", tool_call_id="c1", name="stock")
    recorded = RecordedTurn((tool_message,), (), Message(role="assistant", content="ok"))
    failed = Message(role="tool", content="12", tool_call_id="c1", name="stock", is_error=True)
    with pytest.raises(ReplayDivergence) as flag:
        ReplayAdapter([recorded]).complete(ModelRequest(context=CompiledContext(messages=(failed,))))
    assert flag.value.kind == "message" and '"is_error":true' in flag.value.diff

    async def events() -> list[object]:
        stream = ReplayAdapter([recorded]).stream(
            ModelRequest(context=CompiledContext(messages=(tool_message,)))
        )
        return [event async for event in stream]

    last = asyncio.run(events())[-1]
    assert isinstance(last, ReplyCompleted) and last.turn.text == "ok"


def test_a_system_text_outside_every_section_and_long_diffs() -> None:
    from weakprompt.replay._divergence import section_at, short_diff

    rendered = make_prompt().render()
    assert section_at(rendered, "Preamble\n## 1. Shop", "Other\n## 1. Shop") is None
    assert section_at(rendered, "no headings at all", "no headings here") is None
    many = short_diff("\n".join(str(i) for i in range(40)), "\n".join(str(i * 2) for i in range(40)))
    assert many.splitlines()[-1].startswith("... (") and len(many.splitlines()) == 13
    bare = ReplayDivergence(turn=2, kind="turns", summary="the run made model call 2; the recording has 1")
    assert bare.describe() == "turn 2: the run made model call 2; the recording has 1"


def test_a_system_message_differing_before_every_heading_is_named_as_a_message() -> None:
    from weakprompt.model import CompiledContext, ModelRequest

    recorded = RecordedTurn(
        (Message(role="system", content="Old preamble"),), (), Message(role="assistant", content="")
    )
    adapter = ReplayAdapter([recorded], render=lambda: make_prompt().render())
    with pytest.raises(ReplayDivergence) as raised:
        adapter.complete(
            ModelRequest(context=CompiledContext(messages=(Message(role="system", content="New"),)))
        )
    assert (raised.value.kind, raised.value.message_index, raised.value.section_path) == ("message", 0, None)


def test_settings_recorded_are_compared_and_an_agents_settings_are_used(tmp_path: Path) -> None:
    with Store.open(tmp_path / "t.db") as store:
        evaluate(
            make_prompt(),
            adapter=ScriptedAdapter(script()),
            session=Session(session_id="t"),
            store=store,
            input="How many?",
            model_settings=ModelSettings(temperature=0.5),
        )
        warm = Agent(
            NoProvider(), template=make_prompt().template, model_settings=ModelSettings(temperature=0.5)
        )
        assert replay_sync(store, "t", agent=warm).identical
        assert replay_sync(
            store, "t", prompt=make_prompt()
        ).identical  # set only in the recording: not known apart
        cold = Agent(
            NoProvider(), template=make_prompt().template, model_settings=ModelSettings(temperature=0.1)
        )
        divergence = replay_sync(store, "t", agent=cold).divergence
    assert divergence is not None and divergence.setting == "temperature"
    assert "is 0.1; the recording used 0.5" in divergence.summary
    assert "setting: temperature" in divergence.describe()


def test_a_session_of_two_runs_replays_each_input_in_order(tmp_path: Path) -> None:
    with Store.open(tmp_path / "two.db") as store:
        session = Session(session_id="two")
        for question in ("Mugs?", "And cups?"):
            evaluate(
                make_prompt(), adapter=ScriptedAdapter(script()), session=session, store=store, input=question
            )
        report = replay_sync(store, "two", prompt=make_prompt())
        assert report.identical and (report.turns, report.recorded_turns) == (4, 4)
        users = [
            m.content
            for m in Transcript(report.replay_store, report.replay_session_id).compile().messages
            if m.role == "user"
        ]
    assert users == ["Mugs?", "And cups?"]


def test_a_section_opened_during_the_run_replays_identically(tmp_path: Path) -> None:
    from loop_support import disclosure_prompt

    opened = tool_call("open_sections", {"section_keys": ["secrets"], "reason": "codes"}, id="open")
    replies = [
        tool_call_turn(opened),
        tool_call_turn(tool_call("secret_lookup", {"name": "vault"}, id="look")),
        text_turn("The code is 42."),
    ]
    with Store.open(tmp_path / "d.db") as store:
        evaluate(
            disclosure_prompt(),
            adapter=ScriptedAdapter(replies),
            session=Session(session_id="d"),
            store=store,
        )
        assert any(c.edit_target is not None for c in Transcript(store, "d").log())  # the system was edited
        report = replay_sync(store, "d", prompt=disclosure_prompt())
    assert report.identical, report.divergence and report.divergence.describe()
    assert report.turns == 3


def test_long_results_of_an_earlier_run_are_compared_as_the_later_run_sent_them(tmp_path: Path) -> None:
    from weakprompt import MarkdownSection, Prompt, PromptTemplate

    @tool(name="manual", description="The manual.")
    def manual(page: int) -> ToolResult[str]:
        return ToolResult.ok(f"page {page}: " + "lorem ipsum " * 200)

    def prompt() -> Prompt[str]:
        section = MarkdownSection(title="Help", key="help", template="Read the manual.", tools=[manual])
        return Prompt(PromptTemplate(ns="tests", key="manual", sections=[section]))

    with Store.open(tmp_path / "long.db") as store:
        session = Session(session_id="long")
        for page, question in ((1, "Page one?"), (2, "Page two?")):
            replies = [
                tool_call_turn(tool_call("manual", {"page": page}, id=f"m{page}")),
                text_turn("Read it."),
            ]
            evaluate(prompt(), adapter=ScriptedAdapter(replies), session=session, store=store, input=question)
        report = replay_sync(store, "long", prompt=prompt())
    assert report.identical, report.divergence and report.divergence.describe()
    assert report.turns == 4
