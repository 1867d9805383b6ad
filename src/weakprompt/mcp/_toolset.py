"""A mounted MCP server: one connection, its cached tool list, and the calls the dispatcher makes.

The connection lives in one task the toolset starts when it is entered
(``async with toolset``) and ends when it is left, cancelled or fails: the
SDK's transports are structured (a stdio server is a child process that
must be reaped by the task that started it), so every connect and
disconnect happens there. Calls from the evaluation loop only send
requests over it.
"""

from __future__ import annotations

import asyncio
import contextlib
import inspect
import logging
import math
import warnings
from collections.abc import AsyncGenerator, Awaitable, Callable, Generator, Iterable
from typing import TYPE_CHECKING, Any, Literal, TypedDict, cast

import attrs

from ..errors import ConfigurationError, WeakpromptError
from ..jsontypes import JSONObject
from ..lazy import deprecated_alias
from ..prompt import MarkdownSection
from ..safetext import clip, describe_exception
from ..tools import ToolContext, ToolResult
from ._callbacks import (
    ElicitationAnswer,
    ElicitationCallback,
    ElicitationRequest,
    McpProgress,
    ProgressCallback,
    answer_sampling,
)
from ._info import McpToolInfo, ToolFilter
from ._names import tool_name
from ._results import content_text, tool_result
from ._server import McpServer
from ._tool import McpLimits, McpTool, SchemaProblem, check_catalogue_entry

if TYPE_CHECKING:
    import anyio.abc
    from mcp.client.client import Client
    from mcp.shared.dispatcher import ProgressFnT
    from typing_extensions import Unpack

    from ..model import ProviderAdapter
    from ..prompt import AnySection, EnabledPredicate, Visibility
    from ..tools import AnyTool, ApprovalPolicy

__all__ = [
    "Concurrency",
    "McpCallFilter",
    "McpCallRequest",
    "McpConnectionError",
    "McpPromptInfo",
    "McpResourceInfo",
    "McpToolset",
    "Reconnect",
    "ResourceSectionOptions",
    "SectionOptions",
]

logger = logging.getLogger(__name__)

# mcp_types.CONNECTION_CLOSED and REQUEST_TIMEOUT, kept here so importing this module loads no SDK
_CONNECTION_CLOSED = -32000
_REQUEST_TIMEOUT = -32001
_REPLY_TOO_LARGE = -32099  # _stdio.REPLY_TOO_LARGE: our transport's answer to a reply over the limit


class ResourceSectionOptions(TypedDict, total=False):
    """The other keywords of :meth:`McpToolset.resource_section`'s section (see ``MarkdownSection``)."""

    children: Iterable[AnySection]
    enabled: EnabledPredicate[None]
    tools: Iterable[AnyTool]
    summary: str | None
    visibility: Visibility
    requires_approval: ApprovalPolicy | None


class SectionOptions(ResourceSectionOptions, total=False):
    """The other keywords of :meth:`McpToolset.section`'s section: those, and whether overrides apply."""

    accepts_overrides: bool


class McpConnectionError(WeakpromptError):
    """The MCP server could not be reached (or its tool list read) when the toolset was entered."""


@attrs.frozen
class Reconnect:
    """What happens when the server goes away (it crashed, was killed, or the connection dropped).

    The call that was running gets a failed result saying so, and the
    connection is restarted in the background, after ``delay`` seconds
    (doubled after each restart that fails). Later calls wait for the new
    connection (within their timeout). After ``max_restarts`` restarts in
    the toolset's life, or when a restart fails ``max_restarts`` times in a
    row, the toolset gives up: every later call fails at once, naming the
    last error. ``max_restarts=0`` never restarts.
    """

    max_restarts: int = 3
    delay: float = 0.1


@attrs.frozen
class McpCallRequest:
    """A call about to go to the server, for the toolset's call filter to judge."""

    tool: str
    info: McpToolInfo
    arguments: JSONObject
    context: ToolContext


McpCallFilter = Callable[[McpCallRequest], "bool | str | Awaitable[bool | str]"]
"""Decides each call inline, without pausing the run: ``True`` allows it; ``False`` or a reason
(a ``str``) refuses it and the model gets a failed result. To wait for a person instead, use
``requires_approval`` (``tools.ApprovalPolicy``)."""

PauseFor = Callable[[McpToolInfo], bool]
"""Which of a server's tools pause the run for a person's decision (``requires_approval``)."""

Concurrency = Literal["read_only", "all", "none"]
"""Which of a server's calls may run at the same time: ``read_only`` (the default) lets calls to
tools hinted read-only overlap and runs every other call one at a time, in call order; ``all``
lets every call overlap; ``none`` runs every call one at a time."""


@attrs.frozen
class McpResourceInfo:
    """A resource the server lists."""

    uri: str
    name: str
    description: str | None = None
    mime_type: str | None = None


@attrs.frozen
class McpPromptInfo:
    """A prompt the server lists, with its argument names (``required`` ones first as declared)."""

    name: str
    description: str | None = None
    arguments: tuple[str, ...] = ()
    required: tuple[str, ...] = ()


class _Unavailable(Exception):
    pass


@attrs.define
class _Connection:
    """One live connection: the client, and what ends it."""

    client: Client
    drop: Any  # anyio.Event: set to close this connection (it failed, or the toolset is closing)


class McpToolset:
    """An MCP server's tools, offered by a section (``MarkdownSection(..., toolsets=[toolset])``).

    Enter it (``async with toolset:``) before rendering: that connects,
    reads the tool list and keeps it. The list is read again when the
    server says it changed (``notifications/tools/list_changed``); the next
    render (and the loop, before its next model call) offers the new list.
    See ``specs/MCP.md`` for names, filters, results, timeouts and the
    reconnection policy.
    """

    def __init__(
        self,
        server: McpServer,
        *,
        prefix: str = "",
        filter: ToolFilter | None = None,
        call_timeout: float = 60.0,
        connect_timeout: float = 30.0,
        call_filter: McpCallFilter | None = None,
        requires_approval: bool | PauseFor = False,
        sampling: ProviderAdapter | None = None,
        elicitation: ElicitationCallback | None = None,
        on_progress: ProgressCallback | None = None,
        reconnect: Reconnect | None = None,
        limits: McpLimits | None = None,
        concurrency: Concurrency = "read_only",
        approve: McpCallFilter | None = None,
    ) -> None:
        if approve is not None:
            if call_filter is not None:
                raise ConfigurationError("give McpToolset call_filter= only (approve= is its old name)")
            warnings.warn(
                "McpToolset(approve=...) is deprecated; use call_filter=",
                DeprecationWarning,
                stacklevel=2,
            )
            call_filter = approve
        if call_timeout <= 0 or connect_timeout <= 0:
            raise ConfigurationError("MCP timeouts must be positive numbers of seconds")
        if concurrency not in ("read_only", "all", "none"):
            raise ConfigurationError(
                f"MCP concurrency must be 'read_only', 'all' or 'none', got {concurrency!r}"
            )
        self.server = server
        self.prefix = prefix
        self.filter = filter or ToolFilter()
        self.call_timeout = call_timeout
        self.connect_timeout = connect_timeout
        self.call_filter = call_filter
        self.requires_approval = requires_approval
        self.sampling = sampling
        self.elicitation = elicitation
        self.on_progress = on_progress
        self.reconnect = reconnect or Reconnect()
        self.limits = limits or McpLimits()
        self.concurrency: Concurrency = concurrency
        self._writes: Any = None  # anyio.Lock: calls that may not overlap take it, in call order
        self._relist_wanted = False
        self._tools: tuple[McpTool, ...] = ()
        self._problems: tuple[str, ...] = ()
        self._version = 0
        self._connection: _Connection | None = None
        self._gave_up: str | None = None
        self._failure: BaseException | None = None
        self._changed: Any = None  # anyio.Event, replaced after each state change
        self._group: anyio.abc.TaskGroup | None = None
        self._relisting: anyio.Event | None = None  # set when a re-listing the server asked for is done
        self._loop: asyncio.AbstractEventLoop | None = None
        self._closing = False
        self._restarts = 0
        self._ever_connected_this_round = False

    @property
    def approve(self) -> McpCallFilter | None:
        """Deprecated: the old name of :attr:`call_filter` (warns for one release)."""
        warnings.warn("McpToolset.approve is deprecated; use call_filter", DeprecationWarning, stacklevel=2)
        return self.call_filter

    def _pauses(self, info: McpToolInfo) -> bool:
        policy = self.requires_approval
        return policy if isinstance(policy, bool) else bool(policy(info))

    # -- the Toolset protocol ------------------------------------------------------------------

    @property
    def version(self) -> int:
        """Changes whenever the offered tools change."""
        return self._version

    def current_tools(self) -> tuple[McpTool, ...]:
        """The server's tools as last listed, filtered, named and compiled."""
        return self._tools

    @property
    def problems(self) -> tuple[str, ...]:
        """Tools of the last listing that are not offered, and why (an unusable schema, say)."""
        return self._problems

    @property
    def connected(self) -> bool:
        return self._connection is not None

    def section(
        self, title: str, key: str, template: str = "", **options: Unpack[SectionOptions]
    ) -> MarkdownSection[None]:
        """A section that owns this toolset's tools (disable it and they go)."""
        body = template or f"Tools of the MCP server {self.server.name!r}."
        return MarkdownSection(title=title, key=key, template=body, toolsets=(self,), **options)

    # -- lifecycle -------------------------------------------------------------------------------

    async def __aenter__(self) -> McpToolset:
        import anyio

        if self._group is not None:
            raise ConfigurationError(f"the MCP toolset for {self.server.name!r} is already open")
        self._closing = False
        self._gave_up = None
        self._failure = None
        self._restarts = 0
        self._changed = anyio.Event()
        self._writes = anyio.Lock()
        self._relist_wanted = False
        self._loop = asyncio.get_running_loop()
        group = anyio.create_task_group()
        await group.__aenter__()
        self._group = group
        try:
            await group.start(self._run)
        except BaseException:
            await self._close(group)
            raise
        if self._failure is not None:
            failure = self._failure
            await self._close(group)
            raise McpConnectionError(
                f"could not connect to the MCP server {self.server.name!r}: {_describe(failure)}"
            ) from failure
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        group = self._group
        if group is not None:
            await self._close(group)

    async def _close(self, group: anyio.abc.TaskGroup) -> None:
        self._closing = True
        group.cancel_scope.cancel()
        try:
            await group.__aexit__(None, None, None)
        finally:
            self._group = None
            self._connection = None
            self._loop = None

    @contextlib.asynccontextmanager
    async def open(self) -> AsyncGenerator[McpToolset]:
        """``async with toolset.open():`` is ``async with toolset:``, named as :meth:`open_sync`'s twin."""
        async with self:
            yield self

    @contextlib.contextmanager
    def open_sync(self) -> Generator[McpToolset]:
        """Open the toolset on a private event loop thread, for blocking code (``run_sync``).

        Calls from any other event loop are handed to that thread.
        """
        from anyio.from_thread import start_blocking_portal

        with start_blocking_portal() as portal, portal.wrap_async_context_manager(self):
            yield self

    open_blocking = deprecated_alias(
        open_sync,
        "open_blocking",
        "McpToolset.open_blocking is deprecated and will be removed in the next release; use open_sync",
    )

    async def _run(self, *, task_status: anyio.abc.TaskStatus[None]) -> None:
        """The connection task: connect, serve, and restart by the policy until the toolset closes."""
        import anyio

        first = True
        failures = 0
        while True:
            error = await self._connect_once(task_status if first else None)
            if first and not self._ever_connected_this_round:  # never got going: __aenter__ raises
                self._failure = error or ConnectionError("the connection closed while connecting")
                task_status.started()
                return
            first = False
            if self._closing:  # pragma: no cover - closing cancels this task before it gets here
                return
            self._connection = None
            failures = failures + 1 if error is not None and not self._ever_connected_this_round else 0
            if self._restarts >= self.reconnect.max_restarts or failures >= max(
                self.reconnect.max_restarts, 1
            ):
                reason = _describe(error) if error is not None else "the connection closed"
                self._gave_up = (
                    f"the MCP server {self.server.name!r} is unavailable after "
                    f"{self._restarts} restart(s): {reason}"
                )
                logger.warning("%s", self._gave_up)
                self._signal()
                await anyio.sleep_forever()
            self._restarts += 1
            await anyio.sleep(self.reconnect.delay * (2 ** max(failures - 1, 0)))

    async def _connect_once(self, task_status: anyio.abc.TaskStatus[None] | None) -> BaseException | None:
        """One connection's life; returns what ended it (``None``: dropped on purpose)."""
        import anyio

        self._ever_connected_this_round = False
        client = self.server.client(
            max_reply_bytes=self.limits.max_reply_bytes,
            message_handler=self._on_message,
            sampling_callback=self._on_sampling if self.sampling is not None else None,
            elicitation_callback=self._on_elicitation if self.elicitation is not None else None,
        )
        drop = anyio.Event()
        try:
            with anyio.CancelScope(deadline=anyio.current_time() + self.connect_timeout) as scope:
                async with client, anyio.create_task_group() as inner:
                    await self._list_tools(client)
                    if _modern(client) and _announces_changes(client):
                        # Subscribed before the toolset is ready: a change that a first call
                        # causes (a tool that adds tools) must not be missed.
                        await inner.start(self._listen, client)
                    scope.deadline = math.inf
                    self._connection = _Connection(client, drop)
                    self._ever_connected_this_round = True
                    self._signal()
                    if task_status is not None:
                        task_status.started()
                        task_status = None
                    await drop.wait()
                    inner.cancel_scope.cancel()
            if scope.cancelled_caught and not self._ever_connected_this_round:
                return TimeoutError(f"no answer within {self.connect_timeout:g} s")
            return None
        except Exception as exc:  # the server failed to start, or died: the policy decides what next
            logger.warning("MCP server %r: connection ended: %s", self.server.name, _describe(exc))
            return exc
        finally:
            if self._connection is not None and self._connection.drop is drop:
                self._connection = None
                self._signal()

    def _signal(self) -> None:
        import anyio

        changed, self._changed = self._changed, anyio.Event()
        changed.set()

    # -- the tool list -----------------------------------------------------------------------------

    async def refresh(self) -> tuple[McpTool, ...]:
        """Read the server's tool list again now (it is read on connect and on ``list_changed``)."""
        connection = await self._live(self.call_timeout)
        await self._list_tools(connection.client)
        return self._tools

    async def _list_tools(self, client: Client) -> None:
        listed: list[Any] = []
        cursor: str | None = None
        for _ in range(1000):  # a server paging forever cannot hang us
            page = await client.list_tools(cursor=cursor)
            listed.extend(page.tools)
            cursor = page.next_cursor
            if not cursor:
                break
        tools: list[McpTool] = []
        problems: list[str] = []
        taken: set[str] = set()
        left_out = 0
        for item in listed:
            info = McpToolInfo.from_sdk(item)
            if not self.filter.accepts(info):
                continue
            if len(tools) >= self.limits.max_tools:
                left_out += 1
                continue
            try:
                check_catalogue_entry(info, self.limits)
            except SchemaProblem as exc:
                problems.append(f"tool {clip(info.name, 100)!r} is not offered: {exc}")
                continue
            name = tool_name(self.prefix, info.name, taken)
            try:
                tools.append(McpTool.build(name, info, self, requires_approval=self._pauses(info)))
            except SchemaProblem as exc:
                problems.append(f"tool {clip(info.name, 100)!r} is not offered: its input schema is {exc}")
        if left_out:
            problems.append(
                f"{left_out} more tool(s) are not offered: the server lists more than "
                f"the limit of {self.limits.max_tools}"
            )
        for problem in problems:
            logger.warning("MCP server %r: %s", self.server.name, problem)
        if _specs(tools) != _specs(self._tools):
            self._version += 1
        self._tools = tuple(tools)
        self._problems = tuple(problems)

    async def _on_message(self, message: object) -> None:
        kind = type(getattr(message, "root", message)).__name__
        if kind == "ToolListChangedNotification" and self._group is not None:
            # Re-list from another task: this handler runs in the connection's receive loop, which
            # must keep reading for the listing's own reply to arrive. A call answered meanwhile
            # waits for the new list (see _call).
            import anyio

            # Coalesced: one listing in flight and at most one more wanted after it, however many
            # notifications arrive meanwhile (each would otherwise start a full listing).
            self._relist_wanted = True
            if self._relisting is None:
                self._relisting = anyio.Event()
                self._group.start_soon(self._changed_tools)

    async def _listen(self, client: Client, *, task_status: anyio.abc.TaskStatus[None]) -> None:
        """Listen for tool changes; started once the server has acknowledged the subscription."""
        started = False
        try:
            async with client.listen(tools_list_changed=True) as subscription:
                task_status.started()
                started = True
                async for _event in subscription:
                    pass  # the notification also reaches _on_message, which re-lists
        except Exception as exc:  # pragma: no cover - listening is a convenience: calls work without it
            logger.info("MCP server %r: not listening for tool changes: %s", self.server.name, _describe(exc))
            if not started:
                task_status.started()

    async def _changed_tools(self) -> None:
        relisting = self._relisting
        try:
            while self._relist_wanted:
                self._relist_wanted = False
                connection = self._connection
                if connection is None:
                    break
                try:
                    await self._list_tools(connection.client)
                except Exception as exc:
                    logger.warning(
                        "MCP server %r: re-listing tools failed: %s", self.server.name, _describe(exc)
                    )
        finally:
            if relisting is not None and self._relisting is relisting:
                self._relisting = None
                relisting.set()

    async def _tools_settled(self, timeout: float) -> None:
        """Wait (up to ``timeout``) for a re-listing the server asked for while a call ran.

        A tool that adds tools announces the change before it answers: the
        call returns once the new list is read, so the model's next turn is
        offered the new tools instead of racing the re-listing.
        """
        import anyio

        relisting = self._relisting
        if relisting is not None:
            with anyio.move_on_after(timeout):
                await relisting.wait()

    # -- calls -------------------------------------------------------------------------------------

    async def _live(self, timeout: float) -> _Connection:
        import anyio

        if self._connection is not None:
            return self._connection
        with anyio.fail_after(timeout):
            while True:
                if self._connection is not None:
                    return self._connection
                if self._gave_up is not None or self._group is None:
                    raise _Unavailable(
                        self._gave_up or f"the MCP toolset for {self.server.name!r} is not open"
                    )
                await self._changed.wait()

    async def call(
        self, name: str, info: McpToolInfo, arguments: JSONObject, context: ToolContext
    ) -> ToolResult[Any]:
        """Run one call on the server; every failure comes back as a failed result the model can read."""
        loop = self._loop
        if loop is not None and loop is not asyncio.get_running_loop():
            future = asyncio.run_coroutine_threadsafe(self._call(name, info, arguments, context), loop)
            return await asyncio.wrap_future(future)
        return await self._call(name, info, arguments, context)

    def _overlaps(self, info: McpToolInfo) -> bool:
        """Whether a call to ``info`` may run while other calls to this server run."""
        if self.concurrency == "all":
            return True
        return self.concurrency == "read_only" and info.read_only is True

    async def _call(
        self, name: str, info: McpToolInfo, arguments: JSONObject, context: ToolContext
    ) -> ToolResult[Any]:
        writes = self._writes
        if writes is None or self._overlaps(info):
            return await self._call_now(name, info, arguments, context)
        # A server need not handle overlapping writes (server-memory loses all but the last):
        # calls that may write wait for each other, first come first served (the lock is fair).
        async with writes:
            return await self._call_now(name, info, arguments, context)

    async def _call_now(
        self, name: str, info: McpToolInfo, arguments: JSONObject, context: ToolContext
    ) -> ToolResult[Any]:
        import anyio
        from mcp.shared.exceptions import MCPError

        if self.call_filter is not None:
            refusal = await self._filtered(McpCallRequest(name, info, arguments, context))
            if refusal is not None:
                return ToolResult.error(refusal)
        timeout = self.call_timeout
        if context.deadline is not None:
            timeout = max(min(timeout, context.deadline.remaining().total_seconds()), 0.001)
        connection = self._connection
        try:
            if connection is None:  # (re)connecting: wait for it within the call's time
                started = anyio.current_time()
                connection = await self._live(timeout)
                timeout = max(timeout - (anyio.current_time() - started), 0.001)
            # The SDK bounds the request itself (one cancel scope per call, not ours on top of it).
            result = await connection.client.call_tool(
                info.name,
                dict(arguments),
                read_timeout_seconds=timeout,
                progress_callback=self._progress_for(name),
            )
        except TimeoutError:
            return ToolResult.error(self._timed_out(info, timeout, connection))
        except _Unavailable as exc:
            return ToolResult.error(str(exc))
        except MCPError as exc:
            if exc.code == _REQUEST_TIMEOUT:
                return ToolResult.error(self._timed_out(info, timeout, connection))
            if exc.code == _REPLY_TOO_LARGE:
                return ToolResult.error(
                    f"the reply of MCP tool {info.name!r} was larger than the limit of "
                    f"{self.limits.max_reply_bytes} bytes (McpLimits.max_reply_bytes); the call failed"
                )
            if exc.code == _CONNECTION_CLOSED and connection is not None:
                self._drop(connection)
                return ToolResult.error(self._lost_text(info, exc))
            return ToolResult.error(
                f"the MCP server refused the call to {info.name!r}: {clip(exc.message, 500)}"
            )
        except Exception as exc:  # a dead transport, a malformed reply: the run goes on
            if connection is not None and _connection_error(exc):
                self._drop(connection)
                return ToolResult.error(self._lost_text(info, exc))
            return ToolResult.error(f"the call to MCP tool {info.name!r} failed: {_describe(exc)}")
        await self._tools_settled(self.call_timeout)
        return tool_result(info.name, result)

    def _drop(self, connection: _Connection) -> None:
        """Give up a connection that died: no later call is sent to it while it is being closed."""
        connection.drop.set()
        if self._connection is connection:
            self._connection = None
            self._signal()

    def _again(self) -> str:
        if self._restarts < self.reconnect.max_restarts:
            return "is being restarted for the next call"
        return "will not be restarted"

    def _lost_text(self, info: McpToolInfo, exc: BaseException) -> str:
        return (
            f"the MCP server {self.server.name!r} stopped during the call to {info.name!r} "
            f"({_describe(exc)}); the call did not complete; it {self._again()}"
        )

    def _timed_out(self, info: McpToolInfo, timeout: float, connection: _Connection | None) -> str:
        """The text of a call abandoned at its timeout; its connection is restarted by the policy.

        A server that did not answer may still be busy with the call (or stuck
        in it), and later calls on that connection would wait behind it.
        """
        text = f"MCP tool {info.name!r} did not answer within {timeout:g} s; the call was abandoned"
        if connection is None:
            return text
        self._drop(connection)
        return f"{text}; the connection to {self.server.name!r} {self._again()}"

    async def _filtered(self, request: McpCallRequest) -> str | None:
        policy = self.call_filter
        assert policy is not None  # asked only when there is one
        try:
            decision = policy(request)
            if inspect.isawaitable(decision):
                decision = await decision
        except Exception as exc:
            logger.warning("the call filter for MCP tool %r raised", request.tool, exc_info=exc)
            return f"the call to {request.tool!r} was refused: the call filter failed ({_describe(exc)})"
        if decision is True:
            return None
        reason = decision if isinstance(decision, str) and decision else "not allowed"
        return f"the call to {request.tool!r} was refused by the call filter: {reason}"

    def _progress_for(self, tool: str) -> ProgressFnT | None:
        callback = self.on_progress
        if callback is None:
            return None

        async def report(progress: float, total: float | None, message: str | None) -> None:
            try:
                outcome = callback(McpProgress(tool, progress, total, message))
                if inspect.isawaitable(outcome):
                    await outcome
            except Exception:
                logger.exception("the progress callback for MCP tool %r raised", tool)

        return report

    # -- what the server asks of us -------------------------------------------------------------

    async def _on_sampling(self, _context: object, params: Any) -> Any:
        import mcp.types as mcp_types

        adapter = self.sampling
        assert adapter is not None  # registered only with an adapter
        try:
            return await answer_sampling(adapter, params)
        except Exception as exc:
            logger.warning("answering a sampling request from %r failed", self.server.name, exc_info=exc)
            return mcp_types.ErrorData(code=-32603, message=f"sampling failed: {_describe(exc)}")

    async def _on_elicitation(self, _context: object, params: Any) -> Any:
        import mcp.types as mcp_types

        callback = self.elicitation
        assert callback is not None  # registered only with a callback
        schema = getattr(params, "requested_schema", None)
        request = ElicitationRequest(
            server=self.server.name,
            message=str(getattr(params, "message", "")),
            schema=dict(cast("JSONObject", schema)) if isinstance(schema, dict) else {},
        )
        try:
            answer = callback(request)
            if inspect.isawaitable(answer):
                answer = await answer
        except Exception as exc:
            logger.warning("the elicitation callback raised", exc_info=exc)
            return mcp_types.ErrorData(code=-32603, message=f"elicitation failed: {_describe(exc)}")
        if not isinstance(answer, ElicitationAnswer):
            return mcp_types.ErrorData(code=-32603, message="elicitation callback gave no ElicitationAnswer")
        return mcp_types.ElicitResult(action=answer.action, content=cast("Any", answer.content))

    # -- resources and prompts ------------------------------------------------------------------

    async def list_resources(self) -> tuple[McpResourceInfo, ...]:
        """The resources the server lists (none when it has no resources at all)."""
        client = (await self._live(self.call_timeout)).client
        if client.server_capabilities.resources is None:
            return ()
        listed = await client.list_resources()
        return tuple(
            McpResourceInfo(uri=str(r.uri), name=r.name, description=r.description, mime_type=r.mime_type)
            for r in listed.resources
        )

    async def read_resource(self, uri: str) -> str:
        """The text of resource ``uri`` (binary parts are named, not inlined)."""
        client = (await self._live(self.call_timeout)).client
        result = await client.read_resource(uri)
        parts: list[str] = []
        for item in result.contents:
            text = getattr(item, "text", None)
            parts.append(text if isinstance(text, str) else content_text([_Blob(str(item.uri), item)]))
        return "\n".join(parts)

    async def resource_section(
        self,
        title: str,
        key: str,
        uris: tuple[str, ...] | list[str],
        **options: Unpack[ResourceSectionOptions],
    ) -> MarkdownSection[None]:
        """A section whose text is the resources at ``uris``, read now (placeholders in them stay literal)."""
        texts = [await self.read_resource(uri) for uri in uris]
        body = "\n\n".join(texts).replace("$", "$$")  # resource text is data, never a template
        return MarkdownSection(title=title, key=key, template=body, accepts_overrides=False, **options)

    async def list_prompts(self) -> tuple[McpPromptInfo, ...]:
        """The prompts the server lists (none when it has no prompts at all)."""
        client = (await self._live(self.call_timeout)).client
        if client.server_capabilities.prompts is None:
            return ()
        listed = await client.list_prompts()
        return tuple(
            McpPromptInfo(
                name=p.name,
                description=p.description,
                arguments=tuple(a.name for a in p.arguments or ()),
                required=tuple(a.name for a in p.arguments or () if a.required),
            )
            for p in listed.prompts
        )


@attrs.frozen
class _Blob:
    uri: str
    resource: object
    type: Literal["resource"] = "resource"


def _specs(tools: tuple[McpTool, ...] | list[McpTool]) -> list[object]:
    return [tool.spec() for tool in tools]


def _modern(client: Client) -> bool:
    from mcp_types.version import MODERN_PROTOCOL_VERSIONS

    return client.protocol_version in MODERN_PROTOCOL_VERSIONS


def _announces_changes(client: Client) -> bool:
    tools = client.server_capabilities.tools
    return tools is not None and bool(tools.list_changed)


def _connection_error(exc: BaseException) -> bool:
    import anyio

    lost = (
        anyio.ClosedResourceError,
        anyio.BrokenResourceError,
        anyio.EndOfStream,
        ConnectionError,
        EOFError,
    )
    if isinstance(exc, lost):
        return True
    if isinstance(exc, BaseExceptionGroup):
        inner: tuple[BaseException, ...] = cast("BaseExceptionGroup[BaseException]", exc).exceptions
        return any(_connection_error(one) for one in inner)
    return False


def _describe(exc: BaseException) -> str:
    error: BaseException = exc
    if isinstance(exc, BaseExceptionGroup):
        inner: tuple[BaseException, ...] = cast("BaseExceptionGroup[BaseException]", exc).exceptions
        if len(inner) == 1:
            return _describe(inner[0])
    return clip(describe_exception(error), 500)


@contextlib.asynccontextmanager
async def mounted(*toolsets: McpToolset) -> AsyncGenerator[tuple[McpToolset, ...]]:
    """Open several toolsets together; all are closed on exit, whatever happens."""
    async with contextlib.AsyncExitStack() as stack:
        for toolset in toolsets:
            await stack.enter_async_context(toolset)
        yield toolsets
