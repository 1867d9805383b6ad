"""Structured final answers: the output type's schema and parsing the model's text.

Models wrap JSON in prose or Markdown fences; :func:`extract_json` finds it so
parsing reports *schema* problems (with paths) rather than formatting noise.
"""

from __future__ import annotations

import json
import re
import typing
from typing import TYPE_CHECKING, Literal, TypeAlias, TypeVar

from ..errors import OutputParseError, PromptValidationError
from ..jsontypes import JSONObject, JSONValue
from ..serde import SerdeError, parse, schema
from ..serde.expressible import unexpressible
from .template import is_params_type

__all__ = [
    "OUTPUT_MODES",
    "OutputMode",
    "OutputT",
    "check_output_mode",
    "extract_json",
    "output_schema",
    "parse_output",
    "validate_output_type",
]

T = TypeVar("T")

if TYPE_CHECKING:
    # A prompt built without ``output_type`` is a ``PromptTemplate[None]`` for the type
    # checker (PEP 696 default); at runtime the plain stdlib TypeVar is enough.
    from typing_extensions import TypeVar as DefaultTypeVar

    OutputT = DefaultTypeVar("OutputT", default=None)
else:
    OutputT = TypeVar("OutputT")

OutputMode: TypeAlias = Literal["auto", "native", "json_object", "tool", "prompted"]
"""How a structured answer is asked of a model (see ``weakprompt.model.output_mode``)."""
OUTPUT_MODES: tuple[OutputMode, ...] = ("auto", "native", "json_object", "tool", "prompted")


def check_output_mode(value: object) -> None:
    """Refuse anything but ``None`` or one of :data:`OUTPUT_MODES`, naming the choices."""
    if value is not None and value not in OUTPUT_MODES:
        raise PromptValidationError(
            f"output_mode must be one of {', '.join(OUTPUT_MODES)} or None, got {value!r}"
        )


_FENCE = re.compile(r"```[ \t]*(?P<lang>[A-Za-z0-9_-]*)[ \t]*\r?\n(?P<body>.*?)```", re.DOTALL)


def validate_output_type(output_type: object, *, where: str) -> None:
    """Accept a dataclass/attrs class, a pydantic model or ``list[...]`` of one that JSON can express.

    ``where`` names the template, so a field JSON cannot express (a callable,
    a compiled pattern) is reported by its path where the template is built.
    """
    item = output_type
    if typing.get_origin(output_type) is list:
        (item,) = typing.get_args(output_type) or (None,)
    if not is_params_type(item):
        raise PromptValidationError(
            f"{where}: output_type {output_type!r} must be a dataclass, an attrs class or a pydantic "
            "model, or list[...] of one"
        )
    problem = unexpressible(output_type)
    if problem is not None:
        raise PromptValidationError(problem.describe(where, "output"))


def output_schema(output_type: object) -> JSONObject:
    """JSON Schema for ``output_type`` (serde caches it per type)."""
    return schema(output_type)


def extract_json(text: str) -> JSONValue:
    """The JSON value in ``text``: a ```json fence, the whole text, or its outermost {...}/[...]."""
    candidates: list[str] = []
    fences = list(_FENCE.finditer(text))
    candidates.extend(m.group("body") for m in fences if m.group("lang").lower() == "json")
    candidates.extend(m.group("body") for m in fences if m.group("lang") == "")
    candidates.append(text)
    spans = [(text.find(opener), text.rfind(closer)) for opener, closer in (("{", "}"), ("[", "]"))]
    # Outermost brackets, whichever kind opens first (an array of objects starts with "[").
    for start, end in sorted(spans):
        if 0 <= start < end:
            candidates.append(text[start : end + 1])
    for candidate in candidates:
        try:
            value: JSONValue = json.loads(candidate)
        except json.JSONDecodeError:
            continue
        return value
    preview = text.strip().replace("\n", " ")
    preview = preview if len(preview) <= 120 else preview[:117] + "..."
    raise OutputParseError(f"the final answer contains no JSON value: {preview!r}")


def parse_output(output_type: type[T], text: str) -> T:
    """Extract JSON from ``text`` and decode it as ``output_type``.

    Raises :class:`OutputParseError` listing each mismatch with its JSON path.
    """
    data = extract_json(text)
    try:
        return parse(output_type, data)
    except SerdeError as exc:
        problems = "; ".join(
            f"{issue.path}: expected {issue.expected}, got {issue.received}" for issue in exc.issues
        )
        raise OutputParseError(
            f"the final answer does not match {_type_name(output_type)}: {problems}"
        ) from exc


def _type_name(tp: object) -> str:
    if typing.get_origin(tp) is not None:
        return repr(tp)
    name: str = getattr(tp, "__qualname__", repr(tp))
    return name
