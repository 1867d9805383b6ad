"""Tool tracking: schemas stored once by content hash, linked per commit, compiled as a separate field."""

from __future__ import annotations

import copy
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from weakprompt.canonical import canonical_json
from weakprompt.clock import FakeClock
from weakprompt.errors import TranscriptError
from weakprompt.messages import ToolCall
from weakprompt.store import Store
from weakprompt.tokens import DEFAULT_TOKEN_COUNTER
from weakprompt.transcript import Transcript, hash_tool_schema

WEATHER: dict[str, Any] = {
    "name": "get_weather",
    "description": "Weather for a city.",
    "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
}
SEARCH: dict[str, Any] = {
    "type": "function",
    "function": {
        "name": "search",
        "description": "Search.",
        "parameters": {"type": "object", "properties": {}},
    },
}
CALC: dict[str, Any] = {"name": "calc", "description": "Math.", "input_schema": {"type": "object"}}


@pytest.fixture
def store(tmp_path: Path) -> Iterator[Store]:
    with Store.open(tmp_path / "tools.db", clock=FakeClock()) as opened:
        yield opened


@pytest.fixture
def t(store: Store) -> Transcript:
    return Transcript(store, "s")


def rows(store: Store, table: str) -> int:
    with store.read() as conn:
        return int(conn.exec_driver_sql(f"SELECT count(*) FROM {table}").scalar() or 0)


# --- hashing ------------------------------------------------------------------------------------------


def test_hash_is_deterministic_sha256_of_canonical_json() -> None:
    import hashlib

    expected = hashlib.sha256(canonical_json(WEATHER).encode()).hexdigest()
    assert hash_tool_schema(WEATHER) == hash_tool_schema(copy.deepcopy(WEATHER)) == expected
    assert len(expected) == 64


def test_hash_ignores_key_order() -> None:
    assert hash_tool_schema({"name": "a", "b": 2, "c": {"x": 1, "y": 2}}) == hash_tool_schema(
        {"c": {"y": 2, "x": 1}, "b": 2, "name": "a"}
    )


def test_different_schema_different_hash() -> None:
    changed = copy.deepcopy(WEATHER)
    changed["description"] = "Weather for a city, in Celsius."
    assert hash_tool_schema(changed) != hash_tool_schema(WEATHER)


_json = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=5),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=4), inner, max_size=3),
    max_leaves=8,
)


@given(st.dictionaries(st.text(max_size=6), _json, max_size=5))
def test_hash_is_independent_of_insertion_order(extra: dict[str, Any]) -> None:
    schema = {**extra, "name": "t"}
    reversed_schema = dict(reversed(list(schema.items())))
    assert hash_tool_schema(schema) == hash_tool_schema(reversed_schema)


def test_non_json_schema_is_an_error_naming_the_tool(t: Transcript, store: Store) -> None:
    bad = {"name": "broken_tool", "parameters": {"default": object()}}
    with pytest.raises(TranscriptError, match=r"tool 'broken_tool' \(#1\).*not JSON-serialisable"):
        t.set_tools([WEATHER, bad])
    with pytest.raises(TranscriptError, match="tool 'broken_tool'"):
        t.user("x", tools=[bad])
    with pytest.raises(TranscriptError, match="tool 'broken_tool'"):
        hash_tool_schema(bad)
    with pytest.raises(TranscriptError, match="tool #0 schema is not JSON"):
        hash_tool_schema({"parameters": {1j: 2}})
    assert len(hash_tool_schema({"no": "name needed to hash"})) == 64
    assert rows(store, "commits") == 0
    assert t.get_tools() == []


@pytest.mark.parametrize(
    ("tools", "needle"),
    [
        ([{"description": "nameless"}], "tool #0 has no name"),
        ([WEATHER, "get_weather"], "tool #1 must be a JSON object"),
        ({"name": "x"}, "must be a list"),
        ("get_weather", "must be a list"),
    ],
)
def test_malformed_tool_lists_are_refused(t: Transcript, tools: Any, needle: str) -> None:
    with pytest.raises(TranscriptError, match=needle):
        t.set_tools(tools)


# --- linking ------------------------------------------------------------------------------------------


def test_commit_with_tools_links_them_in_order(t: Transcript) -> None:
    info = t.user("hi", tools=[WEATHER, SEARCH, CALC])
    assert t.get_commit_tools(info.hash) == [WEATHER, SEARCH, CALC]


def test_commit_without_tools_has_no_links(t: Transcript, store: Store) -> None:
    info = t.user("hi")
    assert t.get_commit_tools(info.hash) == []
    assert rows(store, "commit_tools") == 0
    assert rows(store, "tool_definitions") == 0
    assert rows(store, "tool_sets") == 0


def test_same_schema_on_two_commits_is_one_row_and_two_links(t: Transcript, store: Store) -> None:
    a = t.user("a", tools=[WEATHER])
    b = t.user("b", tools=[copy.deepcopy(WEATHER)])
    assert rows(store, "tool_definitions") == 1
    assert rows(store, "commit_tools") == 2
    assert t.get_commit_tools(a.hash) == t.get_commit_tools(b.hash) == [WEATHER]


def test_dedup_is_store_wide_across_sessions(store: Store) -> None:
    Transcript(store, "one").user("a", tools=[WEATHER, SEARCH])
    Transcript(store, "two").user("b", tools=[SEARCH, WEATHER])
    Transcript(store, "three").user("c", tools=[WEATHER, SEARCH])
    assert rows(store, "tool_definitions") == 2
    assert rows(store, "tool_sets") == 2  # order matters: two distinct sets
    assert rows(store, "tool_set_members") == 4
    assert rows(store, "commit_tools") == 3


def test_a_shared_tool_set_is_stored_once_however_many_turns_use_it(t: Transcript, store: Store) -> None:
    t.set_tools([WEATHER, SEARCH, CALC])
    for i in range(30):
        t.user(f"turn {i}")
    assert rows(store, "tool_definitions") == 3
    assert rows(store, "tool_sets") == 1
    assert rows(store, "tool_set_members") == 3
    assert rows(store, "commit_tools") == 30


def test_same_name_different_schema_is_two_versions(t: Transcript, store: Store) -> None:
    v2 = copy.deepcopy(WEATHER)
    v2["parameters"]["properties"]["units"] = {"type": "string"}
    t.user("a", tools=[WEATHER])
    t.user("b", tools=[v2])
    assert rows(store, "tool_definitions") == 2
    versions = t.tool_versions("get_weather")
    assert [v.schema for v in versions] == [WEATHER, v2]
    assert [v.content_hash for v in versions] == [hash_tool_schema(WEATHER), hash_tool_schema(v2)]
    assert t.tool_versions("nope") == []


def test_a_list_may_hold_the_same_schema_twice(t: Transcript, store: Store) -> None:
    info = t.user("a", tools=[WEATHER, WEATHER])
    assert t.get_commit_tools(info.hash) == [WEATHER, WEATHER]
    assert rows(store, "tool_definitions") == 1


def test_set_tools_links_every_later_commit(t: Transcript) -> None:
    before = t.user("before")
    t.set_tools([WEATHER, SEARCH])
    assert t.get_tools() == [WEATHER, SEARCH]
    after = [t.user("u"), t.assistant("a"), t.tool_result("c", "get_weather", "r")]
    assert t.get_commit_tools(before.hash) == []
    assert all(t.get_commit_tools(c.hash) == [WEATHER, SEARCH] for c in after)


def test_set_tools_none_stops_linking(t: Transcript) -> None:
    t.set_tools([WEATHER])
    linked = t.user("a")
    t.set_tools(None)
    assert t.get_tools() == []
    unlinked = t.user("b")
    assert t.get_commit_tools(linked.hash) == [WEATHER]
    assert t.get_commit_tools(unlinked.hash) == []


def test_commit_tools_argument_wins_over_the_active_set(t: Transcript) -> None:
    t.set_tools([WEATHER])
    explicit = t.assistant("x", tools=[CALC])
    none = t.user("y", tools=None)
    default = t.user("z")
    assert t.get_commit_tools(explicit.hash) == [CALC]
    assert t.get_commit_tools(none.hash) == []
    assert t.get_commit_tools(default.hash) == [WEATHER]


def test_set_tools_is_a_snapshot_of_the_list(t: Transcript) -> None:
    tools = [copy.deepcopy(WEATHER)]
    t.set_tools(tools)
    tools[0]["description"] = "mutated afterwards"
    tools.append(SEARCH)
    info = t.user("x")
    assert t.get_commit_tools(info.hash) == [WEATHER]


def test_schema_round_trips_exactly_as_given(t: Transcript, store: Store) -> None:
    info = t.user("x", tools=[SEARCH, CALC])
    reopened = Store.open(store.url)
    try:
        assert Transcript(reopened, "s").get_commit_tools(info.hash) == [SEARCH, CALC]
    finally:
        reopened.close()


def test_tools_never_become_messages_or_change_hashes(store: Store) -> None:
    plain = Transcript(store, "s1")
    tooled = Transcript(store, "s2")
    tooled.set_tools([WEATHER])
    for tr in (plain, tooled):
        tr.user("hi")
    assert [m.role for m in tooled.compile().messages] == ["user"]
    other = Store.open("sqlite://")
    try:
        x = Transcript(other, "s1")
        x.set_tools([SEARCH, CALC])
        assert x.user("hi").hash == plain.log()[0].hash
    finally:
        other.close()


def test_get_commit_tools_of_foreign_commit_is_refused(store: Store) -> None:
    other = Transcript(store, "other").user("x", tools=[WEATHER])
    with pytest.raises(TranscriptError, match="no commit"):
        Transcript(store, "s").get_commit_tools(other.hash)


# --- compile ------------------------------------------------------------------------------------------


def test_compile_returns_the_tools(t: Transcript) -> None:
    t.set_tools([WEATHER, SEARCH])
    t.user("hi")
    assert t.compile().tools == (WEATHER, SEARCH)


def test_compile_without_tools_is_empty(t: Transcript) -> None:
    t.user("hi")
    assert t.compile().tools == ()


def test_latest_commit_with_links_wins(t: Transcript) -> None:
    t.user("a", tools=[WEATHER])
    t.user("b", tools=[SEARCH, CALC])
    t.user("c")  # no links: does not clear the set
    assert t.compile().tools == (SEARCH, CALC)
    t.user("d", tools=[WEATHER])
    assert t.compile().tools == (WEATHER,)


def test_an_edit_with_links_counts_as_latest(t: Transcript) -> None:
    first = t.user("a", tools=[WEATHER])
    t.user("b", tools=[SEARCH])
    t.user("a2", edit=first.hash, tools=[CALC])
    assert t.compile().tools == (CALC,)


def test_token_count_includes_tool_schemas(t: Transcript) -> None:
    info = t.user("hello there")
    without = t.compile().token_count
    assert without == info.token_count
    t.user("", tools=[WEATHER, SEARCH])
    expected = without + sum(DEFAULT_TOKEN_COUNTER.count(canonical_json(s)) for s in (WEATHER, SEARCH))
    assert t.compile().token_count == expected


def test_to_openai_params_includes_tools(t: Transcript) -> None:
    t.set_tools([WEATHER, SEARCH])
    t.user("hi")
    params = t.compile().to_openai_params()
    assert params["tools"] == [{"type": "function", "function": WEATHER}, SEARCH]
    assert params["messages"] == [{"role": "user", "content": "hi"}]


def test_to_anthropic_params_includes_tools(t: Transcript) -> None:
    t.set_tools([WEATHER, CALC])
    t.system("sys")
    t.user("hi")
    params = t.compile().to_anthropic_params()
    assert params == {
        "system": "sys",
        "messages": [{"role": "user", "content": "hi"}],
        "tools": [
            {
                "name": "get_weather",
                "description": WEATHER["description"],
                "input_schema": WEATHER["parameters"],
            },
            CALC,
        ],
    }


def test_to_openai_still_returns_a_list(t: Transcript) -> None:
    t.set_tools([WEATHER])
    t.user("hi")
    out = t.compile().to_openai()
    assert isinstance(out, list)
    assert out == [{"role": "user", "content": "hi"}]


def test_tools_threaded_through_a_tool_turn(t: Transcript) -> None:
    t.set_tools([WEATHER])
    t.user("weather?")
    call = t.assistant("", tool_calls=[ToolCall("c1", "get_weather", '{"city":"Oslo"}')])
    result = t.tool_result("c1", "get_weather", "-3C")
    assert t.get_commit_tools(call.hash) == t.get_commit_tools(result.hash) == [WEATHER]
    params = t.compile().to_openai_params()
    assert json.loads(params["messages"][1]["tool_calls"][0]["function"]["arguments"]) == {"city": "Oslo"}
    assert params["tools"][0]["function"]["name"] == "get_weather"


# --- set changes --------------------------------------------------------------------------------------


def test_tool_set_changes_name_added_removed_changed(t: Transcript) -> None:
    v2 = copy.deepcopy(WEATHER)
    v2["description"] = "changed"
    a = t.user("a", tools=[WEATHER, SEARCH])
    b = t.user("b", tools=[WEATHER, SEARCH])
    t.user("no links")
    c = t.user("c", tools=[v2, CALC])
    d = t.user("d", tools=[CALC, v2])
    changes = t.tool_set_changes()
    assert [ch.commit_hash for ch in changes] == [a.hash, b.hash, c.hash, d.hash]
    first, same, changed, reordered = changes
    assert first.added == ("get_weather", "search") and first.previous_commit is None and first.breaks_cache
    assert not same.breaks_cache and same.previous_commit == a.hash
    assert changed.added == ("calc",)
    assert changed.removed == ("search",)
    assert changed.changed == ("get_weather",)
    assert not changed.reordered
    assert reordered.reordered and reordered.breaks_cache
    assert (reordered.added, reordered.removed, reordered.changed) == ((), (), ())


def test_tool_set_changes_is_empty_without_links(t: Transcript) -> None:
    t.user("x")
    assert t.tool_set_changes() == []
