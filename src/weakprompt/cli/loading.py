"""Finding the user's prompt (or adapter) from a ``path/to/module.py:name`` reference.

A reference names a file or an importable module, then an attribute. The
attribute may be the thing itself or a zero-argument factory returning it,
so a module can build its prompt lazily.
"""

from __future__ import annotations

import importlib
import importlib.util
import sys
import uuid
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING, cast

from ..errors import ConfigurationError
from ..prompt import Prompt, PromptTemplate

if TYPE_CHECKING:
    from ..runtime.redaction import Redactor

__all__ = [
    "load_attribute",
    "load_attributes",
    "load_prompt",
    "load_redactor",
    "resolve_prompt",
    "split_reference",
]


def split_reference(reference: str) -> tuple[str, str]:
    """``"pkg/mod.py:name"`` -> ``("pkg/mod.py", "name")``; the last colon separates them."""
    module, sep, attribute = reference.rpartition(":")
    if not sep or not module or not attribute.isidentifier():
        raise ConfigurationError(
            f"{reference!r} is not a reference of the form path/to/module.py:name or package.module:name"
        )
    return module, attribute


def _import_file(path: Path) -> ModuleType:
    if not path.is_file():
        raise ConfigurationError(f"no such file: {path}")
    name = f"_weakprompt_cli_{path.stem}_{uuid.uuid4().hex[:8]}"
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise ConfigurationError(f"cannot import {path} as a Python module")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # dataclasses look their module up while the file runs
    # The file's own folder is importable, as it would be when run as a script.
    folder = str(path.resolve().parent)
    added = folder not in sys.path
    if added:
        sys.path.insert(0, folder)
    try:
        spec.loader.exec_module(module)
    except BaseException:
        sys.modules.pop(name, None)
        raise
    finally:
        if added:
            sys.path.remove(folder)
    return module


def _import_module(module_ref: str) -> ModuleType:
    """Import ``module_ref`` with the current directory first on the path, as ``python -m`` would.

    A console script does not put the current directory on ``sys.path``, so
    ``my_models:factory`` next to the user would not be found otherwise.
    """
    here = str(Path.cwd())
    added = here not in sys.path
    if added:
        sys.path.insert(0, here)
    try:
        return importlib.import_module(module_ref)
    except ImportError as exc:
        raise ConfigurationError(
            f"cannot import module {module_ref!r} (looked in the current directory {here} "
            f"and on sys.path): {exc}"
        ) from exc
    finally:
        if added:
            sys.path.remove(here)


def load_attribute(reference: str) -> object:
    """Import the module part of ``reference`` and return its attribute."""
    return load_attributes(reference)[0]


def load_attributes(*references: str) -> list[object]:
    """The attribute each reference names; references to one module import it once.

    A file is imported afresh on each load, so two loads of one file would
    make two copies of each class it defines (an answer of one copy never
    equals an expected value of the other).
    """
    modules: dict[str, ModuleType] = {}
    found: list[object] = []
    for reference in references:
        module_ref, attribute = split_reference(reference)
        if module_ref not in modules:
            modules[module_ref] = _load_module(module_ref)
        found.append(_attribute_of(modules[module_ref], module_ref, attribute))
    return found


def _load_module(module_ref: str) -> ModuleType:
    if module_ref.endswith(".py") or "/" in module_ref or "\\" in module_ref:
        return _import_file(Path(module_ref))
    return _import_module(module_ref)


def _attribute_of(module: ModuleType, module_ref: str, attribute: str) -> object:
    if not hasattr(module, attribute):
        public = sorted(n for n in vars(module) if not n.startswith("_"))
        raise ConfigurationError(
            f"{module_ref} has no attribute {attribute!r} (it defines: {', '.join(public) or 'nothing'})"
        )
    return getattr(module, attribute)


def resolve_prompt(value: object, *, what: str = "the reference") -> Prompt[object]:
    """A ``Prompt`` from a Prompt, a PromptTemplate, or a zero-argument factory of either.

    The output type of a prompt found in a user's module is not known
    statically, hence ``Prompt[object]``.
    """
    if isinstance(value, Prompt):
        return cast("Prompt[object]", value)
    if isinstance(value, PromptTemplate):
        return Prompt(cast("PromptTemplate[object]", value))
    if callable(value) and not isinstance(value, type):
        return resolve_prompt(value(), what=f"the value returned by {what}")
    raise ConfigurationError(
        f"{what} is a {type(value).__name__}; expected a Prompt, a PromptTemplate, "
        "or a function with no arguments returning one"
    )


def load_prompt(reference: str) -> Prompt[object]:
    """The prompt named by ``reference`` (see :func:`resolve_prompt`)."""
    return resolve_prompt(load_attribute(reference), what=reference)


def load_redactor(reference: str) -> Redactor:
    """The redaction hook named by ``reference``: any callable taking and returning text."""
    value = load_attribute(reference)
    if not callable(value) or isinstance(value, type):
        raise ConfigurationError(
            f"{reference} is a {type(value).__name__}; --redact needs a function that takes a text "
            "and returns it with the secrets removed"
        )
    return cast("Redactor", value)
