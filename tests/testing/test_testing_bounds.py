"""Generated values sit on the bounds a schema states often enough that check_tool finds a crash there.

A handler that breaks only at ``le=4096`` used to slip through about one run
in eight at 100 examples; each test below runs check_tool 30 times (each run
with its own random seed) and needs every run to find it.
"""

from __future__ import annotations

import dataclasses
import math
from typing import Annotated, Any

import pytest
from hypothesis import Phase, find, given, settings

from weakprompt.serde import Meta
from weakprompt.serde.nodes import NumberNode
from weakprompt.testing import check_tool, json_for
from weakprompt.testing._generate import MAX_EDGE_ITEMS, number_edges
from weakprompt.tools import Tool, ToolContext, ToolResult

RUNS = 30
# hypothesis's default example count, whatever the suite's profile says; no explain phase (slow, and
# the shrunk arguments are what is checked)
DEFAULT_EXAMPLES = settings(max_examples=100, phases=[Phase.explicit, Phase.generate, Phase.shrink])


def crashing_at(params_type: type[Any], crashes: Any) -> Tool[Any, None]:
    def handler(params: Any, *, context: ToolContext) -> ToolResult[None]:
        if crashes(params):
            raise RuntimeError("crashed at the bound")
        return ToolResult(message="ok")

    handler.__annotations__["params"] = params_type
    return Tool(name="resize", description="Resize.", handler=handler, params_type=params_type)


def found_every_time(tool: Tool[Any, None], shrunk: str) -> None:
    for run in range(RUNS):
        with pytest.raises(AssertionError) as failure:
            check_tool(tool, settings=DEFAULT_EXAMPLES)
        message = str(failure.value)
        assert "the handler raised RuntimeError" in message, f"run {run}: {message}"
        assert f"arguments: {shrunk}" in message, f"run {run}: {message}"


@dataclasses.dataclass(frozen=True)
class Resize:
    width: Annotated[int, Meta(ge=-4096, le=4096)]


def test_check_tool_finds_a_crash_only_at_the_upper_bound() -> None:
    found_every_time(crashing_at(Resize, lambda p: p.width == 4096), '{"width": 4096}')


def test_check_tool_finds_a_crash_only_at_the_lower_bound() -> None:
    found_every_time(crashing_at(Resize, lambda p: p.width == -4096), '{"width": -4096}')


@dataclasses.dataclass(frozen=True)
class Scale:
    steps: Annotated[int, Meta(gt=0, lt=1000)]
    ratio: Annotated[float, Meta(gt=0.0, lt=1.0)] = 0.5


def test_check_tool_finds_a_crash_only_next_to_an_exclusive_bound() -> None:
    found_every_time(crashing_at(Scale, lambda p: p.steps == 999), '{"steps": 999}')


def test_check_tool_finds_a_crash_only_next_to_an_exclusive_float_bound() -> None:
    below_one = math.nextafter(1.0, 0.0)
    found_every_time(
        crashing_at(Scale, lambda p: p.ratio == below_one), f'{{"steps": 1, "ratio": {below_one!r}}}'
    )


@dataclasses.dataclass(frozen=True)
class Label:
    text: Annotated[str, Meta(min_length=2, max_length=300)]


@dataclasses.dataclass(frozen=True)
class Sizes:
    sizes: Annotated[list[int], Meta(min_length=1, max_length=50)]


@dataclasses.dataclass(frozen=True)
class Flags:
    flags: Annotated[dict[str, bool], Meta(max_length=20)]


def test_check_tool_finds_a_crash_only_at_the_longest_text() -> None:
    found_every_time(crashing_at(Label, lambda p: len(p.text) == 300), '{"text": "' + "0" * 300 + '"}')


def test_check_tool_finds_a_crash_only_at_the_longest_array() -> None:
    found_every_time(
        crashing_at(Sizes, lambda p: len(p.sizes) == 50), '{"sizes": [' + ", ".join(["0"] * 50) + "]}"
    )


def test_check_tool_finds_a_crash_only_at_the_largest_object() -> None:
    tool = crashing_at(Flags, lambda p: len(p.flags) == 20)
    for run in range(RUNS):
        with pytest.raises(AssertionError, match="the handler raised RuntimeError") as failure:
            check_tool(tool, settings=DEFAULT_EXAMPLES)
        assert str(failure.value).count(": false") == 20, f"run {run}: {failure.value}"


# -- the edges themselves --------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("node", "expected"),
    [
        (NumberNode(integer=True, ge=1, le=4096), [1, 4096]),
        (NumberNode(integer=True, gt=0, lt=10), [1, 9]),
        (NumberNode(integer=True, gt=0.5, le=2.5), [1, 2]),
        (NumberNode(integer=True), []),
        (NumberNode(integer=True, ge=2**60), [2**60]),
        (NumberNode(integer=False, ge=2**60), [2.0**60]),  # no integer a float cannot hold exactly
        (NumberNode(integer=False, ge=0, le=1), [0, 1, 0.0, 1.0]),
        (NumberNode(integer=False, gt=0.0), [1, 5e-324]),
        (NumberNode(integer=False, lt=1.0), [0, math.nextafter(1.0, 0.0)]),
        (NumberNode(integer=False, ge=-math.inf, le=math.inf), []),
        (NumberNode(integer=False, gt=1.0, lt=1.0), []),
        (NumberNode(integer=False, gt=0.0, lt=5e-324), []),  # no float between the two
    ],
)
def test_number_edges_are_the_bounds_or_their_nearest_neighbours(
    node: NumberNode, expected: list[object]
) -> None:
    edges = number_edges(node)
    assert edges == expected
    assert [type(edge) for edge in edges] == [type(value) for value in expected]


@dataclasses.dataclass(frozen=True)
class Bounded:
    width: Annotated[int, Meta(ge=1, le=4096)]
    name: Annotated[str, Meta(min_length=2, max_length=300)]
    tags: Annotated[list[int], Meta(max_length=20)]
    huge: Annotated[list[int], Meta(max_length=MAX_EDGE_ITEMS + 1)]


def test_each_stated_bound_is_drawn_often() -> None:
    drawn: list[Any] = []

    @settings(max_examples=300, derandomize=True, database=None)
    @given(json_for(Bounded))
    def collect(data: Any) -> None:
        drawn.append(data)

    collect()
    share = {
        "width 1": sum(d["width"] == 1 for d in drawn),
        "width 4096": sum(d["width"] == 4096 for d in drawn),
        "name 2": sum(len(d["name"]) == 2 for d in drawn),
        "name 300": sum(len(d["name"]) == 300 for d in drawn),
        "tags 20": sum(len(d["tags"]) == 20 for d in drawn),
    }
    assert all(count >= len(drawn) / 8 for count in share.values()), share
    assert not any(len(d["huge"]) > MAX_EDGE_ITEMS for d in drawn)  # too large to draw at its bound


def test_a_stated_minimum_length_of_zero_is_drawn_as_empty_text() -> None:
    @dataclasses.dataclass(frozen=True)
    class Short:
        text: Annotated[str, Meta(min_length=0, max_length=3)]

    assert find(json_for(Short), lambda data: data == {"text": ""}) == {"text": ""}
    assert any(len(text) == 3 for text in _drawn_texts(Short))


def _drawn_texts(tp: type[Any]) -> list[str]:
    texts: list[str] = []

    @settings(max_examples=50, derandomize=True, database=None)
    @given(json_for(tp))
    def collect(data: Any) -> None:
        texts.append(data["text"])

    collect()
    return texts
