"""Progressive disclosure through the loop: open_sections re-renders and continues."""

from __future__ import annotations

from loop_support import Recorder, disclosure_prompt
from weakprompt.adapters.testing import ScriptedAdapter, tool_call, tool_call_turn
from weakprompt.events import PromptRendered
from weakprompt.runtime.loop import evaluate
from weakprompt.runtime.loop_events import SectionsExpanded
from weakprompt.session import Session
from weakprompt.store import Store
from weakprompt.transcript import Transcript


def _open(keys: list[str], id: str = "open") -> object:
    return tool_call("open_sections", {"section_keys": keys, "reason": "need the codes"}, id=id)


def test_opening_a_section_re_renders_with_its_text_and_tools() -> None:
    session = Session()
    store = Store.open("sqlite://")
    events = Recorder(session.bus)
    adapter = ScriptedAdapter(
        [
            tool_call_turn(_open(["secrets"])),  # type: ignore[arg-type]
            tool_call_turn(tool_call("secret_lookup", {"name": "vault"}, id="look")),
            "The code is 42.",
        ]
    )
    response = evaluate(disclosure_prompt(), adapter=adapter, session=session, store=store)

    assert response.text == "The code is 42."
    assert response.expanded_sections == ("secrets",)
    first, second, _ = adapter.requests
    assert [t.name for t in first.tools] == ["echo", "open_sections"]
    assert "secret_lookup" in [t.name for t in second.tools]
    assert "FULL SECRET MANUAL" not in first.context.messages[0].content
    assert "FULL SECRET MANUAL" in second.context.messages[0].content
    opened = second.context.messages[-1]
    assert opened.role == "tool" and opened.tool_call_id == "open" and not opened.is_error
    assert "secrets" in opened.content
    # The lookup ran through the dispatcher with the new tool set.
    assert [e.success for e in response.tool_executions] == [True]
    assert response.rendered.expanded_keys == frozenset({"secrets"})
    # Provenance: the system message was edited in place, the original kept.
    transcript = Transcript(store, session.session_id)
    log = transcript.log()
    assert [c.role for c in log if c.edit_target is not None] == ["system"]
    assert len(events.of(PromptRendered)) == 2
    expanded = events.of(SectionsExpanded)
    assert isinstance(expanded[0], SectionsExpanded)
    assert expanded[0].section_keys == ("secrets",) and expanded[0].reason == "need the codes"
    # The assistant turn after the expansion is linked to the larger tool set.
    lookup_turn = [c for c in log if c.role == "assistant"][1]
    assert "secret_lookup" in [t["name"] for t in transcript.get_commit_tools(lookup_turn.hash)]


def test_a_later_call_in_the_same_turn_already_sees_the_opened_tools() -> None:
    adapter = ScriptedAdapter(
        [
            tool_call_turn(_open(["secrets"]), tool_call("secret_lookup", {"name": "x"}, id="s")),  # type: ignore[arg-type]
            "ok",
        ]
    )
    response = evaluate(disclosure_prompt(), adapter=adapter, session=Session())
    assert [e.success for e in response.tool_executions] == [True]


def test_an_unknown_section_key_is_a_failed_result_not_an_expansion() -> None:
    adapter = ScriptedAdapter([tool_call_turn(_open(["nope"])), "ok"])  # type: ignore[arg-type]
    response = evaluate(disclosure_prompt(), adapter=adapter, session=Session())
    result = adapter.requests[1].context.messages[-1]
    assert result.is_error and "nope" in result.content
    assert response.expanded_sections == ()


def test_expansions_are_bounded() -> None:
    adapter = ScriptedAdapter([tool_call_turn(_open(["secrets"])), "ok"])  # type: ignore[arg-type]
    response = evaluate(disclosure_prompt(), adapter=adapter, session=Session(), max_expansions=0)
    result = adapter.requests[1].context.messages[-1]
    assert result.is_error and "limit is 0" in result.content
    assert "secret_lookup" not in [t.name for t in adapter.requests[1].tools]
    assert response.expanded_sections == ()


def test_a_render_failure_during_expansion_is_reported_to_the_model() -> None:
    from dataclasses import dataclass

    from weakprompt.prompt import MarkdownSection, Prompt, PromptTemplate, Visibility

    @dataclass(frozen=True)
    class Needs:
        topic: str

    template: PromptTemplate[None] = PromptTemplate(
        ns="t",
        key="needs",
        sections=[
            MarkdownSection(title="Intro", key="intro", template="Hello."),
            MarkdownSection(
                title="Deep",
                key="deep",
                template="Details follow.",
                summary="Details.",
                visibility=Visibility.SUMMARY,
                # The child needs params nobody bound: only an expanded render reaches it.
                children=[
                    MarkdownSection(title="More", key="more", template="About $topic.", params_type=Needs)
                ],
            ),
        ],
    )
    adapter = ScriptedAdapter([tool_call_turn(_open(["deep"])), "ok"])  # type: ignore[arg-type]
    response = evaluate(Prompt(template), adapter=adapter, session=Session())
    result = adapter.requests[1].context.messages[-1]
    assert result.is_error and "could not be opened" in result.content
    assert response.expanded_sections == ()
