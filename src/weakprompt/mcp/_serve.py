"""A prompt's enabled tools served as an MCP server, over stdio or streamable HTTP.

Each MCP client connection gets its own weakprompt ``Session``; every call
goes through the one ``ToolDispatcher`` (validation, rollback of a failed
call, exactly one ``ToolInvoked``), and a failed result is answered with
``isError``. With a store, each session's calls and results are recorded
in its transcript, with the offered tool set linked like a loop's.
"""

from __future__ import annotations

import logging
import weakref
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any

import attrs

from ..errors import PromptEvaluationError, VisibilityExpansionRequired
from ..jsontypes import JSONObject
from ..messages import ToolCall
from ..prompt import OPEN_SECTIONS_TOOL
from ..runtime import Redactor, ToolCallPending, ToolDispatcher, default_redact
from ..safetext import describe_exception
from ..serde import StrictSchemaError, dump
from ..session import Session
from ..transcript import Transcript
from ._http_guard import HttpGuard

if TYPE_CHECKING:
    import mcp.types as mcp_types
    from mcp.server import Server
    from starlette.applications import Starlette

    from ..model import ProviderAdapter
    from ..prompt import Prompt, RenderedPrompt
    from ..store import Store
    from ..tools import AnyTool

__all__ = ["PromptServer"]

logger = logging.getLogger(__name__)

_MAX_EXPANSIONS = 16


def offered_schema(tool: AnyTool, *, strict: bool) -> JSONObject:
    """The tool's arguments schema: the strict form where the params type has one."""
    if strict:
        try:
            return tool.parameters_schema(strict=True)
        except StrictSchemaError:
            pass
    return tool.parameters_schema()


@attrs.define
class _Served:
    """One MCP connection's state: its session, and its transcript when a store is given."""

    session: Session
    transcript: Transcript | None = None
    calls: int = 0


class PromptServer:
    """Serve ``prompt``'s enabled tools over MCP.

    ``serve_stdio()`` and ``serve_http()`` run the server;
    ``sdk_server`` is the SDK's low-level server, for mounting in process
    (``McpServer.in_memory(server.sdk_server)``) or in your own transport.
    Summarized sections are served open (every enabled tool is offered);
    ``open_sections`` is not served. ``session_factory`` makes each
    connection's session (seed it with state there).
    """

    def __init__(
        self,
        prompt: Prompt[Any],
        *,
        name: str | None = None,
        store: Store | None = None,
        adapter: ProviderAdapter | None = None,
        redact: Redactor | None = None,
        strict: bool = True,
        session_factory: Callable[[], Session] = Session,
    ) -> None:
        self.prompt = prompt
        self.name = name or f"{prompt.template.ns}/{prompt.template.key}"
        self.store = store
        self.adapter = adapter
        self.redact = redact
        self.strict = strict
        self.session_factory = session_factory
        self._sessions: weakref.WeakKeyDictionary[object, _Served] = weakref.WeakKeyDictionary()
        self._server: Server[Any] | None = None
        self._only: _Served | None = None  # serving one client (stdio): one session for the process

    # -- sessions and renders ----------------------------------------------------------------

    def connection_state(self, ctx: Any) -> _Served:
        """The state of the MCP connection ``ctx`` belongs to.

        A handshake-era connection (one stdio process, one HTTP session) keeps
        one session for its life. The 2026-07-28 protocol has no sessions:
        each such request gets a fresh one, unless the server serves a single
        client (``serve_stdio``), which then has one session for the process.
        """
        if self._only is not None:
            return self._only
        # The SDK keeps one Connection object per handshake-era connection and makes one per
        # request otherwise; the per-request ServerSession wraps it.
        connection = getattr(ctx.session, "_connection", None) or ctx.session
        return self.served(connection)

    def served(self, connection: object) -> _Served:
        """The state kept for ``connection`` (made on its first request)."""
        served = self._sessions.get(connection)
        if served is None:
            session = self.session_factory()
            transcript = None
            if self.store is not None:
                transcript = Transcript(self.store, session.session_id)
            served = _Served(session, transcript)
            self._sessions[connection] = served
        return served

    def render(self, session: Session | None) -> RenderedPrompt[Any]:
        """The render whose tools are served: summarized sections opened, ``open_sections`` left out."""
        rendered = self.prompt.render(session)
        for _ in range(_MAX_EXPANSIONS):
            if not rendered.summarized_keys:
                break
            keys = (*rendered.expanded_keys, *rendered.summarized_keys)
            rendered = self.prompt.render(session, expanded=keys)
        return rendered

    def tools(self, session: Session | None) -> tuple[AnyTool, ...]:
        return tuple(t for t in self.render(session).tools if t.name != OPEN_SECTIONS_TOOL)

    def describe(self, session: Session | None = None) -> list[mcp_types.Tool]:
        """The MCP tool list for ``session``."""
        import mcp.types as mcp_types

        return [
            mcp_types.Tool(
                name=tool.name,
                description=tool.description,
                input_schema=offered_schema(tool, strict=self.strict),
            )
            for tool in self.tools(session)
        ]

    # -- the SDK server ------------------------------------------------------------------------

    @property
    def sdk_server(self) -> Server[Any]:
        """The SDK's low-level server answering ``tools/list`` and ``tools/call`` (built once)."""
        if self._server is None:
            from mcp.server import Server

            self._server = Server(
                self.name, on_list_tools=self._on_list_tools, on_call_tool=self._on_call_tool
            )
        return self._server

    async def _on_list_tools(self, ctx: Any, _params: Any) -> mcp_types.ListToolsResult:
        import mcp.types as mcp_types

        return mcp_types.ListToolsResult(tools=self.describe(self.connection_state(ctx).session))

    async def _on_call_tool(
        self, ctx: Any, params: mcp_types.CallToolRequestParams
    ) -> mcp_types.CallToolResult:
        return await self.call(self.connection_state(ctx), params.name, dict(params.arguments or {}))

    async def call(self, served: _Served, name: str, arguments: JSONObject) -> mcp_types.CallToolResult:
        """Run one call through the dispatcher for ``served``'s session."""
        import mcp.types as mcp_types

        session = served.session
        rendered = self.render(session)
        tools = tuple(t for t in rendered.tools if t.name != OPEN_SECTIONS_TOOL)
        dispatcher = ToolDispatcher(
            tools,
            session=session,
            prompt=self.prompt,
            rendered_prompt=rendered,
            adapter=self.adapter,
            redact=self.redact or default_redact,
            prompt_name=self.name,
        )
        served.calls += 1
        call = ToolCall(id=f"mcp_{served.calls}", name=name, arguments=arguments)
        try:
            execution = await dispatcher.execute_async(call)
        except ToolCallPending as exc:
            # Nobody is there to decide over MCP: the call is refused (and recorded), never run.
            text = (
                f"tool {name!r} needs a person's approval before it runs, which this MCP server "
                "cannot ask for; the call was not run"
                if exc.kind == "approval"
                else f"tool {name!r} deferred its result, which this MCP server cannot wait for"
            )
            await self._record(served, call, text, True, tools)
            return mcp_types.CallToolResult(
                content=[mcp_types.TextContent(type="text", text=text)], is_error=True
            )
        except (PromptEvaluationError, VisibilityExpansionRequired) as exc:
            text = describe_exception(exc)
            await self._record(served, call, text, True, tools)
            return mcp_types.CallToolResult(
                content=[mcp_types.TextContent(type="text", text=text)], is_error=True
            )
        failed = not execution.success
        await self._record(served, call, execution.message, failed, tools)
        structured: dict[str, Any] | None = None
        value = execution.result.value
        shown_as_json = not execution.result.exclude_value_from_context and not hasattr(value, "render")
        if not failed and value is not None and shown_as_json:
            # the text is this value's JSON (the dispatcher rendered it): offer it structured as well
            dumped = dump(value)
            structured = dumped if isinstance(dumped, dict) else None
        return mcp_types.CallToolResult(
            content=[mcp_types.TextContent(type="text", text=execution.message)],
            structured_content=structured,
            is_error=failed,
        )

    async def _record(
        self, served: _Served, call: ToolCall, text: str, failed: bool, tools: tuple[AnyTool, ...]
    ) -> None:
        transcript = served.transcript
        if transcript is None:
            return
        import anyio

        def write() -> None:
            transcript.set_tools([tool.spec() for tool in tools])
            transcript.assistant(tool_calls=(call,))
            transcript.tool_result(call.id, call.name, text, is_error=failed)

        try:
            await anyio.to_thread.run_sync(write)
        except Exception:  # the call stands; a recording failure is logged, never turned into its result
            logger.exception("recording MCP call %r in the transcript failed", call.name)

    # -- transports ------------------------------------------------------------------------------

    def single_client(self) -> None:
        """From now on every request is the one client's: one session for the server's life (stdio)."""
        self._only = self.served(self)

    async def serve_stdio(self) -> None:  # pragma: no cover - run in a subprocess by test_mcp_serve
        """Serve over this process's stdin and stdout until the client closes them."""
        from mcp.server.stdio import stdio_server

        server = self.sdk_server
        self.single_client()
        async with stdio_server() as (read_stream, write_stream):
            await server.run(read_stream, write_stream, server.create_initialization_options())

    def http_app(
        self,
        *,
        path: str = "/mcp",
        host: str = "127.0.0.1",
        token: str | None = None,
        insecure: bool = False,
        allowed_hosts: Iterable[str] = (),
        allowed_origins: Iterable[str] = (),
    ) -> Starlette:
        """An ASGI app serving streamable HTTP at ``path``, guarded for a server bound to ``host``.

        Every request's ``Host`` and ``Origin`` are checked whatever the bind;
        with ``token`` each needs ``Authorization: Bearer <token>``. A
        non-loopback ``host`` without a token raises ``ConfigurationError``
        unless ``insecure`` (then a warning is logged). See specs/MCP.md.
        """
        from mcp.server.transport_security import TransportSecuritySettings

        guard = HttpGuard.for_bind(
            host,
            allowed_hosts=allowed_hosts,
            allowed_origins=allowed_origins,
            token=token,
            insecure=insecure,
        )
        app = self.sdk_server.streamable_http_app(
            streamable_http_path=path,
            host=host,
            # the guard checks Host and Origin on every bind; the SDK's own check is loopback-only
            transport_security=TransportSecuritySettings(enable_dns_rebinding_protection=False),
        )
        app.add_middleware(_GuardMiddleware, guard=guard)
        return app

    async def serve_http(
        self,
        *,
        host: str = "127.0.0.1",
        port: int = 8000,
        path: str = "/mcp",
        token: str | None = None,
        insecure: bool = False,
        allowed_hosts: Iterable[str] = (),
        allowed_origins: Iterable[str] = (),
    ) -> None:
        """Serve streamable HTTP at ``http://host:port/path`` until cancelled (options: :meth:`http_app`)."""
        import uvicorn

        app = self.http_app(
            path=path,
            host=host,
            token=token,
            insecure=insecure,
            allowed_hosts=allowed_hosts,
            allowed_origins=allowed_origins,
        )
        config = uvicorn.Config(app, host=host, port=port, log_level="warning")
        await uvicorn.Server(config).serve()


class _GuardMiddleware:
    """Starlette's middleware shape around :meth:`HttpGuard.wrap`."""

    def __init__(self, app: Any, guard: HttpGuard) -> None:
        self._app = guard.wrap(app)

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        await self._app(scope, receive, send)
