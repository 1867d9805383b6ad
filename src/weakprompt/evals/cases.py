"""Datasets of typed cases: what an agent is asked, and what a good answer is.

A :class:`Case` is one question for the agent: the user's input, the
section params bound for its run, the expected answer (or none, when its
checks say what is good), the evaluators of that case alone, and free JSON
metadata. A :class:`Dataset` is named cases plus the evaluators of every
case. A dataset can also be read back from stored sessions
(:func:`dataset_from_sessions`): each session's first user input and its
final answer become a case expecting that answer again.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, Generic, overload

import attrs
from typing_extensions import TypeVar

from ..errors import ConfigurationError
from ..jsontypes import JSONValue
from ..prompt.output import parse_output
from ..transcript import Transcript
from .evaluators import Evaluator, ExpectedOutput

if TYPE_CHECKING:
    from ..store import Store

__all__ = ["Case", "Dataset", "dataset_from_sessions"]

InputT = TypeVar("InputT", default=object)
OutputT = TypeVar("OutputT", default=str)
_T = TypeVar("_T")


def _tuple(value: Iterable[_T]) -> tuple[_T, ...]:
    return tuple(value)


def _metadata(value: Mapping[str, JSONValue]) -> Mapping[str, JSONValue]:
    return MappingProxyType(dict(value))


def _name(_: object, attribute: attrs.Attribute[str], value: str) -> None:
    if not isinstance(value, str) or not value.strip() or len(value) > 255:
        raise ConfigurationError(
            f"{attribute.name} must be a non-empty text of at most 255 characters, got {value!r}"
        )


@attrs.frozen(kw_only=True)
class Case(Generic[InputT, OutputT]):
    """One case: the run's inputs, the answer expected (``None``: no expected answer), its checks.

    ``params`` are section params objects, bound to the agent's prompt for
    the run, as ``agent.run(params=...)`` takes them. ``expected`` is
    compared with the answer by :class:`~weakprompt.evals.ExpectedOutput`
    (a dataset's default evaluator); the answer is the typed output of an
    agent with an ``output_type``, the reply's text otherwise.
    """

    name: str = attrs.field(validator=_name)
    input: str | None = None
    params: tuple[InputT, ...] = attrs.field(default=(), converter=_tuple)
    expected: OutputT | None = None
    evaluators: tuple[Evaluator[OutputT], ...] = attrs.field(default=(), converter=_tuple)
    metadata: Mapping[str, JSONValue] = attrs.field(factory=dict[str, JSONValue], converter=_metadata)


def _expected_only() -> tuple[ExpectedOutput]:
    return (ExpectedOutput(),)


def _unique(_: object, attribute: object, cases: tuple[Case[Any, Any], ...]) -> None:
    seen: set[str] = set()
    for case in cases:
        if case.name in seen:
            raise ConfigurationError(f"Dataset: two cases are named {case.name!r}; case names must be unique")
        seen.add(case.name)


@attrs.frozen(kw_only=True)
class Dataset(Generic[InputT, OutputT]):
    """Named cases and the evaluators every case gets (besides its own).

    ``evaluators`` default to ``(ExpectedOutput(),)``: each case with an
    ``expected`` answer is compared with it. Case names are unique: they
    key the stored results and the comparison of two experiments.
    """

    name: str = attrs.field(validator=_name)
    cases: tuple[Case[InputT, OutputT], ...] = attrs.field(converter=_tuple, validator=_unique)
    evaluators: tuple[Evaluator[OutputT], ...] = attrs.field(factory=_expected_only, converter=_tuple)

    def case(self, name: str) -> Case[InputT, OutputT]:
        """The case named ``name``."""
        for case in self.cases:
            if case.name == name:
                return case
        raise KeyError(f"dataset {self.name!r} has no case {name!r} (it has {len(self.cases)} cases)")


@overload
def dataset_from_sessions(
    store: Store, session_ids: Iterable[str], *, name: str, output_type: None = None
) -> Dataset[object, str]: ...
@overload
def dataset_from_sessions(
    store: Store, session_ids: Iterable[str], *, name: str, output_type: type[OutputT]
) -> Dataset[object, OutputT]: ...
def dataset_from_sessions(
    store: Store, session_ids: Iterable[str], *, name: str, output_type: type[Any] | None = None
) -> Dataset[object, Any]:
    """A dataset of one case per stored session: its first user input, its final answer expected.

    The final answer is the session's last assistant reply, parsed as
    ``output_type`` when one is given (its text otherwise). A session with
    no user input or no final answer is refused by name: a case needs both.
    Each case's ``metadata`` keeps the session it came from.
    """
    cases: list[Case[object, Any]] = []
    for session_id in session_ids:
        view = Transcript(store, session_id).compile_view().commits
        user = next((c for c in view if c.role == "user"), None)
        final = next((c for c in reversed(view) if c.role == "assistant" and not c.content.tool_calls), None)
        if user is None or final is None:
            missing = "no user input" if user is None else "no final answer"
            raise ConfigurationError(
                f"dataset_from_sessions: session {session_id!r} has {missing} (commits: {len(view)})"
            )
        expected: object = final.text if output_type is None else parse_output(output_type, final.text)
        cases.append(
            Case(name=session_id, input=user.text, expected=expected, metadata={"source_session": session_id})
        )
    return Dataset(name=name, cases=cases)
