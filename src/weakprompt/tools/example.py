"""Worked examples that document a tool next to its schema."""

from __future__ import annotations

from typing import Generic, TypeVar

import attrs

__all__ = ["ToolExample"]

P = TypeVar("P")
R = TypeVar("R")

MAX_EXAMPLE_DESCRIPTION = 200


def _check_description(_instance: object, _attribute: object, value: str) -> None:
    if len(value) > MAX_EXAMPLE_DESCRIPTION:
        raise ValueError(
            f"ToolExample description is {len(value)} characters; the limit is {MAX_EXAMPLE_DESCRIPTION}"
        )


@attrs.frozen
class ToolExample(Generic[P, R]):
    """One representative call: the params a model would send and what comes back."""

    description: str = attrs.field(validator=_check_description)
    input: P
    output: R
