"""One sync/async naming rule: the coroutine has the plain name, its blocking twin ends in ``_sync``.

Old names keep working for one release and warn (``DeprecationWarning``);
the new names never warn.
"""

from __future__ import annotations

import asyncio
import importlib
import inspect
import warnings
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

import weakprompt
from async_support import tools_prompt
from weakprompt.adapters.testing import ScriptedAdapter, tool_call, tool_call_turn
from weakprompt.lazy import deprecated_alias
from weakprompt.runtime import Approve, PausedRun, PromptResponse, ResumeError
from weakprompt.session import Session
from weakprompt.store import Store
from weakprompt.tools import ToolResult, tool

PACKAGES = ("weakprompt", "weakprompt.agent", "weakprompt.runtime", "weakprompt.durable", "weakprompt.mcp")

# A name whose meaning changes next release cannot be an alias: it blocks now, warns, and becomes the
# coroutine next release. Each is a deprecated alias of its ``_sync`` twin.
BECOMES_ASYNC = {"weakprompt.runtime.resume", "DurableClient.submit", "DurableClient.result"}

# Left as they are on purpose (CONVENTIONS.md): the adapter protocol users implement, and the
# dispatcher's pair, which the loop uses.
KEPT_ASYNC_NAMES = {"complete_async", "execute_async"}


def _public_callables() -> Iterator[tuple[str, str, object]]:
    """(owner, name, object) for each public function of the packages and each method of their classes."""
    seen: set[int] = set()
    for package in PACKAGES:
        module = importlib.import_module(package)
        for name in module.__all__:
            value = getattr(module, name)
            if inspect.isclass(value):
                if id(value) in seen:
                    continue
                seen.add(id(value))
                for attribute, member in vars(value).items():
                    if not attribute.startswith("_") and callable(member):
                        yield value.__name__, attribute, member
            elif callable(value):
                yield package, name, value


def _is_async(function: object) -> bool:
    """A coroutine function, or one giving an async context manager (``stream``, ``McpToolset.open``)."""
    inner = inspect.unwrap(function)  # pyright: ignore[reportArgumentType]
    if inspect.iscoroutinefunction(inner) or inspect.isasyncgenfunction(inner):
        return True
    returns = inspect.signature(inner).return_annotation  # a method handing out an async context manager
    return "AsyncContextManager" in str(returns)


def _is_deprecated(function: object) -> bool:
    return isinstance(getattr(function, "__deprecated__", None), str)


def _names(function: object) -> list[str]:
    return list(inspect.signature(function).parameters)  # pyright: ignore[reportArgumentType]


def test_every_sync_async_pair_follows_one_convention() -> None:
    members = {(owner, name): value for owner, name, value in _public_callables()}
    pairs = 0
    for (owner, name), value in members.items():
        where = f"{owner}.{name}"
        if name.endswith("_sync"):
            twin = members.get((owner, name.removesuffix("_sync")))
            assert twin is not None, f"{where} has no async twin {name.removesuffix('_sync')}"
            assert not _is_async(value), f"{where} must block"
            if f"{owner}.{name.removesuffix('_sync')}" in BECOMES_ASYNC:
                assert _is_deprecated(twin) and inspect.unwrap(twin) is value, where  # pyright: ignore[reportArgumentType]
            else:
                assert _is_async(twin), f"the twin of {where} must be async"
            assert _names(twin) == _names(value), f"{where} and its twin take different parameters"
            pairs += 1
        elif name.endswith("_async") and name not in KEPT_ASYNC_NAMES:
            assert _is_deprecated(value), f"{where}: an async function has the plain name"
            assert _is_async(inspect.unwrap(value)), where  # pyright: ignore[reportArgumentType]
    assert pairs >= 7  # run, stream, resume, DurableApp.run, submit, result, McpToolset.open


def test_the_deprecated_names_name_their_replacement() -> None:
    from weakprompt.durable import DurableApp, DurableClient
    from weakprompt.mcp import McpToolset
    from weakprompt.runtime import resume, resume_async

    for old, new in [
        (resume, "resume_sync"),
        (resume_async, "resume_sync"),
        (DurableApp.evaluate, "run_sync"),
        (DurableApp.evaluate_async, "await run"),
        (DurableClient.submit, "submit_sync"),
        (DurableClient.result, "result_sync"),
        (DurableClient.submit_async, "submit_sync"),
        (DurableClient.result_async, "result_sync"),
        (McpToolset.open_blocking, "open_sync"),
    ]:
        assert new in getattr(old, "__deprecated__", ""), old.__qualname__
        assert old.__doc__ is not None and old.__doc__.startswith("Deprecated:")


def test_a_deprecated_alias_keeps_its_old_name_and_warns_at_the_callers_line() -> None:
    def fresh(value: int) -> int:
        return value + 1

    old = deprecated_alias(fresh, "stale", "stale is gone; call fresh")
    assert (old.__name__, old.__qualname__.rpartition(".")[2]) == ("stale", "stale")
    with pytest.warns(DeprecationWarning, match="call fresh") as caught:
        assert old(1) == 2
    assert caught[0].filename == __file__


def test_run_sync_is_evaluate_and_neither_warns() -> None:
    assert weakprompt.run_sync is weakprompt.evaluate
    with warnings.catch_warnings():
        warnings.simplefilter("error", DeprecationWarning)
        response = weakprompt.run_sync(tools_prompt([]), adapter=ScriptedAdapter(["hi"]), session=Session())
    assert response.text == "hi"


def test_run_sync_reports_events_as_run_does() -> None:
    events: list[object] = []
    weakprompt.run_sync(
        tools_prompt([]), adapter=ScriptedAdapter(["hi"]), session=Session(), on_event=events.append
    )
    assert type(events[-1]).__name__ == "RunFinished"


@tool(requires_approval=True)
def wipe(path: str) -> ToolResult[None]:
    """Wipes a path."""
    return ToolResult.ok(None, message=f"wiped {path}")


def _paused(store: Store, session_id: str) -> tuple[PausedRun, Callable[[], ScriptedAdapter]]:
    call = tool_call_turn(tool_call("wipe", {"path": "/tmp/x"}, id="c1"))
    response = weakprompt.run_sync(
        tools_prompt([wipe]),
        adapter=ScriptedAdapter([call]),
        session=Session(session_id=session_id),
        store=store,
        input="wipe it",
    )
    assert response.paused is not None
    return response.paused, lambda: ScriptedAdapter(["wiped"])


def _decisions(paused: PausedRun) -> list[Approve]:
    return [Approve(p.call_id, p.token) for p in paused.pending]


def test_resume_sync_continues_a_paused_run_without_warning(tmp_path: Path) -> None:
    from weakprompt.runtime import resume_sync

    with Store.open(tmp_path / "s.db") as store:
        paused, after = _paused(store, "s")
        with warnings.catch_warnings():
            warnings.simplefilter("error", DeprecationWarning)
            done = resume_sync(store, "s", _decisions(paused), prompt=tools_prompt([wipe]), adapter=after())
    assert done.text == "wiped"


def test_resume_still_blocks_and_warns_that_it_becomes_async(tmp_path: Path) -> None:
    from weakprompt.runtime import resume

    with Store.open(tmp_path / "s.db") as store:
        paused, after = _paused(store, "s")
        with pytest.warns(DeprecationWarning, match="becomes a coroutine in the next one; call resume_sync"):
            done = resume(store, "s", _decisions(paused), prompt=tools_prompt([wipe]), adapter=after())
    assert isinstance(done, PromptResponse) and done.text == "wiped"


def test_resume_async_still_resumes_and_warns(tmp_path: Path) -> None:
    from weakprompt.runtime import resume_async

    with Store.open(tmp_path / "s.db") as store:
        paused, after = _paused(store, "s")

        async def go() -> str:
            response = await resume_async(
                store, "s", _decisions(paused), prompt=tools_prompt([wipe]), adapter=after()
            )
            return response.text

        with pytest.warns(DeprecationWarning, match="resume_async is deprecated"):
            assert asyncio.run(go()) == "wiped"


def test_resume_sync_refuses_a_session_with_nothing_to_resume(tmp_path: Path) -> None:
    from weakprompt.runtime import resume_sync

    with (
        Store.open(tmp_path / "s.db") as store,
        pytest.raises(ResumeError, match="has no stored run to resume"),
    ):
        resume_sync(store, "none", prompt=tools_prompt([]), adapter=ScriptedAdapter([]))


def test_inline_approver_is_the_one_name_and_approver_warns() -> None:
    from weakprompt.runtime import InlineApprover
    from weakprompt.runtime import approval as approval_module

    with pytest.warns(DeprecationWarning, match=r"runtime\.Approver is deprecated.*InlineApprover"):
        from weakprompt.runtime import Approver  # type: ignore[attr-defined]
    assert Approver is InlineApprover
    with pytest.warns(DeprecationWarning, match="InlineApprover"):
        assert approval_module.Approver is InlineApprover  # type: ignore[attr-defined]
    with pytest.raises(AttributeError):
        _ = approval_module.NoSuchName  # type: ignore[attr-defined]


def test_the_mcp_inline_filter_has_one_name() -> None:
    import weakprompt.mcp as mcp

    assert "ApprovalPolicy" not in mcp.__all__
    with pytest.warns(DeprecationWarning, match="McpCallFilter"):
        assert mcp.ApprovalPolicy is mcp.McpCallFilter  # type: ignore[attr-defined]
