"""What a recording keeps so a replay can name a change by path and hash, and old recordings without it."""

from __future__ import annotations

from pathlib import Path

import pytest

from replay_support import make_prompt, record
from weakprompt import Store, Transcript
from weakprompt.canonical import content_hash
from weakprompt.messages import Message
from weakprompt.model import CompiledContext, ModelRequest
from weakprompt.replay import RecordedTurn, ReplayAdapter, ReplayDivergence, replay_sync
from weakprompt.runtime.recording import OUTPUT_SCHEMA_KEY, SECTIONS_KEY

SYSTEM_OLD = Message(role="system", content="## 1. Shop\n\nOld.")
SYSTEM_NEW = Message(role="system", content="## 1. Shop\n\nNew.")
REPLY = Message(role="assistant", content="ok")


def _raised(adapter: ReplayAdapter, request: ModelRequest) -> ReplayDivergence:
    with pytest.raises(ReplayDivergence) as raised:
        adapter.complete(request)
    return raised.value


def test_the_system_commit_keeps_each_sections_hash_and_the_reply_the_output_schemas(tmp_path: Path) -> None:
    db = record(tmp_path / "rec.db")
    rendered = make_prompt().render()
    with Store.open(db) as store:
        log = Transcript(store, "rec").log()
    system = log[0].content.metadata
    assert system[SECTIONS_KEY] == {s.path_text: s.text_hash for s in rendered.sections}
    assert rendered.output_schema is not None
    replies = [c for c in log if c.content.role == "assistant"]
    assert {c.content.metadata[OUTPUT_SCHEMA_KEY] for c in replies} == {content_hash(rendered.output_schema)}


def test_a_changed_section_is_named_with_its_recorded_and_new_hash(tmp_path: Path) -> None:
    db = record(tmp_path / "rec.db")
    with Store.open(db) as store:
        found = replay_sync(store, "rec", prompt=make_prompt(rules="Answer only stock questions.")).divergence
    assert found is not None and found.kind == "section" and found.section_path == "shop"
    assert found.recorded_hash == make_prompt().render().sections[0].text_hash
    assert (
        found.replayed_hash
        == make_prompt(rules="Answer only stock questions.").render().sections[0].text_hash
    )
    assert "recorded_hash:" in found.describe() and "replayed_hash:" in found.describe()


def test_a_section_added_or_removed_is_named_by_its_path() -> None:
    recorded = RecordedTurn((SYSTEM_OLD,), (), REPLY, sections={"shop": "a"})
    added = ReplayAdapter([recorded], sections=lambda: [("shop", "a"), ("style", "b")])
    new = _raised(added, ModelRequest(context=CompiledContext(messages=(SYSTEM_NEW,))))
    assert (new.kind, new.section_path, new.recorded_hash, new.replayed_hash) == (
        "section",
        "style",
        None,
        "b",
    )
    assert "is new" in new.summary
    removed = ReplayAdapter([recorded], sections=list)
    gone = _raised(removed, ModelRequest(context=CompiledContext(messages=(SYSTEM_NEW,))))
    assert (gone.kind, gone.section_path, gone.recorded_hash, gone.replayed_hash) == (
        "section",
        "shop",
        "a",
        None,
    )
    assert "is gone" in gone.summary


def test_equal_section_hashes_leave_a_system_difference_to_the_heading_search() -> None:
    recorded = RecordedTurn((SYSTEM_OLD,), (), REPLY, sections={"shop": "a"})
    adapter = ReplayAdapter([recorded], sections=lambda: [("shop", "a")])
    found = _raised(adapter, ModelRequest(context=CompiledContext(messages=(SYSTEM_NEW,))))
    assert (found.kind, found.message_index) == ("message", 0)


def test_an_old_recording_without_section_hashes_still_names_the_section_by_its_heading() -> None:
    recorded = RecordedTurn((SYSTEM_OLD,), (), REPLY)  # sections=None: recorded before they were kept
    adapter = ReplayAdapter(
        [recorded], render=lambda: make_prompt().render(), sections=lambda: [("shop", "x")]
    )
    found = _raised(adapter, ModelRequest(context=CompiledContext(messages=(SYSTEM_NEW,))))
    assert (found.kind, found.section_path, found.recorded_hash) == ("section", "shop", None)
    # and its output schema is not compared: it was not recorded
    same = ReplayAdapter([recorded])
    assert (
        same.complete(
            ModelRequest(context=CompiledContext(messages=(SYSTEM_OLD,)), output_schema={"type": "object"})
        ).text
        == "ok"
    )


def test_an_output_schema_added_removed_or_changed_is_an_output_divergence() -> None:
    schema = {"type": "object"}
    digest = content_hash(schema)
    context = CompiledContext(messages=(SYSTEM_OLD,))
    without = RecordedTurn((SYSTEM_OLD,), (), REPLY, sections={})
    added = _raised(ReplayAdapter([without]), ModelRequest(context=context, output_schema=schema))
    assert (added.kind, added.recorded_hash, added.replayed_hash) == ("output", None, digest)
    assert "had no output schema" in added.summary
    with_schema = RecordedTurn((SYSTEM_OLD,), (), REPLY, sections={}, output_schema=digest)
    removed = _raised(ReplayAdapter([with_schema]), ModelRequest(context=context))
    assert (removed.recorded_hash, removed.replayed_hash) == (digest, None)
    assert "has none" in removed.summary
    changed = _raised(
        ReplayAdapter([with_schema]),
        ModelRequest(context=context, output_schema={"type": "array"}, output_name="Answer"),
    )
    assert changed.summary == "the output schema Answer differs from the recorded one"
    assert (
        ReplayAdapter([with_schema]).complete(ModelRequest(context=context, output_schema=schema)).text
        == "ok"
    )


def test_a_hand_written_session_without_a_system_message_replays_with_a_message_divergence() -> None:
    with Store.open() as store:
        hand = Transcript(store, "hand")
        hand.user("How many mugs?")
        hand.assistant('{"total": 12}')
        found = replay_sync(store, "hand", prompt=make_prompt()).divergence
    assert found is not None and (found.kind, found.message_index, found.role) == ("message", 0, "system")
