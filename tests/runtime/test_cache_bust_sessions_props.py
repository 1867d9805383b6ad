"""Property: over 1,000 generated sessions the prefix is stable unless a stable section, a tool, the
settings or a sent message changed, and then the detector names exactly that.

Each example is one session on its own SQLite store, run by the real loop with a function adapter.
Between runs the machine changes section texts and volatility, adds, removes, reorders and
re-describes tools, changes the model settings, and edits or summarizes stored tool results; a run
may pause for an approval that is then approved or denied. The model of the machine says which
item of the prefix differs first (or none); the store's recorded fingerprints and busts and the
bus's ``CacheBusted`` events are checked against it.
"""

from __future__ import annotations

import functools
import itertools
import os
from typing import Literal, cast

from hypothesis import HealthCheck, settings
from hypothesis import event as note_event
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, rule

from weakprompt import Agent, Approve, Deny, Store
from weakprompt.adapters.testing import FunctionAdapter, tool_call, tool_call_turn
from weakprompt.events import CacheBusted
from weakprompt.messages import AssistantTurn, Message
from weakprompt.model import TURN_CONTEXT_KEY, ModelRequest
from weakprompt.model_settings import ModelSettings
from weakprompt.prompt import MarkdownSection, PromptTemplate
from weakprompt.prompt.volatility import Volatility
from weakprompt.runtime.cache_prefix import CACHE_BUST_KEY, CACHE_PREFIX_KEY, Fingerprint
from weakprompt.session import Session
from weakprompt.tools import AnyTool, Tool, tool
from weakprompt.transcript import CommitOperation, Transcript
from weakprompt.transcript.provenance import SUMMARIZED_FROM

KEYS = ("s1", "s2", "s3")
TOOL_NAMES = ("t0", "t1", "t2")
SESSION = "prop"

Item = tuple[str, str, int | float]  # kind, name, version
Change = tuple[object, ...]

CHANGES: st.SearchStrategy[Change] = st.one_of(
    st.tuples(st.just("volatility"), st.sampled_from(KEYS), st.sampled_from(["stable", "session", "turn"])),
    st.tuples(st.just("text"), st.sampled_from(KEYS)),
    st.tuples(st.just("toggle"), st.sampled_from(TOOL_NAMES)),
    st.tuples(st.just("schema"), st.integers(0, 3)),
    st.tuples(st.just("reorder")),
    st.tuples(st.just("settings"), st.sampled_from([0.0, 0.5, 1.0])),
    st.tuples(st.just("edit"), st.integers(0, 20), st.booleans()),
)


@tool(requires_approval=True)
def gate(step: str) -> str:
    """Do a step a person approves first."""
    return f"did {step}"


@functools.cache
def _tool(name: str, version: int) -> Tool[object, object]:
    """Tool ``name``; a new ``version`` changes its schema (its description). Built once each."""

    def handler(city: str) -> str:
        return f"{city}: sunny"

    return tool(name=name, description=f"Weather, revision {version}.")(handler)


def _expected(old: list[Item], new: list[Item]) -> tuple[str, str, str] | None:
    """The first (kind, name, cause) two item lists differ on: the rule specs/CACHING.md states."""
    for kind in ("section", "tool", "settings"):
        was = [(n, v) for k, n, v in old if k == kind]
        now = [(n, v) for k, n, v in new if k == kind]
        old_names, new_names = {n for n, _ in was}, {n for n, _ in now}
        for index in range(max(len(was), len(now))):
            a = was[index] if index < len(was) else None
            b = now[index] if index < len(now) else None
            if a == b:
                continue
            if a is not None and b is not None and a[0] == b[0]:
                return kind, b[0], "changed"
            if b is not None and b[0] not in old_names:
                return kind, b[0], "added"
            if a is not None and a[0] not in new_names:
                return kind, a[0], "removed"
            assert b is not None
            return kind, b[0], "moved"
    return None


class CacheSessions(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self.store = Store.open("sqlite://")
        self.live = Session(session_id=SESSION)
        self.events: list[CacheBusted] = []
        self.live.bus.subscribe(CacheBusted, self.events.append)
        self.volatility: dict[str, Volatility] = dict.fromkeys(KEYS, "stable")
        self.versions: dict[str, int] = dict.fromkeys(KEYS, 0)
        self.tools: list[tuple[str, int]] = [("t0", 0)]
        self.temperature = 0.0
        self.runs = 0
        self.sent: list[Item] | None = None  # the template part of the last request sent
        self.edits: list[tuple[int, str, Literal["edited", "summarized"]]] = []  # (seq, target, cause)
        self.results: list[tuple[int, str]] = []  # the stored tool results, (seq, hash), as appended
        self.seen = 0  # assistant commits checked so far
        self.approve = False

    def teardown(self) -> None:
        self.store.close()

    # -- the session's template, as the model of the machine sees it ---------------------------------

    def _items(self) -> list[Item]:
        sections: list[Item] = [("section", "role", 0)]
        # the render places stable sections first, then session ones (specs/CACHING.md)
        for placed in ("stable", "session"):
            sections += [("section", k, self.versions[k]) for k in KEYS if self.volatility[k] == placed]
        tools: list[Item] = [("tool", "gate", 0), *(("tool", name, v) for name, v in self.tools)]
        return [*sections, *tools, ("settings", "model_settings", self.temperature)]

    def _template(self) -> PromptTemplate[None]:
        offered: list[AnyTool] = [gate, *(_tool(name, v) for name, v in self.tools)]
        sections = [MarkdownSection(title="Role", key="role", template="You help.", tools=offered)]
        for key in KEYS:
            text = f"{key} revision {self.versions[key]}"
            if self.volatility[key] == "turn":
                text += f" (run {self.runs})"  # a per-turn section changes on every run
            sections.append(
                MarkdownSection(title=key, key=key, template=text, volatility=self.volatility[key])
            )
        return PromptTemplate[None](ns="props", key="cache", sections=sections)

    def _model(self, request: ModelRequest) -> AssistantTurn | str:
        last = [m for m in request.context.messages if not m.metadata.get(TURN_CONTEXT_KEY)][-1]
        if last.role != "user":
            return "done"
        if self.approve:
            return tool_call_turn(tool_call("gate", {"step": "a"}, id=f"g{self.runs}"))
        return (
            tool_call_turn(tool_call(self.tools[0][0], {"city": "Oslo"}, id=f"c{self.runs}"))
            if self.tools
            else "ok"
        )

    # -- changes between runs -------------------------------------------------------------------------

    def change(self, change: Change) -> None:
        """Apply one generated change (one that cannot apply, an edit with no result yet, is skipped)."""
        match change:
            case ("volatility", str(key), str(volatility)):
                self.volatility[key] = cast("Volatility", volatility)
            case ("text", str(key)):
                self.versions[key] += 1
            case ("toggle", str(name)):
                present = [n for n, _ in self.tools]
                if name in present:
                    self.tools.pop(present.index(name))
                else:
                    self.tools.append((name, 0))
            case ("schema", int(index)) if self.tools:
                name, version = self.tools[index % len(self.tools)]
                self.tools[index % len(self.tools)] = (name, version + 1)
            case ("reorder",):
                self.tools.reverse()
            case ("settings", float(temperature)):
                self.temperature = temperature
            case ("edit", int(index), bool(summarized)) if self.results:
                self.edit_result(*self.results[index % len(self.results)], summarized=summarized)
            case _:
                pass

    def edit_result(self, seq: int, target: str, *, summarized: bool) -> None:
        transcript = Transcript(self.store, SESSION)
        original = transcript.get(target)
        metadata = {SUMMARIZED_FROM: original.blob_hash} if summarized else None
        transcript.commit(
            Message(
                "tool",
                f"rewritten {len(self.edits)}",
                tool_call_id=original.content.tool_call_id,
                name=original.content.name,
            ),
            operation=CommitOperation.EDIT,
            edit_target=target,
            metadata=metadata,
        )
        self.edits.append((seq, target, "summarized" if summarized else "edited"))

    # -- a run, and what it must have reported --------------------------------------------------------

    @initialize(approve=st.booleans(), grant=st.booleans())
    def first_run(self, approve: bool, grant: bool) -> None:
        self.run(approve, grant)

    @rule(changes=st.lists(CHANGES, max_size=3), approve=st.booleans(), grant=st.booleans())
    def another_run(self, changes: list[Change], approve: bool, grant: bool) -> None:
        for change in changes:
            self.change(change)
        self.run(approve, grant)

    def run(self, approve: bool, grant: bool) -> None:
        self.runs += 1
        self.approve = approve
        events_before = len(self.events)
        agent = Agent(FunctionAdapter(self._model), template=self._template(), store=self.store)
        options = {"model_settings": ModelSettings(temperature=self.temperature)}
        response = agent.run_sync("go", session=self.live, **options)  # type: ignore[arg-type]
        if response.paused is not None:
            decisions = [
                Approve(w.call_id, w.token) if grant else Deny(w.call_id, w.token, message="no")
                for w in response.paused.pending
            ]
            response = agent.resume_sync(self.live, decisions, **options)  # type: ignore[arg-type]
        assert response.paused is None

        items = self._items()
        expected = None if self.sent is None else _expected(self.sent, items)
        if expected is None and self.edits:
            first = min(seq for seq, _, _ in self.edits)  # the earliest edited message differs first
            _, target, cause = [edit for edit in self.edits if edit[0] == first][-1]  # as last edited
            expected = ("message", target, cause)
        note_event(f"first difference: {expected[0] if expected else 'none'}")
        replies = self._new_replies()
        busts = [r.metadata[CACHE_BUST_KEY] for r in replies if CACHE_BUST_KEY in r.metadata]
        events = self.events[events_before:]
        if expected is None:
            assert busts == [] and events == [], (busts, events)
        else:
            (event,) = events
            assert (event.kind, event.name, event.cause) == expected, (event, expected)
            assert busts == [event.to_json()]
            assert CACHE_BUST_KEY in replies[0].metadata  # the run's first request, no later one
        self.sent, self.edits = items, []
        transcript = Transcript(self.store, SESSION)
        self.results = [
            (c.seq, c.hash) for c in transcript.log() if c.role == "tool" and c.edit_target is None
        ]

    def _new_replies(self) -> list[Message]:
        log = [c for c in Transcript(self.store, SESSION).log() if c.role == "assistant"]
        fresh, self.seen = log[self.seen :], len(log)
        return [c.content for c in fresh]

    @invariant()
    def recorded_prefixes_only_grow_between_busts(self) -> None:
        """Consecutive requests share every item up to the recorded bust's position (all of them if none)."""
        if self.seen == 0:
            return
        log = [c for c in Transcript(self.store, SESSION).log() if c.role == "assistant"][-4:]
        for before, after in itertools.pairwise(log):
            old = Fingerprint.from_json(before.metadata[CACHE_PREFIX_KEY])
            new = Fingerprint.from_json(after.metadata[CACHE_PREFIX_KEY])
            assert old is not None and new is not None
            old_items, new_items = _flat(old), _flat(new)
            bust = after.metadata.get(CACHE_BUST_KEY)
            if bust is None:
                assert new_items[: len(old_items)] == old_items
            else:
                assert isinstance(bust, dict)
                position = bust["position"]
                assert isinstance(position, int)
                assert new_items[:position] == old_items[:position]
                assert new_items[position : position + 1] != old_items[position : position + 1]


def _flat(found: Fingerprint) -> list[tuple[str, ...]]:
    return [
        *(("section", *p) for p in found.sections),
        *(("tool", *p) for p in found.tools),
        ("settings", found.settings),
        *(("message", *p) for p in found.messages),
    ]


CacheSessions.TestCase.settings = settings(
    max_examples=int(os.environ.get("CACHE_PROPS_EXAMPLES", "1000")),
    stateful_step_count=3,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
test_cache_bust_detector_over_generated_sessions = CacheSessions.TestCase
