"""ToolResult constructors and rendering; ToolContext shortcuts."""

from __future__ import annotations

import json
from dataclasses import dataclass

import attrs
import pytest
from hypothesis import given
from hypothesis import strategies as st

from weakprompt.resources import Filesystem, InMemoryFilesystem, ResourceRegistry
from weakprompt.session import Session
from weakprompt.tools import RenderableResult, ToolContext, ToolResult


@dataclass
class Point:
    x: int
    label: str


@attrs.frozen
class Summary:
    lines: int

    def render(self) -> str:
        return f"{self.lines} lines"


def test_ok_carries_the_value_and_succeeds() -> None:
    result = ToolResult.ok(Point(1, "a"), message="found it")
    assert (result.value, result.message, result.success) == (Point(1, "a"), "found it", True)
    assert not result.exclude_value_from_context


def test_error_has_no_value_and_fails() -> None:
    result = ToolResult.error("no such entity")
    assert (result.value, result.message, result.success) == (None, "no such entity", False)


def test_render_uses_the_values_own_render() -> None:
    assert isinstance(Summary(3), RenderableResult)
    assert ToolResult.ok(Summary(3), message="ignored").render() == "3 lines"


def test_render_dumps_other_values_as_compact_json() -> None:
    rendered = ToolResult.ok(Point(2, "é"), message="ignored").render()
    assert rendered == '{"x":2,"label":"é"}'
    assert json.loads(rendered) == {"x": 2, "label": "é"}


@given(st.lists(st.integers()), st.text())
def test_render_of_json_values_round_trips(values: list[int], message: str) -> None:
    assert json.loads(ToolResult.ok(values, message=message).render()) == values


def test_render_falls_back_to_the_message_without_a_value() -> None:
    assert ToolResult.error("boom").render() == "boom"
    assert ToolResult(message="done", value=None).render() == "done"


def test_excluded_value_is_not_rendered() -> None:
    result = ToolResult(message="stored 3 rows", value=Point(1, "secret"), exclude_value_from_context=True)
    assert result.render() == "stored 3 rows"
    assert result.value == Point(1, "secret")


def test_results_are_frozen() -> None:
    result = ToolResult.ok(1)
    with pytest.raises(attrs.exceptions.FrozenInstanceError):
        result.success = False  # type: ignore[misc]


def test_context_without_resources_has_no_filesystem() -> None:
    context = ToolContext(session=Session())
    assert context.filesystem is None
    assert context.prompt is None and context.deadline is None and context.budget_tracker is None


def test_context_filesystem_is_the_registered_one() -> None:
    fs = InMemoryFilesystem({"a.txt": "hello"})
    context = ToolContext(session=Session(), resources=ResourceRegistry({Filesystem: fs}))
    assert context.filesystem is fs
    assert ToolContext(session=Session(), resources=ResourceRegistry()).filesystem is None
