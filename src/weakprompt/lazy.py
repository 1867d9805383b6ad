"""Public names a package re-exports but loads only when first asked for (PEP 562).

Each package lists, in ``__all__``, every public name, and here the ones
whose defining module is costly or rarely needed, with that module. The
package's ``__getattr__`` imports the module on first access and keeps the
name, so the next access is a plain global; type checkers see the names
through the package's ``if TYPE_CHECKING:`` imports.
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable, Mapping, Sequence

__all__ = ["lazy_exports"]


def lazy_exports(
    package: str, where: Mapping[str, str], public: Sequence[str]
) -> tuple[Callable[[str], object], Callable[[], list[str]]]:
    """``(__getattr__, __dir__)`` for ``package``: ``where`` maps a name to its module.

    A module given relative (``"._provider"``) is taken relative to ``package``.
    """
    namespace = sys.modules[package].__dict__

    def resolve(name: str) -> object:
        module = where.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value: object = getattr(importlib.import_module(module, package), name)
        namespace[name] = value
        return value

    def listing() -> list[str]:
        return sorted(public)

    return resolve, listing
