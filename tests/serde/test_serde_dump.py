"""dump: typed values back to plain JSON data."""

from __future__ import annotations

import dataclasses
import datetime as dt
import enum
import json
import uuid
from decimal import Decimal
from pathlib import PurePosixPath

import attrs
import pytest

from weakprompt.serde import SerdeTypeError, dump, parse


class Mood(enum.Enum):
    UP = "up"


class Key(enum.StrEnum):
    A = "a"


@attrs.frozen
class Entry:
    when: dt.datetime
    day: dt.date
    at: dt.time
    ident: uuid.UUID
    price: Decimal
    path: PurePosixPath
    mood: Mood
    pair: tuple[int, str]
    table: dict[str, list[int]]


def test_dump_writes_canonical_json_forms() -> None:
    entry = Entry(
        when=dt.datetime(2024, 1, 2, 3, 4, 5, tzinfo=dt.UTC),
        day=dt.date(2024, 1, 2),
        at=dt.time(3, 4),
        ident=uuid.UUID(int=1),
        price=Decimal("9.90"),
        path=PurePosixPath("a/b"),
        mood=Mood.UP,
        pair=(1, "x"),
        table={"k": [1, 2]},
    )
    out = dump(entry)
    assert out == {
        "when": "2024-01-02T03:04:05+00:00",
        "day": "2024-01-02",
        "at": "03:04:00",
        "ident": "00000000-0000-0000-0000-000000000001",
        "price": "9.90",
        "path": "a/b",
        "mood": "up",
        "pair": [1, "x"],
        "table": {"k": [1, 2]},
    }
    json.dumps(out)
    assert parse(Entry, out) == entry
    assert dump(entry) == out  # second call goes through the per-class cache


def test_dump_plain_containers_and_subclasses() -> None:
    class Text(str):
        pass

    class Count(int):
        pass

    class Ratio(float):
        pass

    assert dump({"a": (Text("t"), Count(2), Ratio(0.5)), Text("b"): None}) == {"a": ["t", 2, 0.5], "b": None}
    assert type(dump(Text("t"))) is str
    assert type(dump(Count(2))) is int
    assert type(dump(Ratio(0.5))) is float
    assert dump({Key.A: 1}) == {"a": 1}


def test_dump_refuses_what_json_cannot_hold() -> None:
    for bad in ({1: "x"}, {1, 2}, object(), Decimal("NaN"), b"bytes"):
        with pytest.raises(SerdeTypeError):
            dump(bad)


def test_dump_of_a_class_object_is_refused() -> None:
    @dataclasses.dataclass
    class Thing:
        a: int = 1

    with pytest.raises(SerdeTypeError):
        dump(Thing)
    assert dump(Thing()) == {"a": 1}
