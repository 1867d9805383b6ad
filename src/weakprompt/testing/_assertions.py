"""Assertions about what a run did, failing with a readable diff.

No hypothesis and no pytest here: the pytest plugin and plain ``assert``
users get the same messages.
"""

from __future__ import annotations

import difflib
import json
import re
from collections.abc import Collection, Iterable, Mapping, Sequence
from types import EllipsisType
from typing import TYPE_CHECKING, Protocol, TypeAlias

from weakprompt.events import ToolInvoked
from weakprompt.messages import Message, Role
from weakprompt.serde import SerdeTypeError, dump
from weakprompt.session import Session
from weakprompt.transcript import Transcript

if TYPE_CHECKING:
    from weakprompt.runtime import ToolExecution
    from weakprompt.transcript import CompiledContext

__all__ = ["ExpectedMessage", "assert_tool_called", "assert_transcript"]


class _Executions(Protocol):
    """A ``PromptResponse`` or anything else that lists its tool executions."""

    @property
    def tool_executions(self) -> tuple[ToolExecution, ...]: ...


_UNSET: object = object()

ExpectedMessage: TypeAlias = "tuple[Role, str | re.Pattern[str] | EllipsisType]"
"""``(role, content)``: content is exact text, a pattern it must fully match, or ``...`` for any."""


def _events(source: Session | _Executions | Iterable[ToolInvoked]) -> tuple[ToolInvoked, ...]:
    if isinstance(source, Session):
        return source[ToolInvoked].all()
    if isinstance(source, Iterable):
        return tuple(source)
    return tuple(execution.event for execution in source.tool_executions)


def _pretty(value: object) -> str:
    try:
        data = dump(value)
    except SerdeTypeError:
        return repr(value)
    return json.dumps(data, indent=2, sort_keys=True, ensure_ascii=False, default=repr)


def _decoded(arguments: str) -> object:
    try:
        return json.loads(arguments) if arguments.strip() else {}
    except ValueError:
        return arguments


def _summary(index: int, event: ToolInvoked) -> str:
    outcome = "ok" if event.success else "failed"
    return f"  #{index} {event.name}({event.arguments}) -> {outcome}: {event.result.message[:80]!r}"


def _diff(expected: str, actual: str, label: str) -> str:
    lines = difflib.unified_diff(
        expected.splitlines(), actual.splitlines(), "expected", label, lineterm="", n=3
    )
    return "\n".join(lines)


def assert_tool_called(
    source: Session | _Executions | Iterable[ToolInvoked],
    name: str,
    *,
    params: object = _UNSET,
    arguments: Mapping[str, object] | None = None,
    times: int | None = None,
    success: bool | None = None,
) -> tuple[ToolInvoked, ...]:
    """Assert ``name`` was called (``times`` times, if given) as described; return those calls.

    ``source`` is a session (its ``ToolInvoked`` log), a ``PromptResponse``
    or the events themselves. ``params`` compares the parsed params object,
    ``arguments`` the decoded JSON the model sent, ``success`` the outcome.
    On failure the message lists every call and diffs the closest one.
    """
    events = _events(source)
    named = [event for event in events if event.name == name]
    matching = [
        event
        for event in named
        if (params is _UNSET or event.params == params)
        and (arguments is None or _decoded(event.arguments) == dict(arguments))
        and (success is None or event.success == success)
    ]
    if (times is None and matching) or (times is not None and len(matching) == times):
        return tuple(matching)
    wanted = f"{times} call(s)" if times is not None else "a call"
    conditions = [
        text
        for text, given in (
            ("with these params", params is not _UNSET),
            ("with these arguments", arguments is not None),
            (f"that {'succeeded' if success else 'failed'}", success is not None),
        )
        if given
    ]
    lines = [
        f"expected {wanted} to {name!r} {' and '.join(conditions)}".rstrip() + f", found {len(matching)}"
    ]
    if events:
        lines.append("calls made:")
        lines.extend(_summary(index, event) for index, event in enumerate(events, start=1))
    else:
        lines.append("no tool was called")
    if named and not matching and (params is not _UNSET or arguments is not None):
        closest = named[0]
        if params is not _UNSET:
            lines.append(_diff(_pretty(params), _pretty(closest.params), f"params of the first {name} call"))
        else:
            lines.append(
                _diff(
                    _pretty(arguments),
                    _pretty(_decoded(closest.arguments)),
                    f"arguments of the first {name} call",
                )
            )
    raise AssertionError("\n".join(lines))


def _messages(source: Transcript | CompiledContext | Sequence[Message]) -> tuple[Message, ...]:
    if isinstance(source, Sequence):
        return tuple(source)
    if isinstance(source, Transcript):
        return source.compile().messages
    return source.messages


def _line(role: str, content: str) -> str:
    return f"{role}: {content}"


def _expected_text(content: str | re.Pattern[str] | EllipsisType) -> str:
    if isinstance(content, EllipsisType):
        return "..."
    if isinstance(content, re.Pattern):
        return f"/{content.pattern}/"
    return content


def _matches(message: Message, role: str, content: str | re.Pattern[str] | EllipsisType) -> bool:
    if message.role != role:
        return False
    if isinstance(content, EllipsisType):
        return True
    if isinstance(content, re.Pattern):
        return content.fullmatch(message.content) is not None
    return message.content == content


def assert_transcript(
    source: Transcript | CompiledContext | Sequence[Message],
    expected: Sequence[ExpectedMessage],
    *,
    roles: Collection[Role] | None = None,
) -> tuple[Message, ...]:
    """Assert the conversation is exactly ``expected``; return the messages compared.

    ``source`` is a transcript (compiled with every stored result loaded),
    a compiled context or a list of messages. ``roles`` keeps only messages
    of those roles (e.g. leave out the system prompt). The failure shows a
    unified diff of ``role: content`` lines.
    """
    messages = tuple(message for message in _messages(source) if roles is None or message.role in roles)
    if len(messages) == len(expected) and all(
        _matches(message, role, content) for message, (role, content) in zip(messages, expected, strict=True)
    ):
        return messages
    expected_text = "\n".join(_line(role, _expected_text(content)) for role, content in expected)
    actual_lines: list[str] = []
    for message, entry in zip(messages, [*expected, *([None] * len(messages))], strict=False):
        if entry is not None and _matches(message, entry[0], entry[1]):
            actual_lines.append(
                _line(entry[0], _expected_text(entry[1]))
            )  # equal lines stay quiet in the diff
        else:
            actual_lines.append(_line(message.role, message.content))
    raise AssertionError(
        f"the transcript differs from the expected {len(expected)} message(s) "
        f"({len(messages)} found)\n" + _diff(expected_text, "\n".join(actual_lines), "transcript")
    )
