"""No public callable of weakprompt takes untyped ``**kwargs``: every keyword a user passes is typed."""

from __future__ import annotations

import importlib
import inspect
import pkgutil
from collections.abc import Callable, Iterator

import pytest

import weakprompt

# ``**name: Any`` (as written under ``from __future__ import annotations``) or no annotation at all.
UNTYPED = {"Any", "typing.Any", "t.Any", inspect.Parameter.empty}


def _public_modules() -> Iterator[object]:
    yield weakprompt
    for info in pkgutil.walk_packages(weakprompt.__path__, prefix="weakprompt."):
        if any(part.startswith("_") for part in info.name.split(".")):
            continue
        try:
            yield importlib.import_module(info.name)
        except ImportError:  # an integration whose extra is not installed here
            continue


def _callables(owner: object, name: str) -> Iterator[tuple[str, Callable[..., object]]]:
    value = getattr(owner, name, None)
    if inspect.isclass(value):
        for attribute, member in vars(value).items():
            if attribute.startswith("_") and attribute != "__init__":
                continue
            function = member.__func__ if isinstance(member, (classmethod, staticmethod)) else member
            # our own code only (a Protocol's __init__ is typing's)
            if inspect.isfunction(function) and function.__module__.startswith("weakprompt"):
                yield f"{name}.{attribute}", function
    elif inspect.isfunction(value):
        yield name, value


def untyped_var_keywords() -> list[str]:
    found: set[str] = set()
    for module in _public_modules():
        module_name = getattr(module, "__name__", "?")
        for name in getattr(module, "__all__", ()):
            for qualified, function in _callables(module, name):
                for parameter in inspect.signature(function).parameters.values():
                    if parameter.kind is inspect.Parameter.VAR_KEYWORD and parameter.annotation in UNTYPED:
                        found.add(f"{module_name}.{qualified}(**{parameter.name})")
    return sorted(found)


def test_no_public_callable_takes_untyped_var_keywords() -> None:
    assert untyped_var_keywords() == []


def test_the_walk_does_see_the_agent_and_the_stream() -> None:
    """The probe is not blind: it reads the callables that once took ``**options: Any``."""
    seen = {qualified for qualified, _ in _callables(weakprompt.runtime.streaming, "stream")}
    assert seen == {"stream"}
    agent_methods = {qualified for qualified, _ in _callables(weakprompt.agent, "Agent")}
    assert {"Agent.__init__", "Agent.run", "Agent.stream_sync", "Agent.resume_sync"} <= agent_methods


def test_the_probe_flags_an_untyped_var_keyword() -> None:
    from typing import Any

    def loose(**options: Any) -> None: ...

    parameter = inspect.signature(loose).parameters["options"]
    assert parameter.annotation in UNTYPED


@pytest.mark.parametrize("name", ["stream", "stream_sync"])
def test_stream_takes_the_keywords_of_run_but_on_event(name: str) -> None:
    """Regression: ``stream(..., **options: Any)`` let any typo through to the worker."""
    from weakprompt.runtime import loop, streaming

    run_keywords = set(inspect.signature(loop.run).parameters) - {"on_event"}
    assert set(inspect.signature(getattr(streaming, name)).parameters) == run_keywords
