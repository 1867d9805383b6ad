"""Compaction in the loop: the window is kept, requests stay valid, originals come back by recall."""

from __future__ import annotations

import itertools

import pytest

from compaction_support import LongSession, make_lookup, request_problems, summarizer
from weakprompt import Agent, CompactionSettings
from weakprompt.adapters.testing import FunctionAdapter, ScriptedAdapter, estimate_usage, text_turn
from weakprompt.errors import ConfigurationError, ContextWindowExceededError
from weakprompt.events import CacheBusted, Compacted
from weakprompt.session import Session
from weakprompt.store import Store
from weakprompt.tokens import DEFAULT_TOKEN_COUNTER
from weakprompt.transcript import COMPACTION_KEY, CompileOptions, Transcript

WINDOW = 4096


def _run(store: Store, model: LongSession, settings: CompactionSettings, session: Session) -> Transcript:
    adapter = FunctionAdapter(model)
    agent = Agent(adapter, instructions="Look things up.", tools=[make_lookup()], max_turns=200)
    agent.run_sync("Go.", session=session, store=store, compaction=settings)
    return Transcript(store, session.session_id)


def test_long_tool_session_stays_under_the_window_with_valid_requests(store: Store) -> None:
    session = Session()
    seen: list[Compacted] = []
    session.bus.subscribe(Compacted, seen.append)
    model = LongSession(steps=30, recall_topics=("topic2",))
    settings = CompactionSettings(context_window=WINDOW, summarizer=summarizer(), keep_recent_turns=2)
    transcript = _run(store, model, settings, session)

    for request in model.requests:
        assert request_problems(request.context.messages) == []
        # What the provider counts (the test adapter's own estimate) plus the reserved reply fits.
        assert estimate_usage(request, text_turn("x"), DEFAULT_TOKEN_COUNTER).input_tokens + 1024 <= WINDOW
    tiers = {event.tier for event in seen}
    assert "slim" in tiers and "summary" in tiers
    assert all(e.tokens_after < e.tokens_before for e in seen)
    # The query API still sees every turn; the originals are in the chain.
    assert len(transcript.find_tool_turns(name="lookup")) == 30
    full = transcript.compile(options=CompileOptions(compacted=False))
    assert sum(m.role == "tool" and m.name == "lookup" for m in full.messages) == 30
    # The compacted view is what compile() gives, with the summary first after the system message.
    view = transcript.compile()
    assert view.messages[1].content.startswith("[Summary of the")
    assert "recall_history" in view.messages[1].content
    # recall_history brought the planted fact back.
    assert model.recalled and "TOPIC2-" in model.recalled[-1]
    summaries = [c for c in transcript.log() if (c.metadata.get(COMPACTION_KEY) or {}) != {}]
    assert summaries and all(c.metadata[COMPACTION_KEY]["covers"] for c in summaries)  # pyright: ignore[reportIndexIssue, reportArgumentType, reportCallIssue]


def test_boundary_moves_in_steps_so_most_turns_keep_the_prefix(store: Store) -> None:
    session = Session()
    seen: list[Compacted] = []
    session.bus.subscribe(Compacted, seen.append)
    model = LongSession(steps=60)
    settings = CompactionSettings(context_window=8192, summarizer=summarizer(), keep_recent_turns=2)
    _run(store, model, settings, session)
    assert seen
    requests = [r.context.messages for r in model.requests]
    kept = sum(before == after[: len(before)] for before, after in itertools.pairwise(requests))
    assert kept >= 0.6 * (len(requests) - 1)


def test_failed_summary_falls_back_to_a_drop_marker(store: Store) -> None:
    def broken(_request: object) -> str:
        raise RuntimeError("summarizer down")

    session = Session()
    seen: list[Compacted] = []
    session.bus.subscribe(Compacted, seen.append)
    model = LongSession(steps=20)
    settings = CompactionSettings(
        context_window=WINDOW, summarizer=FunctionAdapter(broken), keep_recent_turns=2, summary_tokens=64
    )
    transcript = _run(store, model, settings, session)
    assert "drop" in {e.tier for e in seen}
    drops = [c for c in transcript.log() if (c.metadata.get(COMPACTION_KEY) or {}).get("tier") == "drop"]  # pyright: ignore[reportAttributeAccessIssue, reportUnknownMemberType]
    assert any("summarizer down" in str(c.metadata[COMPACTION_KEY]) for c in drops)
    for request in model.requests:
        assert request_problems(request.context.messages) == []
    assert "left out to fit the context window" in transcript.compile().messages[1].content


def test_summarize_false_goes_straight_to_drop(store: Store) -> None:
    session = Session()
    seen: list[Compacted] = []
    session.bus.subscribe(Compacted, seen.append)
    _run(store, LongSession(steps=20), CompactionSettings(context_window=WINDOW, summarize=False), session)
    assert {e.tier for e in seen} <= {"slim", "drop"} and "drop" in {e.tier for e in seen}


def test_request_that_cannot_fit_raises_before_it_is_sent(store: Store) -> None:
    adapter = ScriptedAdapter([text_turn("never")])
    agent = Agent(adapter, instructions="x" * 4000)
    with pytest.raises(ContextWindowExceededError, match="context window is 512"):
        settings = CompactionSettings(context_window=512, reserve_output=100)
        agent.run_sync("hi", store=store, compaction=settings)
    assert len(adapter.requests) == 0


def test_compaction_without_a_known_window_is_refused_by_name(store: Store) -> None:
    agent = Agent(ScriptedAdapter(["x"]), instructions="hi")
    with pytest.raises(ConfigurationError, match="context_window"):
        agent.run_sync("hi", store=store, compaction=CompactionSettings())
    with pytest.raises(ConfigurationError, match="compaction must be"):
        agent.run_sync("hi", store=store, compaction="yes")  # pyright: ignore[reportArgumentType]


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"threshold": 0}, "threshold"),
        ({"threshold": 0.5, "target": 0.7}, "target"),
        ({"keep_recent_turns": 0}, "keep_recent_turns"),
        ({"context_window": 10}, "context_window"),
        ({"threshold": True}, "threshold"),
    ],
)
def test_compaction_settings_refuse_bad_values_by_name(kwargs: dict[str, object], match: str) -> None:
    with pytest.raises(ConfigurationError, match=match):
        CompactionSettings(**kwargs)  # pyright: ignore[reportArgumentType]


def test_calibration_follows_the_reported_input_tokens(store: Store) -> None:
    from weakprompt.messages import Usage
    from weakprompt.runtime.compaction import WindowKeeper

    keeper = WindowKeeper(CompactionSettings(context_window=WINDOW), WINDOW)
    keeper.calibrate(Usage(input_tokens=500))  # no estimate yet: nothing to compare with
    assert keeper.ratio == 1.0
    keeper.last_raw = 1000
    keeper.calibrate(Usage(input_tokens=1500))
    assert keeper.ratio == 1.5
    keeper.calibrate(Usage(input_tokens=100_000))
    assert keeper.ratio == 4.0


def test_empty_summary_falls_back_to_a_drop_marker_naming_why(store: Store) -> None:
    session = Session()
    settings = CompactionSettings(
        context_window=WINDOW,
        summarizer=FunctionAdapter(lambda _r: ""),
        keep_recent_turns=2,
        summary_tokens=64,
    )
    transcript = _run(store, LongSession(steps=20), settings, session)
    errors = [str(c.metadata.get(COMPACTION_KEY)) for c in transcript.log()]
    assert any("returned an empty answer" in e for e in errors)


def test_summary_under_tracing_is_a_summarization_span(store: Store) -> None:
    from otel_support import Recorder
    from weakprompt.otel import PURPOSE, OTelTracing

    recorder = Recorder()
    settings = CompactionSettings(context_window=WINDOW, summarizer=summarizer(), keep_recent_turns=2)
    adapter = FunctionAdapter(LongSession(steps=30))
    agent = Agent(adapter, instructions="Look things up.", tools=[make_lookup()], max_turns=200)
    agent.run_sync("Go.", store=store, compaction=settings, tracing=OTelTracing(recorder.provider))
    purposes = [dict(s.attributes or {}).get(PURPOSE) for s in recorder.exporter.get_finished_spans()]
    assert "summarization" in purposes


def test_compacted_view_leaves_a_view_without_compactions_alone(store: Store) -> None:
    from weakprompt.transcript import CompactedView

    transcript = Transcript(store, "plain")
    transcript.user("hi")
    view = transcript.compile_view()
    assert CompactedView()(view) is view


def test_each_compaction_is_the_named_cause_of_the_one_cache_bust_after_it(store: Store) -> None:
    session = Session()
    seen: list[Compacted | CacheBusted] = []
    session.bus.subscribe(Compacted, seen.append)
    session.bus.subscribe(CacheBusted, seen.append)
    settings = CompactionSettings(context_window=WINDOW, summarizer=summarizer(), keep_recent_turns=2)
    _run(store, LongSession(steps=30), settings, session)

    # The events come as: the compactions made for one request, then that request's one bust.
    groups: list[list[Compacted]] = [[]]
    busts: list[tuple[list[Compacted], CacheBusted]] = []
    for event in seen:
        if isinstance(event, Compacted):
            groups[-1].append(event)
        else:
            assert groups[-1], f"a cache bust without a compaction before it: {event.describe()}"
            busts.append((groups[-1], event))
            groups.append([])
    assert groups[-1] == [] and len(busts) == len(groups) - 1 >= 2
    for made, bust in busts:
        by_commit = {c.commit_hash: c.tier for c in made}
        assert bust.kind == "message" and bust.cause == "compacted"
        assert bust.commit == bust.name and bust.commit in by_commit
        assert bust.compaction_tier == by_commit[bust.commit]
        assert bust.to_json()["compaction_tier"] == bust.compaction_tier
        assert f"{bust.compaction_tier} compaction" in bust.describe()
    assert {bust.compaction_tier for _, bust in busts} >= {"slim", "summary"}


def test_a_run_that_does_not_compact_reports_no_cache_bust(store: Store) -> None:
    session = Session()
    seen: list[object] = []
    session.bus.subscribe(Compacted, seen.append)
    session.bus.subscribe(CacheBusted, seen.append)
    settings = CompactionSettings(context_window=200_000, summarizer=summarizer())
    _run(store, LongSession(steps=10), settings, session)
    assert seen == []


def test_an_edit_before_the_compacted_part_keeps_its_own_cause() -> None:
    """A compaction is named only for the difference it made, not for an edit earlier in the history."""
    from weakprompt.clock import FakeClock
    from weakprompt.messages import Message
    from weakprompt.model import CompiledContext, ModelRequest
    from weakprompt.model_settings import ModelSettings
    from weakprompt.prompt import MarkdownSection, Prompt, PromptTemplate
    from weakprompt.runtime.cache_prefix import PrefixWatch
    from weakprompt.transcript import CommitOperation

    template = PromptTemplate[None](
        ns="tests", key="c2", sections=[MarkdownSection(title="R", key="r", template="x")]
    )
    rendered = Prompt(template).render()
    watch = PrefixWatch(look_in_store=False)
    with Store.open("sqlite://") as store:
        transcript = Transcript(store, "unit")
        first = transcript.commit(Message("user", "one"))
        second = transcript.commit(Message("user", "two"))
        third = transcript.commit(Message("user", "three"))

        def observe(*pairs: tuple[Message, str]) -> CacheBusted | None:
            context = CompiledContext(
                messages=tuple(m for m, _ in pairs), commit_hashes=tuple(h for _, h in pairs)
            )
            watch.observe(
                transcript,
                rendered,
                ModelRequest(context=context),
                ModelSettings(),
                prompt_name="p",
                clock=FakeClock(),
            )
            return watch.sent()[1]

        def shown(commit: str) -> tuple[Message, str]:
            return transcript.get(commit).content, commit

        assert observe(shown(first.hash), shown(second.hash), shown(third.hash)) is None
        edit = transcript.commit(
            Message("user", "uno"), operation=CommitOperation.EDIT, edit_target=first.hash
        )
        watch.compacted("slim", "f" * 64, [third.hash])  # reshows the third message, after the edit
        bust = observe(shown(edit.hash), shown(second.hash), (Message("user", "3"), third.hash))
        assert bust is not None and (bust.cause, bust.compaction_tier) == ("edited", None)
