"""A small research agent on the embedded local model (the ``make demo`` example).

Run: ``.venv/bin/python examples/research_agent.py [--question TEXT] [--db PATH]``.

What it shows, end to end, with no API key:

- a prompt whose tools live in two sections (``search_notes`` in the research
  section, ``source_for`` in the reporting section) and a structured output
  type (the ``Finding`` dataclass);
- an ``Agent`` on ``LocalAdapter()`` (SmolLM2-135M-Instruct through
  llama.cpp) holding that prompt and its run settings: the first turn forces
  ``search_notes`` (a 135M model will not reliably choose a tool by itself),
  the shared dispatcher runs it, the result goes back, and the model writes
  its final answer, which is parsed into a ``Finding``;
- every turn printed as it happens (from the loop's events), then the stored
  transcript and the parsed output.

Exit status: 0 when the run itself worked, meaning the forced tool call
succeeded through the dispatcher and the model answered after reading its
result. A tiny model may still write an answer that does not fit ``Finding``
even after the loop's corrective turn; that is printed as a clearly marked
warning and does not change the exit status, because it is a limit of the
model, not of the machinery. Anything else (the model failing to load, an
adapter error, the tool failing, a turn limit) exits with status 1.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from dataclasses import dataclass, field
from typing import Annotated, Literal

from weakprompt import (
    Agent,
    ForceTool,
    LocalAdapter,
    MarkdownSection,
    Meta,
    OutputParseError,
    Prompt,
    PromptTemplate,
    Session,
    Store,
    ToolContext,
    ToolResult,
    Transcript,
    WeakpromptError,
    tool,
)
from weakprompt.events import ModelTurnCompleted, OutputRejected, ToolInvoked, ToolResultStored
from weakprompt.serde import dump

NoteId = Literal["n1", "n2", "n3", "n4"]

# Research notes by topic: (note id, text, source).
NOTES: dict[str, tuple[NoteId, str, str]] = {
    "eiffel tower": (
        "n1",
        "The Eiffel Tower in Paris is 330 metres tall and was finished in 1889.",
        "Tour Eiffel official site",
    ),
    "honey": (
        "n2",
        "Honey never spoils: edible honey has been found in ancient Egyptian tombs.",
        "Smithsonian Magazine",
    ),
    "octopus": ("n3", "Octopuses have three hearts and blue blood.", "Natural History Museum"),
    "moon": ("n4", "The Moon is about 384,400 kilometres from the Earth.", "NASA Moon fact sheet"),
}


@dataclass(frozen=True)
class Question:
    question: str


@dataclass(frozen=True)
class SearchNotes:
    # The local adapter turns this schema into a grammar, so the length limit
    # keeps a 135M model from rambling inside the string.
    keywords: Annotated[str, Meta(max_length=40)]


@dataclass(frozen=True)
class Note:
    note_id: str
    text: str

    def render(self) -> str:
        """What the model reads: the note as a sentence, not as JSON."""
        return f"Note {self.note_id}: {self.text}"


@dataclass(frozen=True)
class SourceFor:
    note_id: NoteId = field(metadata={"description": "Id of a note, such as n1."})


@dataclass(frozen=True)
class Finding:
    answer: Annotated[str, Meta(description="One short sentence that answers the question.", max_length=160)]
    note_id: NoteId = field(metadata={"description": "Id of the note the answer comes from."})


_STOPWORDS = frozenset(
    ["a", "an", "and", "are", "for", "from", "how", "is", "of", "on", "or", "the", "to", "was", "what", "who"]
)


def _words(text: str) -> set[str]:
    return {word for word in re.findall(r"[a-z0-9]+", text.lower()) if word not in _STOPWORDS}


def _best_note(text: str) -> Note | None:
    wanted = _words(text)
    score, topic = max((len(wanted & _words(f"{topic} {note[1]}")), topic) for topic, note in NOTES.items())
    if score == 0:
        return None
    note_id, note_text, _ = NOTES[topic]
    return Note(note_id, note_text)


@tool(name="search_notes", description="Search the research notes; returns the best matching note.")
def search_notes(params: SearchNotes, *, context: ToolContext) -> ToolResult[Note]:
    note = _best_note(params.keywords)
    if note is None and context.prompt is not None:
        # A tiny model's query can miss every keyword: fall back to the task's own question,
        # which the handler reads from the prompt's bound params.
        task = context.prompt.params(Question)
        note = _best_note(task.question) if task is not None else None
    if note is None:
        return ToolResult.error(f"No note matches {params.keywords!r}. Try other key words.")
    return ToolResult.ok(note, message=f"found {note.note_id}")


@tool(name="source_for", description="Name the source a research note was taken from.")
def source_for(params: SourceFor, *, context: ToolContext) -> ToolResult[None]:
    for note_id, _, source in NOTES.values():
        if note_id == params.note_id:
            return ToolResult(message=f"{note_id} comes from: {source}")
    return ToolResult.error(f"No note {params.note_id!r}.")


TEMPLATE: PromptTemplate[Finding] = PromptTemplate(
    ns="examples",
    key="research",
    name="research-agent",
    output_type=Finding,
    sections=[
        MarkdownSection(
            title="Research",
            key="research",
            template="Answer this question: $question\nUse search_notes to find the fact in the notes.",
            params_type=Question,
            tools=[search_notes],
        ),
        MarkdownSection(
            title="Reporting",
            key="reporting",
            template=(
                "Reply with JSON: an object with answer (one short sentence) and note_id "
                "(the id of the note you used). source_for names a note's source if needed."
            ),
            tools=[source_for],
        ),
    ],
)


DEFAULT_QUESTION = "How tall is the Eiffel Tower?"


def build_prompt(question: str = DEFAULT_QUESTION) -> Prompt[Finding]:
    """The bound prompt; also usable from the CLI:
    ``weakprompt run examples/research_agent.py:build_prompt --force-tool search_notes``.
    """
    return Prompt(TEMPLATE).bind(Question(question))


def _print_live(session: Session) -> None:
    def on_turn(event: ModelTurnCompleted) -> None:
        print(
            f"\n--- turn {event.turn} ({event.usage.input_tokens} tokens in, {event.usage.output_tokens} out)"
        )
        if event.text:
            print(f"assistant: {event.text}")
        for call in event.tool_calls:
            arguments = call.arguments if isinstance(call.arguments, str) else json.dumps(call.arguments)
            print(f"tool call: {call.name}({arguments})")

    def on_result(event: ToolResultStored) -> None:
        print(f"tool {'FAILED' if event.is_error else 'result'}: {event.content}")

    def on_rejected(event: OutputRejected) -> None:
        then = "asking for a correction" if event.retrying else "no correction left"
        print(f"answer rejected ({then}): {event.errors}")

    session.bus.subscribe(ModelTurnCompleted, on_turn)
    session.bus.subscribe(ToolResultStored, on_result)
    session.bus.subscribe(OutputRejected, on_rejected)


def _print_transcript(store: Store, session_id: str) -> None:
    print("\n=== stored transcript (what the model saw, in order)")
    transcript = Transcript(store, session_id)
    for commit in transcript.compile_view().commits:
        message = commit.content
        label = message.role if message.role != "tool" else f"tool {message.name}"
        if message.is_error:
            label += " (error)"
        text = message.content.strip().replace("\n", "\n    ")
        print(f"[{commit.seq}] {label}: {text}")
        for call in message.tool_calls:
            print(f"    -> {call.name} {call.arguments}")
        tools = transcript.get_commit_tools(commit.hash) if message.role == "assistant" else []
        if tools:
            print(f"    (tools offered: {', '.join(str(t['name']) for t in tools)})")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--question", default=DEFAULT_QUESTION)
    parser.add_argument("--db", default="sqlite://", help="where to keep the transcript (default: memory)")
    args = parser.parse_args(argv)

    session = Session()
    _print_live(session)
    calls: list[ToolInvoked] = []
    session.bus.subscribe(ToolInvoked, calls.append)
    turns: list[ModelTurnCompleted] = []
    session.bus.subscribe(ModelTurnCompleted, turns.append)
    store = Store.open(args.db)

    print(f"question: {args.question}")
    print("loading the local model (SmolLM2-135M-Instruct)...")
    try:
        agent = Agent(
            LocalAdapter(),
            template=TEMPLATE,
            store=store,
            tool_choice=ForceTool("search_notes"),
            max_turns=6,
            max_output_tokens=160,
        )
        response = agent.run_sync(args.question, params=(Question(args.question),), session=session)
    except OutputParseError as exc:
        _print_transcript(store, session.session_id)
        worked = any(call.success for call in calls) and len(turns) >= 2
        print("\n!!! STRUCTURED OUTPUT NOT PARSED: the model's final answer did not fit Finding")
        print(f"!!! even after the corrective turn: {exc}")
        print(
            "!!! The loop itself ran: tool call through the dispatcher, result back, model answered."
            if worked
            else "!!! The run did not get that far."
        )
        return 0 if worked else 1
    except WeakpromptError as exc:
        _print_transcript(store, session.session_id)
        print(f"\nevaluation failed: {type(exc).__name__}: {exc}", file=sys.stderr)
        return 1

    _print_transcript(store, session.session_id)
    print("\n=== parsed output (Finding)")
    print(json.dumps(dump(response.output), indent=2))
    usage = response.usage
    print(
        f"\n{response.turns} model calls, {response.tool_calls} tool call(s), "
        f"{usage.input_tokens} input and {usage.output_tokens} output tokens; session {response.session_id}"
    )
    if args.db != "sqlite://":
        print(f"inspect it again: weakprompt transcript show --db {args.db} --session {response.session_id}")
    if not any(execution.success for execution in response.tool_executions):
        print("the forced tool call did not succeed", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
