"""Public names a package re-exports but loads only when first asked for (PEP 562).

Each package lists, in ``__all__``, every public name, and here the ones
whose defining module is costly or rarely needed, with that module. The
package's ``__getattr__`` imports the module on first access and keeps the
name, so the next access is a plain global; type checkers see the names
through the package's ``if TYPE_CHECKING:`` imports.

A name that was renamed keeps working for one release: ``renamed`` maps the
old name to the new one, and asking for the old name warns
(``DeprecationWarning``) and answers the new object. Old names are not listed
by ``dir()`` and are never stored in the package, so every use warns. A
function or method kept under its old name is a :func:`deprecated_alias`:
it warns on each call.
"""

from __future__ import annotations

import functools
import importlib
import sys
import warnings
from collections.abc import Callable, Mapping, Sequence
from typing import ParamSpec, TypeVar

__all__ = ["deprecated_alias", "lazy_exports"]

P = ParamSpec("P")
T = TypeVar("T")


def lazy_exports(
    package: str,
    where: Mapping[str, str],
    public: Sequence[str],
    *,
    renamed: Mapping[str, str] | None = None,
) -> tuple[Callable[[str], object], Callable[[], list[str]]]:
    """``(__getattr__, __dir__)`` for ``package``: ``where`` maps a name to its module.

    A module given relative (``"._provider"``) is taken relative to ``package``.
    ``renamed`` maps deprecated names to their new names: a bare name is in
    ``package``, a dotted one (``"weakprompt.transcript.ToolSetChange"``) names its module.
    """
    namespace = sys.modules[package].__dict__
    old_names = dict(renamed or {})

    def resolve(name: str) -> object:
        new = old_names.get(name)
        if new is not None:
            home, _, short = new.rpartition(".")
            home = home or package
            warnings.warn(
                f"{package}.{name} is deprecated and will be removed in the next release; use {home}.{short}",
                DeprecationWarning,
                stacklevel=2,
            )
            return getattr(importlib.import_module(home), short)
        module = where.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value: object = getattr(importlib.import_module(module, package), name)
        namespace[name] = value
        return value

    def listing() -> list[str]:
        return sorted(public)

    return resolve, listing


def deprecated_alias(target: Callable[P, T], old_name: str, message: str) -> Callable[P, T]:
    """``target`` under ``old_name``, kept for one release: each call warns ``message`` first.

    For a renamed function or method (``resume_async = deprecated_alias(...)``,
    also in a class body); the signature is ``target``'s, for type checkers
    too, ``__wrapped__`` is ``target`` and ``__deprecated__`` the message
    (PEP 702's marker, for tools and tests). An async ``target`` gives a
    function that warns when called and returns the coroutine.
    """

    @functools.wraps(target)
    def warned(*args: P.args, **kwargs: P.kwargs) -> T:
        warnings.warn(message, DeprecationWarning, stacklevel=2)
        return target(*args, **kwargs)

    warned.__name__ = old_name
    warned.__qualname__ = f"{target.__qualname__.rpartition('.')[0]}.{old_name}".lstrip(".")
    warned.__doc__ = f"Deprecated: {message}."
    warned.__dict__["__deprecated__"] = message  # as PEP 702's ``@deprecated`` marks it
    return warned
