"""Types <-> JSON Schema <-> values.

``schema(tp)`` tells a model what to send, ``parse(tp, data)`` judges what it
sent, ``dump(value)`` turns typed values back into JSON data. All three read
one normalised type model, so the schema and the validator agree.
"""

from __future__ import annotations

from weakprompt.serde.dumping import dump
from weakprompt.serde.errors import SerdeError, SerdeIssue, SerdeTypeError, StrictSchemaError
from weakprompt.serde.meta import Meta
from weakprompt.serde.parsing import ExtraPolicy, parse
from weakprompt.serde.schemas import schema

__all__ = [
    "ExtraPolicy",
    "Meta",
    "SerdeError",
    "SerdeIssue",
    "SerdeTypeError",
    "StrictSchemaError",
    "dump",
    "parse",
    "schema",
]
