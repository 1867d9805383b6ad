"""serde builds classes through cattrs' generated functions: what that must not change.

cattrs collects failures per attribute, reports unknown keys as a set and wraps
whatever the constructor raises; these tests hold parse to its own promises
(paths by JSON key, input order, only bad input becomes a SerdeError) and
check cattrs stays out of ``import weakprompt``.
"""

from __future__ import annotations

import dataclasses
import subprocess
import sys
from collections.abc import Iterator, Mapping

import attrs
import pytest
from hypothesis import given
from hypothesis import strategies as st

from weakprompt.serde import SerdeError, dump, parse


@attrs.frozen
class Row:
    _secret: str
    level: int = 0

    def __attrs_post_init__(self) -> None:
        if self._secret == "reject":
            raise ValueError("secret may not be 'reject'")


@dataclasses.dataclass(frozen=True)
class Table:
    rows: list[Row]
    title: str


def test_cattrs_loads_with_the_first_parse_not_with_import_weakprompt() -> None:
    script = (
        "import sys, dataclasses\n"
        "import weakprompt, weakprompt.serde\n"
        "from weakprompt.serde import parse\n"
        "assert 'cattrs' not in sys.modules\n"
        "@dataclasses.dataclass\n"
        "class A:\n"
        "    x: int\n"
        "assert parse(A, {'x': 1}) == A(1)\n"
        "assert 'cattrs' in sys.modules\n"
    )
    subprocess.run([sys.executable, "-c", script], check=True)


def test_cattrs_loads_with_the_first_class_dumped_not_with_a_plain_dump() -> None:
    script = (
        "import sys, dataclasses\n"
        "from weakprompt.serde import dump\n"
        "assert dump({'a': [1, 'x', None]}) == {'a': [1, 'x', None]}\n"
        "assert 'cattrs' not in sys.modules\n"
        "@dataclasses.dataclass\n"
        "class A:\n"
        "    x: int\n"
        "assert dump(A(1)) == {'x': 1}\n"
        "assert 'cattrs' in sys.modules\n"
    )
    subprocess.run([sys.executable, "-c", script], check=True)


def test_errors_inside_nested_classes_name_each_json_key_not_the_attribute() -> None:
    data = {
        "rows": [{"secret": "ok"}, {"level": "high", "colour": 1}, {"secret": "reject"}],
        "title": 3,
    }
    with pytest.raises(SerdeError) as caught:
        parse(Table, data)
    assert str(caught.value) == (
        "invalid Table (5 problems):\n"
        "- $.rows[1].secret: expected string (required); received nothing (missing)\n"
        '- $.rows[1].level: expected integer; received string "high"\n'
        '- $.rows[1].colour: expected only known fields (secret, level); received unknown field "colour"\n'
        "- $.rows[2]: expected a valid Row; received rejected by Row: secret may not be 'reject'\n"
        "- $.title: expected string; received integer 3"
    )


@given(
    st.lists(st.text(min_size=1).filter(lambda key: key not in ("secret", "level")), unique=True, min_size=2)
)
def test_unknown_keys_are_listed_in_the_order_the_input_gave_them(unknown: list[str]) -> None:
    data: dict[str, object] = {"secret": "s", **dict.fromkeys(unknown, 1)}
    with pytest.raises(SerdeError) as caught:
        parse(Row, data)
    assert [issue.received for issue in caught.value.issues] == [
        f"unknown field {_quoted(key)}" for key in unknown
    ]


def _quoted(key: str) -> str:
    from weakprompt.jsonpath import quote

    return quote(key)


@dataclasses.dataclass(frozen=True)
class Fragile:
    name: str

    def __post_init__(self) -> None:
        raise RuntimeError("a bug in the class, not in the input")


class _Exploding(Mapping[str, object]):
    """A mapping that lists a key and then fails to produce it."""

    def __getitem__(self, key: str) -> object:
        raise RuntimeError(f"storage for {key} is gone")

    def __iter__(self) -> Iterator[str]:
        return iter(["name"])

    def __len__(self) -> int:
        return 1


def test_a_mapping_that_fails_while_read_is_its_own_error_not_bad_input() -> None:
    with pytest.raises(RuntimeError, match="storage for name is gone"):
        parse(Fragile, _Exploding())


def test_a_constructor_bug_other_than_type_or_value_error_propagates_as_itself() -> None:
    with pytest.raises(RuntimeError, match="a bug in the class"):
        parse(Fragile, {"name": "x"})


@dataclasses.dataclass
class WithDerived:
    a: int
    b: int = dataclasses.field(init=False, default=5)


@attrs.define
class AttrsWithDerived:
    _hidden: str
    derived: int = attrs.field(init=False, default=3)


def test_dump_writes_constructor_arguments_only_keyed_by_their_json_names() -> None:
    assert dump(WithDerived(1)) == {"a": 1}
    assert dump(AttrsWithDerived("h")) == {"hidden": "h"}
    assert parse(AttrsWithDerived, dump(AttrsWithDerived("h"))) == AttrsWithDerived("h")
