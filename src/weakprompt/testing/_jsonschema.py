"""The JSON Schema validator the kit judges schemas with, behind a typed face."""

from __future__ import annotations

from typing import Any, cast

from jsonschema import Draft202012Validator

from weakprompt.jsontypes import JSONObject

__all__ = ["SchemaValidator"]


class SchemaValidator:
    """Draft 2020-12 with the format checks jsonschema makes without optional extras."""

    def __init__(self, schema: JSONObject) -> None:
        self._validator: Any = Draft202012Validator(
            schema, format_checker=Draft202012Validator.FORMAT_CHECKER
        )

    def errors(self, instance: object) -> list[str]:
        """Every complaint about ``instance``; empty when the schema admits it."""
        return [cast(str, error.message) for error in self._validator.iter_errors(instance)]
