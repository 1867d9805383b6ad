"""The one cattrs converter serde's generated class functions come from.

cattrs writes, per dataclass or attrs class, the function that reads an
object's fields into the constructor (``parse``) and the one that writes an
instance back out (``dump``); serde supplies every field's hook, so cattrs'
own conversions (``int("3")``) never run. This module loads with the first
class parsed or dumped, not with ``import weakprompt``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Protocol, cast

from cattrs import Converter
from cattrs.gen import make_dict_structure_fn, make_dict_unstructure_fn, override

__all__ = ["CONVERTER", "FieldHook", "class_dumper", "class_structurer"]

CONVERTER = Converter(detailed_validation=True)
# cattrs calls a field's structure hook with the value and the field's type.
FieldHook = Callable[[object, object], object]


class _StructureFactory(Protocol):
    def __call__(
        self,
        cl: type,
        converter: Converter,
        /,
        *,
        _cattrs_forbid_extra_keys: bool,
        _cattrs_detailed_validation: bool,
        **overrides: object,
    ) -> Callable[[Mapping[object, object], type], object]: ...


class _UnstructureFactory(Protocol):
    def __call__(
        self, cl: type, converter: Converter, /, **overrides: object
    ) -> Callable[[object], dict[str, object]]: ...


def class_structurer(
    cls: type, fields: Mapping[str, tuple[str, FieldHook]], *, forbid_extra: bool
) -> Callable[[Mapping[object, object], type], object]:
    """cattrs' generated structuring function for ``cls``, in detailed validation mode.

    ``fields`` maps each attribute name to its JSON key and structure hook.
    Call it with the mapping and ``cls`` (cattrs 24 requires the type). It
    raises ``ClassValidationError`` holding every field's failure (each with
    an ``AttributeValidationNote``), a ``ForbiddenExtraKeysError``, or what
    the constructor raised.
    """
    factory = cast(_StructureFactory, make_dict_structure_fn)
    return factory(
        cls,
        CONVERTER,
        _cattrs_forbid_extra_keys=forbid_extra,
        _cattrs_detailed_validation=True,
        **{name: override(rename=key, struct_hook=hook) for name, (key, hook) in fields.items()},
    )


def class_dumper(
    cls: type, fields: tuple[tuple[str, str], ...], dump_field: Callable[[object], object]
) -> Callable[[object], dict[str, object]]:
    """cattrs' generated unstructuring function for ``cls``.

    ``fields`` pairs each JSON key with its attribute name; every value goes
    through ``dump_field``.
    """
    factory = cast(_UnstructureFactory, make_dict_unstructure_fn)
    return factory(
        cls, CONVERTER, **{name: override(rename=key, unstruct_hook=dump_field) for key, name in fields}
    )
