"""Types and tools the testing-kit tests share: one of every type form serde supports."""

from __future__ import annotations

import dataclasses
import datetime as dt
import enum
import uuid
from collections.abc import Mapping, MutableSequence, Sequence
from decimal import Decimal
from pathlib import Path, PurePath, PurePosixPath, PureWindowsPath
from typing import Annotated, Any, Literal, NewType, Optional, Union

import attrs

from weakprompt.serde import Meta
from weakprompt.tools import Tool, ToolContext, ToolResult


class Color(enum.Enum):
    RED = "red"
    GREEN = "green"


class Level(enum.IntEnum):
    LOW = 1
    HIGH = 3


UserId = NewType("UserId", int)


@dataclasses.dataclass(frozen=True)
class Point:
    x: Annotated[int, Meta(ge=-100, le=100)]
    y: Annotated[float, Meta(gt=0, lt=1)] = 0.5


@attrs.frozen
class Tagged:
    """An attrs class with an alias, a factory default and a description."""

    label: Annotated[str, Meta(min_length=1, max_length=12, description="short label")]
    private_note: str = attrs.field(default="", alias="note")
    tags: list[str] = attrs.Factory(list)


@dataclasses.dataclass(frozen=True)
class TreeNode:
    """A recursive class."""

    name: str
    children: tuple[TreeNode, ...] = ()


# Every form serde maps, by a readable name (the root of the generated values).
TYPE_FORMS: dict[str, object] = {
    "str": str,
    "int": int,
    "float": float,
    "bool": bool,
    "none": None,
    "any": Any,
    "int ge/le": Annotated[int, Meta(ge=-5, le=5)],
    "int gt/lt": Annotated[int, Meta(gt=0, lt=3)],
    "int float bounds": Annotated[int, Meta(ge=0.5, lt=4.5)],
    "float ge/le": Annotated[float, Meta(ge=-1.5, le=2.5)],
    "float gt/lt": Annotated[float, Meta(gt=0, lt=1e-3)],
    "float huge bound": Annotated[float, Meta(ge=1e300)],
    "str lengths": Annotated[str, Meta(min_length=2, max_length=5)],
    "str pattern anchored": Annotated[str, Meta(pattern=r"^\d{3}-[a-z]+$")],
    "str pattern unanchored": Annotated[str, Meta(pattern=r"\w+@\w+\.com", max_length=40)],
    "str pattern and min length": Annotated[str, Meta(pattern="colou?r", min_length=8)],
    "str pattern classes": Annotated[str, Meta(pattern=r"^[\w\s]{1,6}\d$")],
    "literal mixed": Literal["a", 1, True, None, 2.5],
    "enum str": Color,
    "enum int": Level,
    "newtype": UserId,
    "optional": Optional[int],  # noqa: UP045
    "union scalars": Union[int, str],  # noqa: UP007
    "union int float": int | float,
    "union containers": list[int] | dict[str, str],
    "union class or none": Point | None,
    "union constrained": Annotated[int | str, Meta(ge=0, max_length=3)],
    "list": list[str],
    "list lengths": Annotated[list[bool], Meta(min_length=1, max_length=3)],
    "sequence": Sequence[int],
    "mutable sequence": MutableSequence[float],
    "tuple fixed": tuple[int, str, bool],
    "tuple empty": tuple[()],
    "tuple variadic": tuple[Color, ...],
    "dict": dict[str, int],
    "dict lengths": Annotated[dict[str, Level], Meta(min_length=1, max_length=2)],
    "mapping": Mapping[str, list[int]],
    "datetime": dt.datetime,
    "date": dt.date,
    "time": dt.time,
    "uuid": uuid.UUID,
    "decimal": Decimal,
    "path": Path,
    "pure path": PurePath,
    "posix path": PurePosixPath,
    "windows path": PureWindowsPath,
    "dataclass": Point,
    "attrs class": Tagged,
    "recursive class": TreeNode,
    "nested containers": dict[str, list[tuple[int, Point]]],
}


@dataclasses.dataclass(frozen=True)
class Everything:
    """Params with many field kinds at once (and defaults), for tools."""

    point: Point
    when: dt.datetime
    day: dt.date
    ident: uuid.UUID
    amount: Decimal
    color: Color
    code: Annotated[str, Meta(pattern=r"^[A-Z]{2}\d{2}$")]
    choice: Literal["x", "y", 3]
    pair: tuple[int, str]
    maybe: Point | None = None
    items: Annotated[list[Annotated[int, Meta(ge=0, le=9)]], Meta(max_length=3)] = dataclasses.field(
        default_factory=list
    )
    scores: Annotated[dict[str, float], Meta(max_length=2)] = dataclasses.field(default_factory=dict)
    name: Annotated[str, Meta(min_length=1, max_length=8)] = "x"
    level: Level = Level.LOW


def echo_everything(params: Everything, *, context: ToolContext) -> ToolResult[Everything]:
    return ToolResult.ok(params)


EVERYTHING_TOOL = Tool(name="everything", description="Echo every kind of field.", handler=echo_everything)
