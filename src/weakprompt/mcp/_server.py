"""Where an MCP server is: a command to start (stdio), a URL (streamable HTTP) or an object in process."""

from __future__ import annotations

import shlex
from collections.abc import Mapping
from typing import TYPE_CHECKING, Literal

import attrs

from ..errors import ConfigurationError

if TYPE_CHECKING:
    from mcp.client.client import Client

__all__ = ["McpServer"]

Transport = Literal["stdio", "http", "memory"]
Mode = Literal["auto", "legacy"]
"""``auto`` negotiates the newest protocol the server speaks; ``legacy`` forces the initialize
handshake (servers that send requests back, for sampling or elicitation, need a handshake-era session)."""


@attrs.frozen
class McpServer:
    """Where one MCP server is; made by :meth:`stdio`, :meth:`http`, :meth:`in_memory`, :meth:`parse`."""

    transport: Transport
    name: str
    command: str = ""
    args: tuple[str, ...] = ()
    env: Mapping[str, str] | None = None
    cwd: str | None = None
    url: str = ""
    server: object = attrs.field(default=None, eq=False, repr=False)
    mode: Mode = "auto"

    @classmethod
    def stdio(
        cls,
        command: str,
        *args: str,
        env: Mapping[str, str] | None = None,
        cwd: str | None = None,
        name: str | None = None,
        mode: Mode = "auto",
    ) -> McpServer:
        """A server started as a subprocess and spoken to over its stdin and stdout."""
        if not command.strip():
            raise ConfigurationError("an MCP stdio server needs a command")
        return cls(
            "stdio",
            name or command.rsplit("/", 1)[-1],
            command=command,
            args=args,
            env=env,
            cwd=cwd,
            mode=mode,
        )

    @classmethod
    def http(cls, url: str, *, name: str | None = None, mode: Mode = "auto") -> McpServer:
        """A server reached over streamable HTTP at ``url``."""
        if not url.startswith(("http://", "https://")):
            raise ConfigurationError(f"an MCP HTTP server needs an http:// or https:// URL, got {url!r}")
        return cls("http", name or url, url=url, mode=mode)

    @classmethod
    def in_memory(cls, server: object, *, name: str | None = None, mode: Mode = "auto") -> McpServer:
        """An SDK server object (``MCPServer`` or a low-level ``Server``) in this process."""
        label = name or str(getattr(server, "name", None) or type(server).__name__)
        return cls("memory", label, server=server, mode=mode)

    @classmethod
    def parse(cls, text: str) -> McpServer:
        """A URL becomes an HTTP server, anything else a command line (split like a shell would)."""
        stripped = text.strip()
        if stripped.startswith(("http://", "https://")):
            return cls.http(stripped)
        try:
            words = shlex.split(stripped)
        except ValueError as exc:
            raise ConfigurationError(f"cannot read the MCP server command {text!r}: {exc}") from exc
        if not words:
            raise ConfigurationError("an MCP server needs a command or a URL")
        return cls.stdio(words[0], *words[1:])

    def client(self, *, max_reply_bytes: int | None = None, **options: object) -> Client:
        """An SDK client for this server (not yet connected); ``options`` go to ``mcp.Client``.

        ``max_reply_bytes`` bounds one message read from a stdio server (see ``_stdio``),
        or one reply (one SSE event) from an HTTP server (see ``_http``).
        """
        import sys

        from mcp import Client, StdioServerParameters  # the extra is loaded only when a server is used

        target: object
        if self.transport == "stdio" and max_reply_bytes is not None and sys.platform != "win32":
            from ._stdio import bounded_stdio

            target = bounded_stdio(self.command, self.args, env=self.env, cwd=self.cwd, limit=max_reply_bytes)
        elif self.transport == "stdio":
            target = StdioServerParameters(
                command=self.command,
                args=list(self.args),
                env=dict(self.env) if self.env else None,
                cwd=self.cwd,
            )
        elif self.transport == "http" and max_reply_bytes is not None:
            from ._http import bounded_http

            target = bounded_http(self.url, limit=max_reply_bytes)
        elif self.transport == "http":
            target = self.url
        else:
            target = self.server
        return Client(target, cache=None, mode=self.mode, **options)  # type: ignore[arg-type]
