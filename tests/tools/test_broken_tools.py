"""Broken tools are visible by default: one WARNING per raising handler, even with logging unconfigured."""

from __future__ import annotations

import logging
import os
import re
import subprocess
import sys
import textwrap
from dataclasses import dataclass

import pytest

from weakprompt.adapters.testing import ScriptedAdapter, text_turn, tool_call, tool_call_turn
from weakprompt.errors import ToolValidationError
from weakprompt.messages import ToolCall
from weakprompt.prompt import MarkdownSection, Prompt, PromptTemplate
from weakprompt.runtime import ToolDispatcher, default_redact, evaluate
from weakprompt.runtime.tool_failures import (
    BROKEN_TOOL_LOGGER,
    once_per_defect,
    report_broken_tool,
    short_traceback,
)
from weakprompt.session import Session
from weakprompt.testing import check_tool
from weakprompt.tools import ToolContext, ToolResult, tool


@dataclass(frozen=True)
class Nothing:
    pass


_KEY = "sk-" + "supersecret"


def _inner_failure(key: str) -> None:
    raise RuntimeError(f"lookup failed with api_key={key}")


@tool(name="broken", description="Always raises.")
def broken(params: Nothing, *, context: ToolContext) -> ToolResult[None]:
    _inner_failure(_KEY)
    return ToolResult(message="unreachable")


@tool(name="picky", description="Refuses its input.")
def picky(params: Nothing, *, context: ToolContext) -> ToolResult[None]:
    raise ToolValidationError("not today")


def _prompt() -> Prompt[None]:
    return Prompt(
        PromptTemplate(
            ns="tests/broken",
            key="p",
            sections=[MarkdownSection(title="T", key="t", template="Use tools.", tools=[broken, picky])],
        )
    )


def _run(*names: str) -> None:
    adapter = ScriptedAdapter([tool_call_turn(*(tool_call(n, {}) for n in names)), text_turn("done")])
    evaluate(_prompt(), adapter=adapter, session=Session())


def _broken_records(caplog: pytest.LogCaptureFixture) -> list[logging.LogRecord]:
    return [r for r in caplog.records if r.name == BROKEN_TOOL_LOGGER]


def test_a_raising_handler_is_logged_once_at_warning_with_a_short_redacted_traceback(
    caplog: pytest.LogCaptureFixture,
) -> None:
    with caplog.at_level(logging.WARNING):
        _run("broken")
    (record,) = _broken_records(caplog)
    text = record.getMessage()
    assert record.levelno == logging.WARNING
    assert "'broken'" in text and "RuntimeError" in text
    assert "_inner_failure" in text and "in broken" in text  # the tool's own frames
    assert "_call_async" not in text and "thread.py" not in text  # not the dispatcher's machinery
    assert "sk-supersecret" not in text and "[REDACTED]" in text
    assert record.exc_info is None  # the traceback is the short one in the message


def test_each_failing_call_is_one_record_and_a_refusal_is_not_a_warning(
    caplog: pytest.LogCaptureFixture,
) -> None:
    with caplog.at_level(logging.INFO):
        _run("broken", "picky", "broken")
    assert len(_broken_records(caplog)) == 2
    refusals = [r for r in caplog.records if "rejected its input" in r.getMessage()]
    assert [r.levelno for r in refusals] == [logging.INFO]


def test_short_traceback_keeps_the_innermost_frames() -> None:
    def level(n: int) -> None:
        if n == 0:
            raise ValueError("deep")
        level(n - 1)

    try:
        level(6)
    except ValueError as exc:
        text = short_traceback(exc, frames=2)
    assert text.count("in level") == 2
    assert short_traceback(ValueError("never raised")) == ""


_SCRIPT = textwrap.dedent(
    """
    import logging, sys
    sys.path.insert(0, {tests!r})
    from test_broken_tools import _run
    if {configure!r}:
        logging.basicConfig(level=logging.WARNING, format="CONFIGURED %(name)s %(message)s")
    _run("broken")
    """
)


@pytest.mark.parametrize("configure", [False, True])
def test_a_broken_tool_reaches_stderr_exactly_once_configured_or_not(configure: bool) -> None:
    tests = str(__import__("pathlib").Path(__file__).parent)
    done = subprocess.run(
        [sys.executable, "-c", _SCRIPT.format(tests=tests, configure=configure)],
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    assert done.stderr.count("tool 'broken' raised RuntimeError") == 1, done.stderr
    assert "_inner_failure" in done.stderr
    assert ("CONFIGURED weakprompt.tools.broken" in done.stderr) is configure


def test_logging_lastresort_none_silences_the_fallback(monkeypatch: pytest.MonkeyPatch) -> None:
    handler = logging.getLogger(BROKEN_TOOL_LOGGER).handlers[0]
    record = logging.LogRecord(BROKEN_TOOL_LOGGER, logging.WARNING, __file__, 1, "x", None, None)
    seen: list[logging.LogRecord] = []

    class Catch(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            seen.append(record)

    catcher = Catch(logging.WARNING)
    root = logging.getLogger()
    monkeypatch.setattr(root, "handlers", [])
    monkeypatch.setattr(logging, "lastResort", catcher)
    handler.emit(record)
    assert seen == [record]
    low = logging.LogRecord(BROKEN_TOOL_LOGGER, logging.INFO, __file__, 1, "x", None, None)
    handler.emit(low)  # below the fallback's level
    assert seen == [record]
    monkeypatch.setattr(logging, "lastResort", None)
    handler.emit(record)
    assert seen == [record]
    broken_logger = logging.getLogger("weakprompt.tools")
    monkeypatch.setattr(broken_logger, "propagate", False)
    monkeypatch.setattr(logging, "lastResort", catcher)
    handler.emit(record)  # propagation stops before any real handler: still unconfigured
    assert seen == [record, record]


def _compile_user_pattern(pattern: str) -> object:
    return re.compile(pattern)  # the user's line: the warning must point here, not inside re


@tool(name="regex", description="Compiles a pattern.")
def regex(params: Nothing) -> ToolResult[None]:
    _compile_user_pattern("(unclosed")
    return ToolResult.ok(None)


def test_a_broken_tool_warning_points_at_the_users_frame_not_inside_re(
    caplog: pytest.LogCaptureFixture,
) -> None:
    dispatcher = ToolDispatcher([regex], session=Session())
    with caplog.at_level(logging.WARNING):
        dispatcher.execute(ToolCall(id="c1", name="regex", arguments={}))
    (record,) = _broken_records(caplog)
    text = record.getMessage()
    last_frame = [line for line in text.splitlines() if line.lstrip().startswith("File ")][-1]
    assert __file__ in last_frame and "_compile_user_pattern" in last_frame
    assert f"{os.sep}re{os.sep}" not in text  # no frame of the re package
    assert "error" in text  # the exception itself is still named


def test_short_traceback_keeps_library_frames_when_there_is_nothing_else() -> None:
    try:
        re.compile("(unclosed")
    except re.error as exc:
        exc.__traceback__ = exc.__traceback__.tb_next if exc.__traceback__ is not None else None
        text = short_traceback(exc)
    assert f"{os.sep}re{os.sep}" in text


@dataclass(frozen=True)
class Size:
    n: int


@tool(name="fragile", description="Breaks on every input.")
def fragile(params: Size) -> int:
    if params.n >= 0:
        raise ValueError(f"cannot measure {params.n}")
    raise KeyError(params.n)


def test_check_tool_warns_once_per_distinct_defect_not_once_per_example(
    caplog: pytest.LogCaptureFixture,
) -> None:
    with caplog.at_level(logging.WARNING):
        check_tool(fragile, allow_handler_errors=True, max_examples=30)
    kinds = sorted(r.getMessage().split(" raised ")[1].split(":")[0] for r in _broken_records(caplog))
    assert kinds == ["KeyError", "ValueError"]  # two defects, each once, whatever the examples
    with caplog.at_level(logging.WARNING):  # outside check_tool every failing call is reported again
        _run("broken")
        _run("broken")
    assert len(_broken_records(caplog)) == 4


def test_a_defect_without_frames_of_its_own_is_still_reported_once_per_defect(
    caplog: pytest.LogCaptureFixture,
) -> None:
    with caplog.at_level(logging.WARNING), once_per_defect():
        for _ in range(3):  # e.g. a handler whose signature does not fit: no frame inside the tool
            report_broken_tool("misfit", TypeError("takes 0 positional arguments"), redact=default_redact)
    assert len(_broken_records(caplog)) == 1
