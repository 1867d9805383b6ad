"""The ``Meta`` marker: descriptions and value constraints attached to a type.

Use it inside ``Annotated[...]`` (``Annotated[int, Meta(ge=0)]``). The same keys
may also be given through a dataclass/attrs field's ``metadata`` mapping; both
routes end up as one ``Meta`` so schema generation and parsing read one rule set.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

import attrs

from weakprompt.serde.errors import SerdeTypeError

__all__ = ["META_KEYS", "Meta"]

META_KEYS = ("description", "ge", "gt", "le", "lt", "min_length", "max_length", "pattern")
_NUMBER_KEYS = ("ge", "gt", "le", "lt")
_LENGTH_KEYS = ("min_length", "max_length")


@attrs.frozen
class Meta:
    """Description and constraints for one value.

    ``ge/gt/le/lt`` bound numbers; ``min_length/max_length`` bound the length of
    strings, arrays and objects; ``pattern`` is a regular expression a string
    must contain a match for (unanchored, as in JSON Schema).
    """

    description: str | None = None
    ge: int | float | None = None
    gt: int | float | None = None
    le: int | float | None = None
    lt: int | float | None = None
    min_length: int | None = None
    max_length: int | None = None
    pattern: str | None = None

    def __attrs_post_init__(self) -> None:
        # Checked here so a typo in a marker fails when the type is first used,
        # not as a confusing schema later.
        if self.description is not None and not isinstance(self.description, str):
            raise SerdeTypeError(f"Meta description must be a string, got {self.description!r}")
        for key in _NUMBER_KEYS:
            value: object = getattr(self, key)
            if value is not None and (isinstance(value, bool) or not isinstance(value, (int, float))):
                raise SerdeTypeError(f"Meta {key} must be a number, got {value!r}")
        for key in _LENGTH_KEYS:
            value = getattr(self, key)
            if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value < 0):
                raise SerdeTypeError(f"Meta {key} must be a non-negative integer, got {value!r}")
        if self.pattern is not None:
            if not isinstance(self.pattern, str):
                raise SerdeTypeError(f"Meta pattern must be a string, got {self.pattern!r}")
            try:
                re.compile(self.pattern)
            except re.error as exc:
                raise SerdeTypeError(f"Meta pattern {self.pattern!r} is not a valid regex: {exc}") from exc

    def merged(self, other: Meta) -> Meta:
        """Combine two markers; values set in ``other`` win."""
        changes: dict[str, object] = {
            key: getattr(other, key) for key in META_KEYS if getattr(other, key) is not None
        }
        return attrs.evolve(self, **changes) if changes else self

    @property
    def has_constraints(self) -> bool:
        return any(getattr(self, key) is not None for key in META_KEYS[1:])

    @staticmethod
    def from_mapping(metadata: Mapping[str, object]) -> Meta | None:
        """Read the known keys from a field's ``metadata`` (other keys are ignored).

        A ``Meta`` stored under the key ``"meta"`` is honoured too.
        """
        nested = metadata.get("meta")
        base = nested if isinstance(nested, Meta) else None
        found = {key: metadata[key] for key in META_KEYS if key in metadata}
        if not found:
            return base
        made = attrs.evolve(Meta(), **found)
        return base.merged(made) if base is not None else made
