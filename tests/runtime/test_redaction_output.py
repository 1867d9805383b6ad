"""Redaction of successful tool output: a secret a tool returns reaches no stored byte, event or model.

A tool returns a key and a password in a small and in an oversized result;
a ``tool_result`` hook scrubs the key with ``edit_result`` (what a user
would write before output redaction existed). The run goes through the
real loop into a SQLite file, which is then scanned byte by byte (main
file and write-ahead log, each cell, compressed cells inflated). A later
evaluation loads the results back with ``get_tool_result`` and
``tool_output``. A run with a hook that changes nothing is the control.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import attrs
import pytest

from pipeline_support import NEEDLE, World, fetch_prompt, log_text
from pipeline_support import Outputs as PipelineOutputs
from test_redaction_loop import API_KEY, PASSWORD, SECRETS, deployment_hook, leaks, stored_texts
from weakprompt.adapters.testing import ScriptedAdapter, tool_call, tool_call_turn
from weakprompt.errors import ConfigurationError
from weakprompt.events import ToolInvoked
from weakprompt.prompt import MarkdownSection, Prompt, PromptTemplate
from weakprompt.runtime import Redactor, evaluate
from weakprompt.runtime.results import ToolOutputSettings, ToolOutputStore
from weakprompt.runtime.results.extraction import ExtractionConfig
from weakprompt.session import Session
from weakprompt.store import Store
from weakprompt.tools import NoParams, ToolContext, ToolResult, tool
from weakprompt.transcript import PendingToolResult, Transcript
from weakprompt.transcript.provenance import EDITED_FROM, REDACTED_FROM

SESSION = "leaky-output"
SMALL = f"config loaded\napi_key={API_KEY}\ndb login: admin/{PASSWORD}\n"
# Over the 12288-byte cap; the secrets sit in the preview's reach and deep inside.
BIG = SMALL + "".join(f"row {i:05d} ok\n" for i in range(2000)) + SMALL
BIG_RENDERED = json.dumps({"text": BIG}, ensure_ascii=False, separators=(",", ":"))  # one long line


@dataclass(frozen=True)
class Config:
    text: str


@tool(name="read_config", description="Read the configuration.")
def read_config(params: NoParams, *, context: ToolContext) -> ToolResult[None]:
    return ToolResult(message=SMALL)


@tool(name="dump", description="Dump the table.")
def dump(params: NoParams, *, context: ToolContext) -> ToolResult[Config]:
    return ToolResult.ok(Config(BIG))  # a value: the model reads its rendering


def prompt() -> Prompt[None]:
    return Prompt(
        PromptTemplate(
            ns="tests/redaction",
            key="output",
            name="output",
            sections=[MarkdownSection(title="T", key="t", template="Look.", tools=[read_config, dump])],
        )
    )


def scrub_key(pending: PendingToolResult) -> None:
    """The user's hook from the issue: it removes the key it knows, and only from what is committed."""
    pending.edit_result(pending.content.replace(API_KEY, "[key]"))


@attrs.frozen
class Run:
    db: Path
    adapter: ScriptedAdapter
    events: list[object]


def first_run(
    db: Path, redact: Redactor, settings: ToolOutputSettings | None = None, *, hook: bool = True
) -> Run:
    adapter = ScriptedAdapter(
        [tool_call_turn(tool_call("read_config", id="small"), tool_call("dump", id="big")), "done"]
    )
    session = Session(session_id=SESSION)
    events: list[object] = []
    session.bus.subscribe_all(events.append)
    with Store.open(db) as store:
        transcript = Transcript(store, SESSION)
        if hook:
            transcript.on("tool_result", scrub_key)
        evaluate(
            prompt(),
            adapter=adapter,
            session=session,
            transcript=transcript,
            redact=redact,
            tool_outputs=settings,
        )
    return Run(db, adapter, events)


def later_run(db: Path, redact: Redactor) -> Run:
    """A later evaluation loads the small result and extracts from the big one (truncate: no model)."""
    with Store.open(db) as store:
        handle = ToolOutputStore(store, SESSION).list_results()[1].handle
    adapter = ScriptedAdapter(
        [
            tool_call_turn(
                tool_call("get_tool_result", {"tool_call_id": "small"}),
                tool_call("tool_output", {"handle": handle, "extract": "the rows", "mode": "truncate"}),
            ),
            "done",
        ]
    )
    session = Session(session_id=SESSION)
    events: list[object] = []
    session.bus.subscribe_all(events.append)
    with Store.open(db) as store:
        evaluate(prompt(), adapter=adapter, session=session, store=store, input="again", redact=redact)
    return Run(db, adapter, events)


def event_texts(events: list[object]) -> Iterator[bytes]:
    """Every event as text, except what a handler returned, which ToolInvoked hands on as it is."""
    for event in events:
        shown = event
        if isinstance(event, ToolInvoked):
            shown = attrs.evolve(event, result=attrs.evolve(event.result, value=None, message=""))
        yield repr(shown).encode()


def model_texts(adapter: ScriptedAdapter) -> list[bytes]:
    return [repr(adapter.requests).encode()]


def test_a_secret_in_successful_output_reaches_no_stored_byte_event_or_model_message(tmp_path: Path) -> None:
    db = tmp_path / "run.db"
    run = first_run(db, deployment_hook)
    later = later_run(db, deployment_hook)
    assert leaks(stored_texts(db)) == []
    assert leaks([*event_texts(run.events), *event_texts(later.events)]) == []
    assert leaks(model_texts(run.adapter) + model_texts(later.adapter)) == []
    # the model still got the data, scrubbed
    first = run.adapter.requests[-1].context.messages
    assert first[-2].content == "config loaded\napi_key=[REDACTED]\ndb login: admin/[password]\n"
    assert first[-1].content.startswith("Tool output is too large")
    loaded, extracted = later.adapter.requests[-1].context.messages[-2:]
    assert loaded.content == first[-2].content  # get_tool_result hands back the redacted text
    assert "row 00000 ok" in extracted.content and "[password]" in extracted.content


def test_without_redaction_the_same_scan_finds_the_secrets(tmp_path: Path) -> None:
    """The control: the scans above would have seen a leak, in the payloads and in the replies."""
    db = tmp_path / "run.db"
    run = first_run(db, lambda text: text, hook=False)
    later = later_run(db, lambda text: text)
    assert leaks(stored_texts(db)) == list(SECRETS)
    assert leaks(list(event_texts(run.events))) == list(SECRETS)  # ToolResultStored.content
    assert leaks(model_texts(later.adapter)) == list(SECRETS)
    with Store.open(db) as store:
        stored = ToolOutputStore(store, SESSION)
        assert stored.get_result("small").text == SMALL  # type: ignore[union-attr]
        assert stored.get_result("big").text == BIG_RENDERED  # type: ignore[union-attr]


def test_the_hook_scrubs_output_by_default_and_can_be_turned_off_for_output(tmp_path: Path) -> None:
    on, off = tmp_path / "on.db", tmp_path / "off.db"
    first_run(on, lambda text: text.replace(PASSWORD, "[pw]"), hook=False)
    first_run(
        off, lambda text: text.replace(PASSWORD, "[pw]"), ToolOutputSettings(redact_output=False), hook=False
    )
    assert leaks(stored_texts(on)) == [API_KEY]
    assert leaks(stored_texts(off)) == list(SECRETS)


def note_checked(pending: PendingToolResult) -> None:
    pending.edit_result("checked\n" + pending.content)


@pytest.mark.parametrize(
    ("hook", "original"),
    [(scrub_key, None), (note_checked, "config loaded\napi_key=[REDACTED]\ndb login: admin/[password]\n")],
    ids=["nothing-left-to-scrub", "edited"],
)
def test_the_provenance_original_of_an_edit_is_absent_or_redacted(
    tmp_path: Path, hook: Callable[[PendingToolResult], None], original: str | None
) -> None:
    db = tmp_path / "run.db"
    adapter = ScriptedAdapter([tool_call_turn(tool_call("read_config", id="small")), "done"])
    with Store.open(db) as store:
        transcript = Transcript(store, SESSION)
        transcript.on("tool_result", hook)
        session = Session(session_id=SESSION)
        evaluate(prompt(), adapter=adapter, session=session, transcript=transcript, redact=deployment_hook)
        commit = transcript.find_tool_results()[-1]
        assert REDACTED_FROM not in commit.metadata
        if original is None:
            assert EDITED_FROM not in commit.metadata
        else:
            assert transcript.get_blob(str(commit.metadata[EDITED_FROM])).content == original
    assert leaks(stored_texts(db)) == []


def test_the_raw_original_is_kept_only_when_asked_for(tmp_path: Path) -> None:
    db = tmp_path / "run.db"
    first_run(db, deployment_hook, ToolOutputSettings(keep_raw_original=True), hook=False)
    with Store.open(db) as store:
        transcript = Transcript(store, SESSION)
        commits = {c.content.tool_call_id: c for c in transcript.find_tool_results()}
        raw = transcript.get_blob(str(commits["small"].metadata[REDACTED_FROM]))
        assert raw.content == SMALL and raw.tool_call_id == "small" and raw.name == "read_config"
        assert transcript.get_blob(str(commits["big"].metadata[REDACTED_FROM])).content == BIG_RENDERED
    assert leaks(stored_texts(db)) == list(SECRETS)  # on purpose: exactly those blobs hold them


def test_keeping_the_raw_original_without_redacting_output_is_refused() -> None:
    with pytest.raises(ConfigurationError, match="keep_raw_original"):
        ToolOutputSettings(redact_output=False, keep_raw_original=True)


def test_tool_invoked_hands_on_what_the_handler_returned(tmp_path: Path) -> None:
    """The event carries the handler's own value, in memory, for session reducers: it is not redacted."""
    run = first_run(tmp_path / "run.db", deployment_hook, hook=False)
    invoked = [e for e in run.events if isinstance(e, ToolInvoked)]
    assert invoked[0].result.message == SMALL
    assert invoked[1].result.value == Config(BIG)


@pytest.mark.parametrize("redact_output", [True, False], ids=["redacted", "not-redacted"])
def test_the_read_grep_sub_agent_reads_the_stored_output_as_it_is(redact_output: bool) -> None:
    """Stored redacted, or not at all: the sub-agent adds no redaction of its own either way."""
    world = World("read-grep")
    output = log_text(400, needle_at=300).replace(f"{NEEDLE} ", f"{NEEDLE} token=abc123 ")
    settings = ToolOutputSettings(
        extraction_config=ExtractionConfig(grep_isolate=False), redact_output=redact_output
    )
    with Store.open("sqlite://") as store:
        response = evaluate(
            fetch_prompt(PipelineOutputs([output])),
            adapter=world.adapter,
            session=Session(session_id="s1"),
            input="What failed?",
            transcript=Transcript(store, "s1"),
            tool_outputs=settings,
        )
    seen = "token=[REDACTED]" if redact_output else "token=abc123"
    assert f"{NEEDLE} {seen}" in world.requests["grep"][-1].context.messages[-1].content  # the grep reply
    assert "STRATEGY:read-grep" in response.text
