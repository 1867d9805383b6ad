"""Python types that travel as JSON strings: how each is written, read and described.

The readers are deliberately as strict as the JSON Schema ``format``/``pattern``
we publish for them (dates must be ``YYYY-MM-DD``, UUIDs hyphenated, decimals
plain numerals), so a value the schema admits is a value ``parse`` admits.
"""

from __future__ import annotations

import datetime as dt
import re
from typing import TYPE_CHECKING

from weakprompt.serde.nodes import FormatNode

if TYPE_CHECKING:
    import uuid
    from decimal import Decimal

__all__ = ["DECIMAL_PATTERN", "format_node_for"]

# Plain decimal numerals only: no NaN/Infinity, no surrounding spaces.
DECIMAL_PATTERN = r"^-?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?$"
_DECIMAL_RE = re.compile(DECIMAL_PATTERN)
_DATE_RE = re.compile(r"^\d{4}-\d{2}-\d{2}$", re.ASCII)
_UUID_HYPHENS = (8, 13, 18, 23)


def _read_datetime(text: str) -> dt.datetime:
    if len(text) < 10 or not _DATE_RE.match(text[:10]):
        raise ValueError("not an ISO 8601 date-time")
    return dt.datetime.fromisoformat(text)


def _read_date(text: str) -> dt.date:
    if not _DATE_RE.match(text) or text.endswith("\n"):
        raise ValueError("not a YYYY-MM-DD date")
    return dt.date.fromisoformat(text)


def _read_time(text: str) -> dt.time:
    return dt.time.fromisoformat(text)


def _read_uuid(text: str) -> uuid.UUID:
    import uuid

    # Same rule as jsonschema's "uuid" format check: parseable and hyphenated.
    value = uuid.UUID(text)
    if len(text) < 24 or any(text[i] != "-" for i in _UUID_HYPHENS):
        raise ValueError("not a hyphenated UUID")
    return value


def _read_decimal(text: str) -> Decimal:
    from decimal import Decimal, InvalidOperation

    if not _DECIMAL_RE.search(text):
        raise ValueError("not a decimal numeral")
    try:
        return Decimal(text)
    except InvalidOperation as exc:  # pragma: no cover - the pattern already excludes these
        raise ValueError("not a decimal numeral") from exc


_NODES: dict[type, FormatNode] = {
    dt.datetime: FormatNode(dt.datetime, "date-time", None, _read_datetime),
    dt.date: FormatNode(dt.date, "date", None, _read_date),
    dt.time: FormatNode(dt.time, "time", None, _read_time),
}

_NAMES: dict[type, str] = {
    dt.datetime: "ISO 8601 date-time string",
    dt.date: "date string YYYY-MM-DD",
    dt.time: "ISO 8601 time string",
}

# Types of these modules are added to the tables when a type of theirs is first asked about (which
# means the module is loaded already): importing serde does not load pathlib, uuid or decimal.
_LOADED_ON_USE = frozenset({"uuid", "decimal", "_decimal", "_pydecimal", "pathlib"})


def _add_lazy_types() -> None:
    import uuid
    from decimal import Decimal
    from pathlib import Path, PurePath, PurePosixPath, PureWindowsPath

    _NODES.update(
        {
            uuid.UUID: FormatNode(uuid.UUID, "uuid", None, _read_uuid),
            Decimal: FormatNode(Decimal, None, DECIMAL_PATTERN, _read_decimal),
            Path: FormatNode(Path, None, None, Path),
            PurePath: FormatNode(PurePath, None, None, PurePath),
            PurePosixPath: FormatNode(PurePosixPath, None, None, PurePosixPath),
            PureWindowsPath: FormatNode(PureWindowsPath, None, None, PureWindowsPath),
        }
    )
    _NAMES.update(
        {uuid.UUID: "UUID string (8-4-4-4-12 hex digits)", Decimal: "decimal number written as a string"}
    )


def _lookup(tp: type) -> None:
    if tp not in _NODES and getattr(tp, "__module__", None) in _LOADED_ON_USE:
        _add_lazy_types()


def format_node_for(tp: type) -> FormatNode | None:
    _lookup(tp)
    return _NODES.get(tp)


def format_name(tp: type) -> str:
    _lookup(tp)
    return _NAMES.get(tp, "path string")
