"""pytest fixtures for testing weakprompt tools and prompts.

Registered through the ``pytest11`` entry point, so installing weakprompt
makes the fixtures available; it adds nothing else (no hooks, options or
behaviour changes). A fixture of the same name in your own conftest or test
module wins over these. Disable with ``-p no:weakprompt.testing.pytest_plugin``.

This module imports only pytest and the ``weakprompt`` package root, whose
names load on first use (no hypothesis, no SQLAlchemy), so it costs nothing
in test runs that do not use it.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

import pytest

import weakprompt

if TYPE_CHECKING:
    from weakprompt.adapters.testing import FunctionAdapter, ScriptedAdapter
    from weakprompt.messages import AssistantTurn
    from weakprompt.model import ModelRequest
    from weakprompt.session import Session
    from weakprompt.store import Store
    from weakprompt.tokens import TokenCounter
    from weakprompt.transcript import Transcript

__all__ = [
    "FunctionAdapterFactory",
    "ScriptedAdapterFactory",
    "function_adapter",
    "scripted_adapter",
    "session",
    "store",
    "transcript",
]


class ScriptedAdapterFactory(Protocol):
    """``scripted_adapter(turns)``: a ``ScriptedAdapter`` playing ``turns`` (or a ``Script``)."""

    def __call__(
        self, turns: Iterable[AssistantTurn | str], /, *, token_counter: TokenCounter | None = None
    ) -> ScriptedAdapter: ...


class FunctionAdapterFactory(Protocol):
    """``function_adapter(fn)``: a ``FunctionAdapter`` replying with ``fn(request)``."""

    def __call__(
        self,
        fn: Callable[[ModelRequest], AssistantTurn | str],
        /,
        *,
        token_counter: TokenCounter | None = None,
    ) -> FunctionAdapter: ...


@pytest.fixture
def session() -> Session:
    """A fresh session for the test."""
    return weakprompt.Session()


@pytest.fixture
def store(tmp_path: Path) -> Iterator[Store]:
    """A store in a temporary SQLite file, closed after the test."""
    with weakprompt.Store.open(tmp_path / "weakprompt.db") as opened:
        yield opened


@pytest.fixture
def transcript(store: Store, session: Session) -> Transcript:
    """The transcript of the test's ``session`` in the test's ``store``."""
    return weakprompt.Transcript(store, session.session_id)


@pytest.fixture
def scripted_adapter() -> ScriptedAdapterFactory:
    """Build a ``ScriptedAdapter`` from turns or a ``weakprompt.testing.Script``."""

    def build(
        turns: Iterable[AssistantTurn | str], /, *, token_counter: TokenCounter | None = None
    ) -> ScriptedAdapter:
        return weakprompt.ScriptedAdapter(tuple(turns), token_counter=token_counter)

    return build


@pytest.fixture
def function_adapter() -> FunctionAdapterFactory:
    """Build a ``FunctionAdapter`` that computes each reply from the request."""

    def build(
        fn: Callable[[ModelRequest], AssistantTurn | str], /, *, token_counter: TokenCounter | None = None
    ) -> FunctionAdapter:
        return weakprompt.FunctionAdapter(fn, token_counter=token_counter)

    return build
