"""Replaying a stored session: the recorded replies, today's prompt and tools, and the first difference."""

from __future__ import annotations

import inspect
import uuid
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Literal, TypeAlias, cast

import attrs

from ..errors import ConfigurationError
from ..events import PromptRendered
from ..messages import Usage
from ..model import CompiledContext
from ..prompt import OPEN_SECTIONS_TOOL, Prompt, PromptTemplate
from ..runtime.blocking import block_on
from ..runtime.history import HISTORY_KEY
from ..runtime.loop import run_with
from ..runtime.output_checks import OUTPUT_CORRECTION
from ..runtime.pause_records import decision_records
from ..runtime.recording import OUTPUT_SCHEMA_KEY, SECTIONS_KEY, SETTINGS_KEY
from ..runtime.run_settings import RunSettings, ToolWrapper
from ..session import Session
from ..store import Store
from ..store.tool_rows import fetch_definitions, fetch_session_links
from ..tokens import DEFAULT_TOKEN_COUNTER
from ..tools import ToolResult
from ..transcript import CompileView, Transcript
from ..transcript.lazy import LazyToolResults
from ._adapter import RecordedTurn, ReplayAdapter
from ._divergence import ReplayDivergence

if TYPE_CHECKING:
    from ..agent import Agent
    from ..jsontypes import JSONObject
    from ..messages import Message
    from ..tools import AnyTool, ToolContext
    from ..transcript import CommitInfo

__all__ = ["ReplayReport", "ToolMode", "replay", "replay_sync"]

ToolMode: TypeAlias = Literal["stored", "run"]
"""``"stored"``: each call answers with its recorded result; ``"run"``: handlers run again."""

_RUN_AGAIN = frozenset(
    {"approved"}
)  # with tools="run", only calls nobody refused, edited or answered run again


@attrs.frozen
class ReplayReport:
    """What a replay found: the model calls replayed, the first divergence, where the replay was recorded."""

    session_id: str
    """The recorded session."""
    replay_session_id: str
    """The fresh session the replay was recorded in (the recorded one is never written)."""
    replay_store: Store = attrs.field(eq=False, repr=False, kw_only=True)
    """The store holding ``replay_session_id``: a private in-memory one, or the recorded
    session's store when the replay was asked to be recorded (``record=True``)."""
    turns: int
    """Model calls answered from the recording before the replay ended or diverged."""
    recorded_turns: int
    divergence: ReplayDivergence | None

    @property
    def identical(self) -> bool:
        return self.divergence is None


@attrs.frozen
class _Recording:
    turns: tuple[RecordedTurn, ...]
    inputs: tuple[str | None, ...]
    results: dict[str, Message]


def _recording(store: Store, session_id: str) -> _Recording:
    """A session's recorded model calls, the user inputs that started its runs, and each call's result.

    Read from the log, not the compiled view: each call is given the
    conversation as it was when the reply came, with the edits made before
    it (a system message re-rendered when a section opened) and none after.
    """
    transcript = Transcript(store, session_id)
    log = transcript.log()
    with store.read() as conn:  # every linked tool set at once, not one read per call
        links = fetch_session_links(conn, session_id)
        definitions = fetch_definitions(conn, {h for hashes in links.values() for h in hashes})
    if not log:
        known = ", ".join(store.session_ids()) or "none"
        raise ConfigurationError(f"replay: session {session_id!r} has no commits (sessions: {known})")
    shown: list[Message] = []
    behind: list[CommitInfo] = []  # the commit behind each shown message
    run_start: str | None = None  # the input commit of the run under way
    position: dict[str, int] = {}  # an appended commit's hash -> its place in the conversation
    turns: list[RecordedTurn] = []
    inputs: list[str | None] = []
    results: dict[str, Message] = {}
    for commit in log:
        message = commit.content
        if commit.edit_target is not None and commit.edit_target in position:
            shown[position[commit.edit_target]] = message
            behind[position[commit.edit_target]] = commit
            continue
        if message.role == "assistant":
            tools = tuple(dict(definitions[h].schema) for h in links.get(commit.hash, ()))
            usage = commit.usage or Usage(model_calls=1)
            sent = _as_sent(shown, behind, run_start)
            sections = _sections(shown, behind)
            schema = commit.metadata.get(OUTPUT_SCHEMA_KEY)
            turns.append(
                RecordedTurn(
                    sent,
                    tools,
                    message,
                    usage,
                    _settings(commit.metadata),
                    sections=sections,
                    output_schema=schema if isinstance(schema, str) else None,
                )
            )
        elif message.role == "user" and not ({OUTPUT_CORRECTION, HISTORY_KEY} & set(commit.metadata)):
            inputs.append(message.content)
            run_start = commit.hash
        elif message.role == "tool" and message.tool_call_id is not None:
            results[message.tool_call_id] = message
        position[commit.hash] = len(shown)
        shown.append(message)
        behind.append(commit)
    return _Recording(tuple(turns), tuple(inputs) or (None,), results)


def _as_sent(shown: list[Message], behind: list[CommitInfo], run_start: str | None) -> tuple[Message, ...]:
    """The conversation as the loop sent it: results of earlier runs slimmed, as its compile does.

    The loop compiles with ``LazyToolResults`` (``load_tool_results=False``,
    the default, which the replay uses too): a stored result of an earlier
    run is sent as a short reference when that is shorter.
    """
    context = CompiledContext(messages=tuple(shown), commit_hashes=tuple(c.hash for c in behind))
    view = CompileView(context=context, commits=tuple(behind), token_counter=DEFAULT_TOKEN_COUNTER)
    return LazyToolResults(False, run_start)(view).context.messages


def _sections(shown: list[Message], behind: list[CommitInfo]) -> JSONObject | None:
    """The section hashes kept on the system commit a call was sent with (None: none kept)."""
    if not shown or shown[0].role != "system":
        return None
    kept = behind[0].metadata.get(SECTIONS_KEY)
    return dict(kept) if isinstance(kept, dict) else None


def _settings(metadata: JSONObject) -> JSONObject:
    recorded = metadata.get(SETTINGS_KEY)
    return dict(recorded) if isinstance(recorded, dict) else {}


def _wrapper(recording: _Recording, mode: ToolMode, run_again: frozenset[str]) -> ToolWrapper:
    """The tool wrapper of the replay: a recorded result per call id, or the handler for calls run again.

    ``open_sections`` always runs: opening a section re-renders the prompt,
    which the replay must do to send what was sent. Approvals are not asked
    again: a person decided each call when it was recorded, and a call that
    was refused, edited or answered by hand is answered with its recorded
    result even with ``tools="run"``.
    """

    def wrap(tool: AnyTool) -> AnyTool:
        if tool.name == OPEN_SECTIONS_TOOL:  # it changes the prompt, not the world: it must run again
            return tool
        inner = cast("Callable[..., object]", tool.handler)

        async def handler(params: Any, *, context: ToolContext) -> object:
            call_id = context.call_id or ""
            stored = recording.results.get(call_id)
            if stored is not None and (mode == "stored" or call_id not in run_again):
                return ToolResult[None](message=stored.content, value=None, success=not stored.is_error)
            outcome = inner(params, context=context)
            if inspect.isawaitable(outcome):
                outcome = await outcome
            return outcome

        return attrs.evolve(
            tool,
            handler=handler,
            params_type=tool.params_type,
            result_type=tool.result_type,
            requires_approval=False,
        )

    return wrap


async def replay(
    store: Store,
    session_id: str,
    *,
    prompt: Prompt[Any] | PromptTemplate[Any] | None = None,
    agent: Agent[Any] | None = None,
    tools: ToolMode = "stored",
    into: str | None = None,
    record: bool = False,
    raise_divergence: bool = False,
) -> ReplayReport:
    """Run ``prompt`` (or ``agent``'s prompt) again over a stored session, with no provider.

    Each model call is answered with the recorded reply after the request is
    checked against the recorded one (``specs/REPLAY.md``). The replayed run
    writes its own session ``into`` (default: a new id) to a private
    in-memory store (``report.replay_store``): a replay is a check, and
    storing each of its turns in the recorded store cost more than the rest
    of it. ``record=True`` writes it to ``store`` instead, to keep it there.
    The first divergence stops the replay and is reported (raised with
    ``raise_divergence``).
    """
    if (prompt is None) == (agent is None):
        raise ConfigurationError("replay: give exactly one of prompt= or agent=")
    if tools not in ("stored", "run"):
        raise ConfigurationError(f"replay: tools must be 'stored' or 'run', got {tools!r}")
    chosen: Prompt[Any] | PromptTemplate[Any] = (
        agent.prompt if agent is not None else cast("Prompt[Any]", prompt)
    )
    target: Prompt[Any] = chosen if isinstance(chosen, Prompt) else Prompt[Any](chosen)
    recording = _recording(store, session_id)
    run_again: frozenset[str] = frozenset()
    if tools == "run":
        decided = {record.call_id: record.decision for record in decision_records(store, session_id)}
        run_again = frozenset(
            call for call in recording.results if decided.get(call, "approved") in _RUN_AGAIN
        )
    replay_id = into if into is not None else f"{session_id}.replay-{uuid.uuid4().hex[:12]}"
    # Only a store given holds sessions: commits of its own, or a fork's shared ones
    if record and Transcript(store, replay_id).head is not None:
        raise ConfigurationError(f"replay: session {replay_id!r} already exists; replay into a fresh one")
    written = store if record else Store.open(clock=store.clock)
    session = Session(session_id=replay_id)
    rendered_now: list[tuple[tuple[str, str], ...]] = [()]

    def note(event: PromptRendered) -> None:
        rendered_now[0] = event.section_hashes

    session.bus.subscribe(PromptRendered, note)
    adapter = ReplayAdapter(
        recording.turns, render=lambda: target.render(session), sections=lambda: rendered_now[0]
    )
    divergence: ReplayDivergence | None = None
    try:
        for text in recording.inputs:
            settings = RunSettings(
                adapter=adapter,
                session=session,
                input=text,
                store=written,
                tool_wrapper=_wrapper(recording, tools, run_again),
                output_retries=agent.output_retries if agent is not None else 1,
                output_validators=agent.output_validators if agent is not None else (),
                model_settings=agent.model_settings if agent is not None else None,
                max_turns=max(len(recording.turns) + 1, 1),
            )
            await run_with(target, settings)
    except ReplayDivergence as found:
        divergence = found
    except BaseException:
        _drop(written, store)
        raise
    if divergence is None and adapter.served < adapter.recorded:
        divergence = ReplayDivergence(
            turn=adapter.served + 1,
            kind="turns",
            summary=(
                f"the replay ended after {adapter.served} model call(s); the recording has {adapter.recorded}"
            ),
        )
    if divergence is not None and raise_divergence:
        _drop(written, store)
        raise divergence
    return ReplayReport(
        session_id=session_id,
        replay_session_id=replay_id,
        replay_store=written,
        turns=adapter.served,
        recorded_turns=adapter.recorded,
        divergence=divergence,
    )


def _drop(written: Store, store: Store) -> None:
    """Close the replay's private store when no report will hand it out (the caller's stays open)."""
    if written is not store:
        written.close()


def replay_sync(
    store: Store,
    session_id: str,
    *,
    prompt: Prompt[Any] | PromptTemplate[Any] | None = None,
    agent: Agent[Any] | None = None,
    tools: ToolMode = "stored",
    into: str | None = None,
    record: bool = False,
    raise_divergence: bool = False,
) -> ReplayReport:
    """:func:`replay`, blocking."""
    return block_on(
        lambda: replay(
            store,
            session_id,
            prompt=prompt,
            agent=agent,
            tools=tools,
            into=into,
            record=record,
            raise_divergence=raise_divergence,
        )
    )
