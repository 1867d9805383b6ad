"""Input made of parts (text, images, documents) at every entry point: it reaches the model and the store."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from pathlib import Path

import pytest

from weakprompt import (
    Agent,
    ConfigurationError,
    DocumentPart,
    FunctionAdapter,
    ImagePart,
    MarkdownSection,
    ModelRequest,
    Prompt,
    PromptTemplate,
    Session,
    Store,
    TextPart,
)
from weakprompt.messages import Message
from weakprompt.parts import Content
from weakprompt.runtime import RunFinished, evaluate, run, run_sync, stream, stream_sync
from weakprompt.transcript import Transcript

PNG = b"\x89PNG\r\n\x1a\n" + b"\x00" * 16
IMAGE = ImagePart(media_type="image/png", data=PNG, name="shot.png")
LINKED = DocumentPart(media_type="application/pdf", url="https://example.test/report.pdf")
INPUT: list[str | ImagePart | DocumentPart] = ["What is on this screen?", IMAGE, LINKED]
PARTS = (TextPart("What is on this screen?"), IMAGE, LINKED)


def _seen(requests: list[ModelRequest]) -> Message:
    return requests[0].context.messages[-1]


def _adapter() -> FunctionAdapter:
    return FunctionAdapter(lambda request: "a login form")


def _template() -> PromptTemplate[None]:
    return PromptTemplate(
        ns="parts", key="look", sections=[MarkdownSection(title="Task", key="task", template="Look.")]
    )


def _run_sync(adapter: FunctionAdapter, store: Store, session: Session, content: Content) -> str:
    return run_sync(Prompt(_template()), adapter=adapter, session=session, store=store, input=content).text


def _evaluate(adapter: FunctionAdapter, store: Store, session: Session, content: Content) -> str:
    return evaluate(Prompt(_template()), adapter=adapter, session=session, store=store, input=content).text


def _run(adapter: FunctionAdapter, store: Store, session: Session, content: Content) -> str:
    coroutine = run(Prompt(_template()), adapter=adapter, session=session, store=store, input=content)
    return asyncio.run(coroutine).text


def _stream_sync(adapter: FunctionAdapter, store: Store, session: Session, content: Content) -> str:
    with stream_sync(
        Prompt(_template()), adapter=adapter, session=session, store=store, input=content
    ) as events:
        finished = [event for event in events if isinstance(event, RunFinished)]
    return finished[0].response.text


def _stream(adapter: FunctionAdapter, store: Store, session: Session, content: Content) -> str:
    async def main() -> str:
        async with stream(
            Prompt(_template()), adapter=adapter, session=session, store=store, input=content
        ) as events:
            finished = [event async for event in events if isinstance(event, RunFinished)]
        return finished[0].response.text

    return asyncio.run(main())


def _agent_run_sync(adapter: FunctionAdapter, store: Store, session: Session, content: Content) -> str:
    return Agent(adapter, instructions="Look.", store=store).run_sync(content, session=session).text


def _agent_run(adapter: FunctionAdapter, store: Store, session: Session, content: Content) -> str:
    return asyncio.run(Agent(adapter, instructions="Look.", store=store).run(content, session=session)).text


def _agent_stream_sync(adapter: FunctionAdapter, store: Store, session: Session, content: Content) -> str:
    with Agent(adapter, instructions="Look.", store=store).stream_sync(content, session=session) as events:
        return next(event for event in events if isinstance(event, RunFinished)).response.text


def _agent_stream(adapter: FunctionAdapter, store: Store, session: Session, content: Content) -> str:
    async def main() -> str:
        async with Agent(adapter, instructions="Look.", store=store).stream(
            content, session=session
        ) as events:
            (finished,) = [event async for event in events if isinstance(event, RunFinished)]
            return finished.response.text

    return asyncio.run(main())


ENTRIES: dict[str, Callable[[FunctionAdapter, Store, Session, Content], str]] = {
    "run_sync": _run_sync,
    "evaluate": _evaluate,
    "run": _run,
    "stream_sync": _stream_sync,
    "stream": _stream,
    "Agent.run_sync": _agent_run_sync,
    "Agent.run": _agent_run,
    "Agent.stream_sync": _agent_stream_sync,
    "Agent.stream": _agent_stream,
}


@pytest.mark.parametrize("entry", list(ENTRIES))
def test_every_entry_point_sends_and_stores_input_made_of_parts(tmp_path: Path, entry: str) -> None:
    store = Store.open(tmp_path / "t.db")
    adapter = _adapter()
    session = Session(session_id="look")
    assert ENTRIES[entry](adapter, store, session, INPUT) == "a login form"
    sent = _seen(adapter.requests)
    assert (sent.role, sent.content, sent.parts) == ("user", "What is on this screen?", PARTS)
    stored = [m for m in Transcript(store, "look").compile().messages if m.role == "user"]
    assert stored[0].parts == PARTS


def test_plain_text_input_stays_a_message_without_parts(tmp_path: Path) -> None:
    adapter = _adapter()
    _agent_run_sync(adapter, Store.open(tmp_path / "t.db"), Session(), "hello")
    assert _seen(adapter.requests) == Message("user", "hello")


@pytest.mark.parametrize(
    ("content", "complaint"),
    [
        (["look", 3], r"input\[1\] is a int"),
        (b"bytes", "must be text"),
    ],
)
def test_input_that_is_not_text_or_parts_is_refused_naming_the_item(content: object, complaint: str) -> None:
    with pytest.raises(ConfigurationError, match=complaint):
        _template_run(content)
    with pytest.raises(ConfigurationError, match=complaint):
        Agent(_adapter(), instructions="x").run_sync(content)  # type: ignore[arg-type]


def _template_run(content: object) -> None:
    run_sync(Prompt(_template()), adapter=_adapter(), session=Session(), input=content)  # type: ignore[arg-type]
