"""pydantic v2 models as a kind of type serde hands over to pydantic itself.

A ``BaseModel`` subclass keeps its own schema (``model_json_schema``), its own
validation (``model_validate``) and its own dump (``model_dump(mode="json")``);
serde only fits them into its schema (``$defs`` merged, strict rules checked)
and its error report (each pydantic error becomes a ``SerdeIssue`` at its
path). pydantic is never imported here: a model class cannot exist before
``pydantic`` is in ``sys.modules``, so looking there is enough, and users
without pydantic never load it.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, cast

from weakprompt.jsontypes import JSONObject, JSONValue
from weakprompt.serde.errors import StrictSchemaError, describe_value, quote, render_key
from weakprompt.serde.parser_types import BAD, Parser, RawIssue

if TYPE_CHECKING:
    from pydantic import BaseModel

__all__ = [
    "embed_schema",
    "is_pydantic_model",
    "is_pydantic_instance",
    "model_dump",
    "model_parser",
    "model_schema",
    "pydantic_field_names",
    "strict_model_schema",
]

_REF_PREFIX = "#/$defs/"
# Keywords a strict schema may carry (specs/SERDE.md, "Strict mode"); pydantic's
# ``title`` is dropped, string lengths are dropped (pydantic still checks them).
_STRICT_KEYWORDS = frozenset(
    {
        "type",
        "enum",
        "anyOf",
        "$ref",
        "$defs",
        "description",
        "properties",
        "required",
        "additionalProperties",
        "items",
        "minItems",
        "maxItems",
        "pattern",
        "format",
        "minimum",
        "maximum",
        "exclusiveMinimum",
        "exclusiveMaximum",
    }
)
# ``default`` only appears on fields that are not required, which are refused below.
_STRICT_DROPPED = frozenset({"title", "default", "minLength", "maxLength"})
_STRICT_FORMATS = frozenset({"date-time", "date", "time", "uuid"})
_PROPERTY_MAPS = frozenset({"properties", "$defs"})


def _base_model() -> type[BaseModel] | None:
    module = sys.modules.get("pydantic")
    if module is None:
        return None
    # None while pydantic itself is still being imported.
    return cast("type[BaseModel] | None", getattr(module, "BaseModel", None))


def is_pydantic_model(tp: object) -> bool:
    """A pydantic v2 ``BaseModel`` subclass (never imports pydantic to find out)."""
    base = _base_model()
    return base is not None and isinstance(tp, type) and issubclass(tp, base) and tp is not base


def is_pydantic_instance(value: object) -> bool:
    base = _base_model()
    return base is not None and isinstance(value, base)


def _model(cls: type) -> type[BaseModel]:
    return cast("type[BaseModel]", cls)


def model_schema(cls: type) -> JSONObject:
    """pydantic's own validation-mode schema of ``cls``, unchanged."""
    return cast(JSONObject, _model(cls).model_json_schema(mode="validation"))


def strict_model_schema(cls: type) -> JSONObject:
    """``cls``'s schema for strict structured outputs, or ``StrictSchemaError``.

    Only titles and string lengths are dropped (pydantic still enforces the
    lengths); a model pydantic would read differently from what a strict
    schema says (optional fields, extra keys allowed, other keywords) is
    refused, so callers send its ordinary schema unflagged.
    """
    return cast(JSONObject, _strict(model_schema(cls), cls.__name__, ""))


def _strict(value: JSONValue, name: str, where: str) -> JSONValue:
    if isinstance(value, list):
        return [_strict(item, name, where) for item in value]
    if not isinstance(value, dict):
        return value
    out: JSONObject = {}
    for key, item in value.items():
        if key in _STRICT_DROPPED:
            continue
        if key not in _STRICT_KEYWORDS:
            raise StrictSchemaError(f"pydantic model {name}: {key!r}{where} has no strict-mode equivalent")
        if key in _PROPERTY_MAPS and isinstance(item, dict):
            out[key] = {sub: _strict(body, name, f" in {sub!r}") for sub, body in item.items()}
        else:
            out[key] = _strict(item, name, where)
    properties = out.get("properties")
    if isinstance(properties, dict):
        required = out.get("required", [])
        if not isinstance(required, list) or sorted(map(str, required)) != sorted(properties):
            raise StrictSchemaError(
                f"pydantic model {name}: strict mode needs every field required (no defaults){where}"
            )
        if out.get("additionalProperties") is not False:
            raise StrictSchemaError(
                f'pydantic model {name}: strict mode needs model_config extra="forbid"{where}'
            )
    fmt = out.get("format")
    if fmt is not None and fmt not in _STRICT_FORMATS:
        raise StrictSchemaError(f"pydantic model {name}: format {fmt!r}{where} has no strict-mode equivalent")
    return out


def embed_schema(schema: JSONObject, add_def: Callable[[str, JSONObject], str]) -> JSONObject:
    """``schema`` with its ``$defs`` handed to ``add_def`` (which returns the name kept).

    Every ``#/$defs/...`` reference is rewritten to the kept name, so a model's
    definitions can join the ``$defs`` of the schema around it. A top-level
    ``$ref`` (pydantic's form for a recursive model) is resolved one level, so
    the result is the object itself.
    """
    definitions = cast("dict[str, JSONObject]", schema.get("$defs", {}))
    body: JSONObject = {key: value for key, value in schema.items() if key != "$defs"}
    renamed = {name: add_def(name, {}) for name in definitions}
    for name, definition in definitions.items():
        add_def(renamed[name], cast(JSONObject, _rename(definition, renamed)))
    ref = body.get("$ref")
    if isinstance(ref, str) and len(body) == 1:
        body = definitions[ref.removeprefix(_REF_PREFIX)]
    return cast(JSONObject, _rename(body, renamed))


def _rename(value: JSONValue, renamed: Mapping[str, str]) -> JSONValue:
    if isinstance(value, list):
        return [_rename(item, renamed) for item in value]
    if not isinstance(value, dict):
        return value
    out: JSONObject = {}
    for key, item in value.items():
        if key == "$ref" and isinstance(item, str) and item.startswith(_REF_PREFIX):
            name = item.removeprefix(_REF_PREFIX)
            out[key] = _REF_PREFIX + renamed.get(name, name)
        else:
            out[key] = _rename(item, renamed)
    return out


def model_parser(cls: type) -> Parser:
    """A serde parser that runs pydantic's validation of ``cls`` and reports its errors as issues.

    The model's own config decides extra keys and lax or strict reading, so
    ``parse`` accepts exactly what pydantic accepts. JSON data is validated
    in pydantic's JSON mode, the mode for what a model sends: a model with
    ``strict=True`` then still reads dates, UUIDs and enum values from their
    JSON form. Anything JSON cannot carry goes to ``model_validate``.
    """
    model = _model(cls)
    from pydantic import ValidationError

    def parse_model(data: object, issues: list[RawIssue]) -> object:
        try:
            text = json.dumps(data, allow_nan=False)
        except (TypeError, ValueError):
            text = None
        try:
            return model.model_validate(data) if text is None else model.model_validate_json(text)
        except ValidationError as exc:
            for error in exc.errors(include_url=False):
                issues.append(_issue(data, error["loc"], error["type"], error["msg"], error.get("input")))
            return BAD

    return parse_model


def _issue(data: object, loc: Sequence[str | int], kind: str, message: str, received: object) -> RawIssue:
    steps = _steps(data, loc)
    if kind == "missing":
        return (steps[::-1], "a value (required)", "nothing (missing)")
    if kind == "extra_forbidden":  # its loc always ends with the unknown key
        return (steps[::-1], "only the model's fields", f"unknown field {quote(str(loc[-1]))}")
    expected = message.removeprefix("Input should be ")
    expected = expected[:1].lower() + expected[1:]
    return (steps[::-1], expected, describe_value(received))


def _steps(data: object, loc: Sequence[str | int]) -> list[str]:
    """pydantic's ``loc`` as serde path steps, following the input.

    Steps that do not name a key or index of the input (pydantic's union
    branch tags such as ``int``) are left out, so the path is the input's.
    """
    steps: list[str] = []
    current: object = data
    for part in loc:
        if isinstance(current, Mapping):
            mapping = cast("Mapping[object, object]", current)
            steps.append(render_key(str(part)))
            current = mapping.get(part)
        elif isinstance(current, (list, tuple)) and isinstance(part, int):
            items = cast("Sequence[object]", current)
            steps.append(f"[{part}]")
            current = items[part] if 0 <= part < len(items) else None
    return steps


def pydantic_field_names(cls: type) -> tuple[str, ...]:
    """The model's field names, in declaration order."""
    return tuple(_model(cls).model_fields)


def model_dump(value: object) -> JSONValue:
    """pydantic's own JSON-mode dump of a model instance, keyed as its schema is (by alias)."""
    return cast(JSONValue, cast("BaseModel", value).model_dump(mode="json", by_alias=True))
