"""`string.Template` bodies checked against the fields of a params type.

Placeholders are verified when a section is built, so a typo in a template is a
construction error instead of a surprise at render time.
"""

from __future__ import annotations

import dataclasses
import enum
import json
import math
import string
import textwrap
from collections.abc import Iterator, Mapping

import attrs

from ..errors import PromptValidationError
from ..serde import dump
from ..serde.expressible import unexpressible_fields
from ..serde.pydantic_models import is_pydantic_model, pydantic_field_names

__all__ = [
    "check_placeholders",
    "field_names",
    "format_value",
    "is_params_type",
    "placeholders",
    "CompiledTemplate",
    "FieldValues",
]


def is_params_type(tp: object) -> bool:
    """True for dataclass or attrs classes and pydantic models (the only params shapes we accept)."""
    if not isinstance(tp, type):
        return False
    cls: type[object] = tp
    return dataclasses.is_dataclass(cls) or attrs.has(cls) or is_pydantic_model(cls)


def field_names(tp: type[object]) -> tuple[str, ...]:
    """Declared field names of a dataclass, attrs class or pydantic model, in declaration order."""
    if attrs.has(tp):
        return tuple(a.name for a in attrs.fields(tp))
    if dataclasses.is_dataclass(tp):
        return tuple(f.name for f in dataclasses.fields(tp))
    if is_pydantic_model(tp):
        return pydantic_field_names(tp)
    raise PromptValidationError(f"{tp!r} is not a dataclass, an attrs class or a pydantic model")


def placeholders(text: str, *, where: str) -> tuple[str, ...]:
    """Identifiers used by ``text``; raise if the template syntax is broken."""
    tmpl = string.Template(text)
    if not tmpl.is_valid():
        raise PromptValidationError(
            f"{where}: invalid template syntax (use $name or ${{name}}, and $$ for a literal $)"
        )
    return tuple(tmpl.get_identifiers())


def check_placeholders(text: str, params_type: type[object] | None, *, where: str) -> None:
    """Raise :class:`PromptValidationError` for placeholders that are not fields or JSON cannot express."""
    used = placeholders(text, where=where)
    if not used:
        return
    fields = field_names(params_type) if params_type is not None else ()
    missing = [name for name in used if name not in fields]
    if missing:
        owner = params_type.__qualname__ if params_type is not None else "no params type"
        raise PromptValidationError(
            f"{where}: placeholder(s) {', '.join('$' + m for m in missing)} have no matching field "
            f"on {owner} (fields: {', '.join(fields) or 'none'})"
        )
    # Each value renders as the JSON of serde.dump: a field JSON cannot express is refused here,
    # by its path, not as a bare SerdeTypeError when the prompt is first rendered.
    problem = unexpressible_fields(params_type, used)
    if problem is not None:
        raise PromptValidationError(problem.describe(where, "params"))


def format_value(value: object) -> str:
    """How a field value appears in text: strings verbatim, the rest as compact JSON."""
    if isinstance(value, str):
        return value
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float) and math.isfinite(value):
        return repr(value)
    if isinstance(value, enum.Enum):
        return format_value(value.value)
    if value is None or isinstance(value, float):
        return json.dumps(value)
    return json.dumps(dump(value), ensure_ascii=False, sort_keys=True, separators=(", ", ": "))


class FieldValues(Mapping[str, str]):
    """The formatted fields of one params object, each formatted at most once.

    A render creates one per params object, so sections sharing params do not
    format the same values again.
    """

    __slots__ = ("_cache", "_params")

    def __init__(self, params: object | None) -> None:
        self._params = params
        self._cache: dict[str, str] = {}

    def __getitem__(self, name: str) -> str:
        cached = self._cache.get(name)
        if cached is None:
            if self._params is None or not hasattr(self._params, name):
                raise KeyError(name)
            cached = self._cache[name] = format_value(getattr(self._params, name))
        return cached

    def __iter__(self) -> Iterator[str]:
        return iter(self._cache)

    def __len__(self) -> int:
        return len(self._cache)


@attrs.frozen
class CompiledTemplate:
    """A dedented template plus the placeholders it uses, prepared once."""

    source: str
    _template: string.Template = attrs.field(init=False, repr=False)
    identifiers: tuple[str, ...] = attrs.field(init=False)
    _static: str | None = attrs.field(init=False, repr=False)

    def __attrs_post_init__(self) -> None:
        tmpl = string.Template(textwrap.dedent(self.source))
        object.__setattr__(self, "_template", tmpl)
        identifiers = tuple(tmpl.get_identifiers())
        object.__setattr__(self, "identifiers", identifiers)
        # A template without placeholders renders the same every time.
        object.__setattr__(self, "_static", None if identifiers else tmpl.substitute({}).strip())

    def render(self, params: object | None, values: Mapping[str, str] | None = None) -> str:
        """Fill placeholders from ``params`` fields and trim surrounding blank space.

        ``values`` (a :class:`FieldValues` of ``params``) lets callers share
        formatted values between templates.
        """
        if self._static is not None:
            return self._static
        return self._template.substitute(values if values is not None else FieldValues(params)).strip()
