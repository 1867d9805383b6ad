"""The cache-bust detector: one ``CacheBusted`` per request whose prefix differs from the last one's.

Every run writes a real SQLite file; the previous fingerprint comes from memory within a run, from the
last reply's commit across runs of a session, and from another session of the same template at a
session's first request.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pytest

from weakprompt import Agent, Store
from weakprompt.adapters.testing import FunctionAdapter, ScriptedAdapter, tool_call, tool_call_turn
from weakprompt.canonical import content_hash
from weakprompt.clock import FakeClock
from weakprompt.events import CacheBusted, CacheBustKind
from weakprompt.messages import AssistantTurn, Message
from weakprompt.model import TURN_CONTEXT_KEY, CompiledContext, ModelRequest
from weakprompt.model_settings import ModelSettings
from weakprompt.prompt import MarkdownSection, Prompt, PromptTemplate
from weakprompt.prompt.volatility import Volatility
from weakprompt.runtime.cache_prefix import (
    CACHE_BUST_KEY,
    CACHE_PREFIX_KEY,
    Fingerprint,
    PrefixWatch,
    first_difference,
    latest_fingerprint,
)
from weakprompt.session import Session
from weakprompt.tools import AnyTool, tool
from weakprompt.transcript import CommitOperation, Transcript, compress_tool_calls
from weakprompt.transcript.provenance import SUMMARIZED_FROM


@dataclass(frozen=True)
class Status:
    step: str


@tool
def lookup(city: str) -> str:
    """Look a city up."""
    return f"{city}: sunny"


@tool(name="lookup")
def lookup_v2(city: str, country: str = "") -> str:
    """Look a city up (now with a country)."""
    return f"{city}, {country}: sunny"


@tool
def clock() -> str:
    """The time."""
    return "noon"


def _template(*, role: str = "You help.", tools: tuple[AnyTool, ...] = (lookup,), plan: Volatility = "turn"):
    return PromptTemplate[None](
        ns="tests",
        key="cachebust",
        sections=[
            MarkdownSection(title="Role", key="role", template=role, tools=tools),
            MarkdownSection[Status](
                title="Plan", key="plan", template="Step ${step}", params_type=Status, volatility=plan
            ),
        ],
    )


def _model(request: ModelRequest) -> AssistantTurn | str:
    """Calls ``lookup`` once per user message, then answers."""
    last = [m for m in request.context.messages if not m.metadata.get(TURN_CONTEXT_KEY)][-1]
    if last.role == "user":
        return tool_call_turn(tool_call("lookup", {"city": "Oslo"}, id=f"c{len(request.context.messages)}"))
    return "done"


class Runner:
    """Runs agents on one store and collects every ``CacheBusted`` they publish."""

    def __init__(self, store: Store) -> None:
        self.store = store
        self.busts: list[CacheBusted] = []
        self.adapter = FunctionAdapter(_model)

    def run(
        self,
        template: PromptTemplate[None] | None = None,
        *,
        step: str = "1",
        session: str = "s",
        settings: ModelSettings | None = None,
    ) -> list[CacheBusted]:
        before = len(self.busts)
        live = Session(session_id=session)
        live.bus.subscribe(CacheBusted, self.busts.append)
        agent = Agent(self.adapter, template=template or _template(), store=self.store)
        options = {} if settings is None else {"model_settings": settings}
        agent.run_sync("weather?", params=[Status(step)], session=live, **options)  # type: ignore[arg-type]
        return self.busts[before:]


@pytest.fixture
def runner(tmp_path: Path):
    with Store.open(tmp_path / "runs.db") as store:
        yield Runner(store)


def _replies(store: Store, session: str = "s") -> list[dict[str, object]]:
    return [dict(c.metadata) for c in Transcript(store, session).log() if c.role == "assistant"]


def test_appending_turns_is_not_a_bust_and_every_reply_records_its_fingerprint(runner: Runner) -> None:
    assert runner.run() == []
    assert runner.run() == []  # a second run of the session: the conversation grew at its end
    replies = _replies(runner.store)
    assert len(replies) == 4
    prints = [Fingerprint.from_json(r[CACHE_PREFIX_KEY]) for r in replies]  # type: ignore[arg-type]
    assert all(p is not None for p in prints)
    assert all(CACHE_BUST_KEY not in r for r in replies)
    lengths = [len(p.messages) for p in prints if p is not None]
    assert lengths == sorted(lengths) and lengths[0] < lengths[-1]


def test_a_turn_section_changing_every_run_is_not_a_bust(runner: Runner) -> None:
    runner.run(step="1")
    assert runner.run(step="2") == []


def test_a_stable_section_change_names_the_section_and_both_hashes(runner: Runner) -> None:
    runner.run(step="1", template=_template(plan="stable"))
    (bust,) = runner.run(step="2", template=_template(plan="stable"))
    assert (bust.kind, bust.cause, bust.name) == ("section", "changed", "plan")
    assert bust.old_hash and bust.new_hash and bust.old_hash != bust.new_hash
    assert bust.position == 1 and bust.previous_session is None
    assert "section 'plan' changed" in bust.describe()
    recorded = _replies(runner.store)[2][CACHE_BUST_KEY]
    assert recorded == bust.to_json()  # the reply answering the busted request keeps it


def test_a_tool_schema_change_names_the_tool(runner: Runner) -> None:
    runner.run()
    (bust,) = runner.run(template=_template(tools=(lookup_v2,)))
    assert (bust.kind, bust.cause, bust.name) == ("tool", "changed", "lookup")


@pytest.mark.parametrize(
    ("before", "after", "cause", "name"),
    [
        ((lookup,), (lookup, clock), "added", "clock"),
        ((lookup, clock), (lookup,), "removed", "clock"),
        ((lookup, clock), (clock, lookup), "moved", "clock"),
    ],
)
def test_tools_added_removed_or_moved_are_named(
    runner: Runner, before: tuple[AnyTool, ...], after: tuple[AnyTool, ...], cause: str, name: str
) -> None:
    runner.run(template=_template(tools=before))
    (bust,) = runner.run(template=_template(tools=after))
    assert (bust.kind, bust.cause, bust.name) == ("tool", cause, name)


def test_a_settings_change_is_named(runner: Runner) -> None:
    runner.run(settings=ModelSettings(temperature=0.1))
    (bust,) = runner.run(settings=ModelSettings(temperature=0.7))
    assert (bust.kind, bust.cause, bust.name) == ("settings", "changed", "model_settings")


def _first_result(store: Store) -> str:
    transcript = Transcript(store, "s")
    return next(c.hash for c in transcript.log() if c.role == "tool")


def test_an_edited_message_names_the_commit_it_replaced(runner: Runner) -> None:
    runner.run()
    target = _first_result(runner.store)
    transcript = Transcript(runner.store, "s")
    original = transcript.get(target).content
    edit = transcript.commit(
        Message("tool", "Oslo: cloudy", tool_call_id=original.tool_call_id, name=original.name),
        operation=CommitOperation.EDIT,
        edit_target=target,
    )
    (bust,) = runner.run()
    assert (bust.kind, bust.cause, bust.name, bust.commit) == ("message", "edited", target, edit.hash)
    assert bust.old_hash == target[:16] and bust.new_hash == edit.hash[:16]


def test_a_summarized_message_says_so(runner: Runner) -> None:
    runner.run()
    target = _first_result(runner.store)
    transcript = Transcript(runner.store, "s")
    original = transcript.get(target)
    transcript.commit(
        Message("tool", "sunny", tool_call_id=original.content.tool_call_id, name=original.content.name),
        operation=CommitOperation.EDIT,
        edit_target=target,
        metadata={SUMMARIZED_FROM: original.blob_hash},
    )
    (bust,) = runner.run()
    assert (bust.kind, bust.cause, bust.name) == ("message", "summarized", target)


def test_compacted_tool_calls_say_so(runner: Runner) -> None:
    runner.run()
    target = _first_result(runner.store)
    done = compress_tool_calls(Transcript(runner.store, "s"), [target], summarizer=ScriptedAdapter(["sunny"]))
    assert len(done.compressed) == 1
    (bust,) = runner.run()
    assert (bust.kind, bust.cause, bust.name) == ("message", "compacted", target)


def test_a_new_session_is_compared_with_the_last_of_its_template(runner: Runner) -> None:
    runner.run(session="first")
    assert runner.run(session="second") == []  # same sections, tools and settings: the prefix is shared
    (bust,) = runner.run(session="third", template=_template(role="You help, briefly."))
    assert (bust.kind, bust.cause, bust.name) == ("section", "changed", "role")
    assert bust.previous_session == "second"
    assert "compared with session 'second'" in bust.describe()


def test_a_resumed_session_reads_the_last_fingerprint_from_the_store(tmp_path: Path) -> None:
    path = tmp_path / "runs.db"
    with Store.open(path) as store:
        Runner(store).run(template=_template(plan="stable"))
    with Store.open(path) as store:  # a new process: nothing in memory
        runner = Runner(store)
        assert runner.run(template=_template(plan="stable")) == []
        (bust,) = runner.run(template=_template(plan="stable"), step="9")
    assert (bust.name, bust.previous_session) == ("plan", None)


def test_first_difference_ignores_messages_across_sessions_and_new_turns() -> None:
    old = Fingerprint("t", (("role", "a"),), (("x", "1"),), "s", (("c1", "d1"),))
    grown = Fingerprint("t", (("role", "a"),), (("x", "1"),), "s", (("c1", "d1"), ("c2", "d2")))
    shorter = Fingerprint("t", (("role", "a"),), (("x", "1"),), "s", ())
    other = Fingerprint("t", (("role", "a"),), (("x", "1"),), "s", (("c9", "d9"),))
    reshown = Fingerprint("t", (("role", "a"),), (("x", "1"),), "s", (("c1", "e1"),))
    assert first_difference(old, grown) is None
    assert first_difference(old, shorter) is None  # all that is sent now was sent before
    assert first_difference(old, other, messages=False) is None
    replaced = first_difference(old, other)
    assert replaced is not None and (replaced.cause, replaced.position, replaced.commit) == (
        "replaced",
        3,
        None,
    )
    shown = first_difference(old, reshown)
    assert shown is not None and (shown.cause, shown.name, shown.old_hash, shown.new_hash) == (
        "reshown",
        "c1",
        "d1",
        "e1",
    )


@pytest.mark.parametrize(
    "recorded",
    [
        None,
        "text",
        {"template": 1, "sections": [], "tools": [], "settings": "s", "messages": []},
        {"template": "t", "sections": [["a"]], "tools": [], "settings": "s", "messages": []},
        {"template": "t", "sections": [["a", 1]], "tools": [], "settings": "s", "messages": []},
        {"template": "t", "sections": "x", "tools": [], "settings": "s", "messages": []},
        {"template": "t", "sections": [], "tools": [], "settings": "s", "messages": ["nodot"]},
        {"template": "t", "sections": [], "tools": [], "settings": "s", "messages": "x"},
        {"template": "t", "sections": [], "tools": None, "settings": "s", "messages": []},
    ],
)
def test_a_damaged_recorded_fingerprint_is_ignored(recorded: object) -> None:
    assert Fingerprint.from_json(recorded) is None  # type: ignore[arg-type]


def test_a_tool_the_prompt_does_not_declare_is_hashed_from_its_schema_once() -> None:
    rendered = Prompt(_template()).bind(Status("1")).render()
    request = ModelRequest(context=CompiledContext(messages=()), tools=(*rendered.tools, clock))
    watch = PrefixWatch(look_in_store=False)
    with Store.open("sqlite://") as store:
        transcript = Transcript(store, "unit")
        for _ in range(2):
            watch.observe(transcript, rendered, request, ModelSettings(), prompt_name="p", clock=FakeClock())
            metadata, busted = watch.sent()
            assert busted is None
    recorded = Fingerprint.from_json(metadata[CACHE_PREFIX_KEY])
    assert recorded is not None
    assert [name for name, _ in recorded.tools] == ["lookup", "clock"]
    assert recorded.tools[1][1] == content_hash(clock.spec())[:16]
    assert watch.sent() == ({}, None)  # nothing pending: nothing to record


def test_the_store_lookup_skips_commits_that_only_mention_the_template(tmp_path: Path) -> None:
    with Store.open(tmp_path / "runs.db") as store:
        runner = Runner(store)
        runner.run(session="first")
        template = Fingerprint.from_json(_replies(store, "first")[0][CACHE_PREFIX_KEY])  # type: ignore[arg-type]
        assert template is not None
        Transcript(store, "decoy").assistant("ok", metadata={"note": template.template})
        with store.read() as conn:
            found = latest_fingerprint(conn, template.template, not_session="other")
            mine = latest_fingerprint(conn, template.template, not_session="first")
    assert found is not None and found[0] == "first"  # the decoy, newer, is passed over
    assert mine is None


@pytest.mark.parametrize(
    ("kind", "name", "words"),
    [
        ("tool", "lookup", "tool 'lookup' moved"),
        ("settings", "model_settings", "the model settings moved"),
        ("message", "a" * 64, f"message {'a' * 16} moved"),
    ],
)
def test_describe_names_each_kind(kind: CacheBustKind, name: str, words: str) -> None:
    event = CacheBusted(
        prompt_name="p",
        kind=kind,
        cause="moved",
        name=name,
        old_hash=None,
        new_hash="b",
        position=0,
        session_id="s",
        created_at=FakeClock().now(),
    )
    assert event.describe() == f"prompt cache busted: {words} (- -> b)"
    assert "commit" not in event.to_json() and "previous_session" not in event.to_json()


def test_a_last_reply_without_a_fingerprint_is_compared_with_nothing(runner: Runner) -> None:
    runner.run(template=_template(plan="stable"))
    transcript = Transcript(runner.store, "s")
    last = [c for c in transcript.log() if c.role == "assistant"][-1]
    transcript.commit(
        Message("assistant", "done, edited"), operation=CommitOperation.EDIT, edit_target=last.hash
    )
    # the edited reply keeps no fingerprint: not an older request's, nor another session's
    assert runner.run(template=_template(plan="stable"), step="2") == []


def test_the_store_lookups_work_on_each_backend(backend_url: str) -> None:
    """Across sessions (the metadata scan) and across processes (the last reply), SQLite and PostgreSQL."""
    with Store.open(backend_url) as store:
        Runner(store).run(session="first", template=_template(plan="stable"))
    with Store.open(backend_url) as store:
        runner = Runner(store)
        assert runner.run(session="first", template=_template(plan="stable")) == []
        (across,) = runner.run(session="second", template=_template(plan="stable"), step="2")
        (within,) = runner.run(session="second", template=_template(plan="stable"), step="3")
    assert (across.name, across.previous_session) == ("plan", "first")
    assert (within.name, within.previous_session) == ("plan", None)
