"""A compaction is a span event on the run's span, and the cache bust it causes names it."""

from __future__ import annotations

from compaction_support import LongSession, make_lookup, summarizer
from otel_support import Recorder
from weakprompt import Agent, CompactionSettings, Session, Store
from weakprompt.adapters.testing import FunctionAdapter
from weakprompt.events import Compacted
from weakprompt.otel import OTelTracing
from weakprompt.otel import attributes as attr


def test_each_compaction_is_an_event_on_the_run_span(store: Store) -> None:
    recorder = Recorder()
    session = Session()
    seen: list[Compacted] = []
    session.bus.subscribe(Compacted, seen.append)
    settings = CompactionSettings(context_window=4096, summarizer=summarizer(), keep_recent_turns=2)
    model = FunctionAdapter(LongSession(steps=30))
    agent = Agent(model, instructions="Look things up.", tools=[make_lookup()], max_turns=200)
    agent.run_sync(
        "Go.", session=session, store=store, compaction=settings, tracing=OTelTracing(recorder.provider)
    )

    (run,) = recorder.named("invoke_agent ")
    events = [dict(e.attributes or {}) for e in run.events if e.name == attr.EVENT_COMPACTED]
    assert seen and len(events) == len(seen)
    for event, published in zip(events, seen, strict=True):
        assert event["weakprompt.compaction.tier"] == published.tier
        assert event["weakprompt.compaction.commit"] == published.commit_hash
        assert event["weakprompt.compaction.covered"] == len(published.covered)
        assert event["weakprompt.compaction.tokens_before"] == published.tokens_before
        assert event["weakprompt.compaction.tokens_after"] == published.tokens_after
        assert event["weakprompt.compaction.context_window"] == 4096
    # The chat span of a request after a compaction says which compaction busted its cache.
    busts = [
        dict(e.attributes or {})
        for span in recorder.named("chat ")
        for e in span.events
        if e.name == attr.EVENT_CACHE_BUSTED
    ]
    assert busts and all(b["weakprompt.cache.cause"] == "compacted" for b in busts)
    assert {b["weakprompt.cache.compaction_tier"] for b in busts} <= {"slim", "summary", "drop"}
