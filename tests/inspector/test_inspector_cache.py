"""The inspector shows the prompt-cache hit rate (cached input / input) per session and per turn."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from weakprompt import Agent, Store
from weakprompt.adapters.testing import ScriptedAdapter, text_turn
from weakprompt.inspector import create_app
from weakprompt.inspector.charts import UsagePoint, usage_chart
from weakprompt.inspector.session_view import hit_rate, load_session
from weakprompt.messages import Usage
from weakprompt.transcript import Transcript

pytest.importorskip("starlette")
from starlette.testclient import TestClient

LOCAL = "http://127.0.0.1"


def _store(path: Path) -> Path:
    turns = [
        text_turn(
            "first", usage=Usage(1000, 5, cached_input_tokens=0, cache_write_tokens=900, model_calls=1)
        ),
        text_turn("second", usage=Usage(1100, 5, cached_input_tokens=1000, model_calls=1)),
    ]
    with Store.open(path) as store:
        agent = Agent(ScriptedAdapter(turns), instructions="Answer.", store=store)
        agent.run_sync("one", session="cached")
        agent.run_sync("two", session="cached")
        Agent(
            ScriptedAdapter([text_turn("x", usage=Usage(0, 1, model_calls=1))]),
            instructions="A.",
            store=store,
        ).run_sync("none", session="no-input")
    return path


def test_session_and_turn_views_carry_the_cache_hit_rate(tmp_path: Path) -> None:
    with Store.open(_store(tmp_path / "s.db"), read_only=True) as store:
        view = load_session(store, "cached")
        empty = load_session(store, "no-input")
    assert (view.cached_input_tokens, view.cache_write_tokens, view.input_tokens) == (1000, 900, 2100)
    assert view.cache_hit_rate == pytest.approx(1000 / 2100)
    replies = [t.reply for t in view.turns if t.reply is not None]
    assert [r.cache_hit_rate for r in replies] == [0.0, pytest.approx(1000 / 1100)]
    assert [r.cache_write_tokens for r in replies] == [900, 0]
    assert empty.cache_hit_rate is None  # no input counted: no rate, not 0%


def test_session_page_shows_the_rates(tmp_path: Path) -> None:
    db = _store(tmp_path / "s.db")
    with TestClient(create_app(str(db)), base_url=LOCAL) as client:
        page = client.get("/session", params={"id": "cached"})
        other = client.get("/session", params={"id": "no-input"})
    assert page.status_code == 200
    session_rate = re.search(r'<dd class="cache-rate">(.*?)</dd>', page.text, re.S)
    assert (
        session_rate is not None
        and "48% of input read from cache (1,000 tokens), 900 written" in session_rate.group(1)
    )
    turn_rates = re.findall(r'<span class="muted cache-rate"[^>]*>(.*?)</span>', page.text, re.S)
    assert [" ".join(r.split()) for r in turn_rates] == ["0% cached · 900 written", "91% cached"]
    assert "91% cached" in page.text  # the chart's bar title names it as well
    assert re.search(r'<dd class="cache-rate">—</dd>', other.text)


def test_hit_rate_is_bounded_by_the_input() -> None:
    assert hit_rate(5, 0) is None
    assert hit_rate(-3, 10) == 0.0
    assert hit_rate(50, 10) == 1.0  # a provider's cached count never makes the rate exceed 100%
    chart = usage_chart([UsagePoint(1, 10, 1, cached_input_tokens=50)])
    assert "turn 1: 10 in (100% cached), 1 out" in chart


def _busted_store(path: Path) -> Path:
    """Two runs of one session whose role section changed between them, and a hostile recorded bust."""
    with Store.open(path) as store:
        for role in ("You help.", "You help, briefly."):
            agent = Agent(ScriptedAdapter(["ok"]), instructions=role, name="helper", store=store)
            agent.run_sync("hi", session="busted")
        hostile = Transcript(store, "hostile")
        hostile.user("hi")
        bust = {"kind": "section", "cause": "changed", "name": "<script>alert(1)</script>", "old_hash": "<b>"}
        hostile.assistant("ok", metadata={"cache_bust": bust})
        Transcript(store, "odd").assistant("ok", metadata={"cache_bust": {"kind": "section"}})
    return path


def test_turn_view_names_what_busted_the_cache(tmp_path: Path) -> None:
    db = _busted_store(tmp_path / "b.db")
    with Store.open(db, read_only=True) as store:
        view = load_session(store, "busted")
        odd = load_session(store, "odd")
    notes = [t.reply.cache_bust for t in view.turns if t.reply is not None]
    assert notes[0] is None
    assert notes[1] is not None and (notes[1].kind, notes[1].cause, notes[1].name) == (
        "section",
        "changed",
        "instructions",
    )
    assert all(t.reply is None or t.reply.cache_bust is None for t in odd.turns)  # not readable: no note
    with TestClient(create_app(str(db)), base_url=LOCAL) as client:
        page = client.get("/session", params={"id": "busted"})
        hostile = client.get("/session", params={"id": "hostile"})
    (shown,) = re.findall(r'<div class="cache-bust warn">(.*?)</div>', page.text, re.S)
    assert "section" in shown and "instructions" in shown and "changed" in shown
    assert "<script>alert(1)</script>" not in hostile.text
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in hostile.text
    assert "&lt;b&gt;" in hostile.text
