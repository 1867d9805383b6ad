"""What every adapter shares apart from its wire mapping.

Request checks and schema helpers, the identity properties the loop reads
(name, model, context window, token counter), the "ready clients or build
them" rule and the OpenAI-style finish reasons. Kept free of any SDK so the
checks run (and fail clearly) before a network call or a model load.
"""

from __future__ import annotations

import logging
import re
import threading
from collections.abc import AsyncGenerator, Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Generic, Protocol, Self, TypeVar

from ..canonical import canonical_json
from ..errors import ConfigurationError
from ..jsontypes import JSONObject, JSONValue
from ..messages import FinishReason
from ..model import ForceTool, ModelRequest
from ..serde import StrictSchemaError
from ..tokens import TokenCounter

if TYPE_CHECKING:
    import asyncio

    from ..tools import AnyTool
    from .retries import Retrier, RetrySetting

__all__ = [
    "OPENAI_FINISH_REASONS",
    "AdapterIdentity",
    "LoopBoundClient",
    "check_tool_choice",
    "clients_or_build",
    "missing_client",
    "reject_ignored_settings",
    "forced_tool_name",
    "in_worker_threads",
    "is_strict_schema",
    "json_answer_instruction",
    "output_schema_name",
    "parameters_schema",
]

logger = logging.getLogger("weakprompt.adapters")

_NAME_UNSAFE = re.compile(r"[^A-Za-z0-9_-]+")


def forced_tool_name(request: ModelRequest) -> str | None:
    """The tool the request forces, if any."""
    choice = request.tool_choice
    return choice.name if isinstance(choice, ForceTool) else None


def check_tool_choice(request: ModelRequest, provider: str) -> None:
    """Reject a tool choice no provider could honour, naming what is wrong.

    Forcing a tool needs that tool in the request; "required" needs at least
    one tool. "auto" and "none" are always fine (with no tools they mean the
    same thing).
    """
    names = [tool.name for tool in request.tools]
    forced = forced_tool_name(request)
    if forced is not None and forced not in names:
        available = ", ".join(names) if names else "none"
        raise ConfigurationError(
            f"{provider}: tool_choice forces tool {forced!r}, which is not in the request "
            f"(tools sent: {available})"
        )
    if request.tool_choice == "required" and not names:
        raise ConfigurationError(f"{provider}: tool_choice='required' but the request has no tools")


def output_schema_name(name: str | None) -> str:
    """A schema name providers accept: ``[A-Za-z0-9_-]{1,64}``, never empty."""
    cleaned = _NAME_UNSAFE.sub("_", name or "").strip("_")[:64]
    return cleaned or "output"


def is_strict_schema(schema: Mapping[str, JSONValue]) -> bool:
    """True when every object in ``schema`` closes its properties and requires all.

    That is the shape OpenAI's strict structured outputs insist on; anything
    else is sent non-strict rather than rejected by the provider.
    """
    return _strict_node(schema)


def _strict_node(node: JSONValue | Mapping[str, JSONValue]) -> bool:
    if isinstance(node, list):
        return all(_strict_node(item) for item in node)
    if not isinstance(node, Mapping):
        return True
    properties = node.get("properties")
    is_object = node.get("type") == "object" or isinstance(properties, Mapping)
    if is_object:
        if node.get("additionalProperties") is not False:
            return False
        keys = set(properties) if isinstance(properties, Mapping) else set[str]()
        required = node.get("required", [])
        if not isinstance(required, list) or set(map(str, required)) != keys:
            return False
    return all(_strict_node(child) for child in _subschemas(node))


def _subschemas(node: Mapping[str, JSONValue]) -> Sequence[JSONValue]:
    children: list[JSONValue] = []
    for key in ("properties", "$defs", "definitions"):
        group = node.get(key)
        if isinstance(group, Mapping):
            children.extend(group.values())
    for key in ("items", "additionalProperties", "not"):
        child = node.get(key)
        if isinstance(child, dict | list):
            children.append(child)
    for key in ("anyOf", "oneOf", "allOf", "prefixItems"):
        group = node.get(key)
        if isinstance(group, list):
            children.extend(group)
    return children


def json_answer_instruction(schema: JSONObject) -> str:
    """System-prompt text asking for a JSON answer, for providers without a schema mode."""
    return (
        "Give your final answer as one JSON object and nothing else (no prose, no code fence). "
        f"It must match this JSON Schema: {canonical_json(schema)}"
    )


def reject_ignored_settings(adapter: str, **settings: object) -> None:
    """Client settings passed alongside a ready client would be silently dropped: refuse."""
    given = [label for label, value in settings.items() if value is not None]
    if given:
        raise ConfigurationError(
            f"{adapter}: {', '.join(given)} would be ignored because a client was given; "
            "configure the client instead"
        )


def parameters_schema(tool: AnyTool, *, strict: bool) -> tuple[JSONObject, bool]:
    """``(schema, strict)``: the strict schema when asked and the params type has one.

    A type outside the strict subset (an ``Any`` field, say) is sent with its
    ordinary schema and no strict flag rather than failing the whole request.
    """
    if strict:
        try:
            return tool.parameters_schema(strict=True), True
        except StrictSchemaError:
            pass
    return tool.parameters_schema(), False


# Chat Completions' finish reasons; llama.cpp's OpenAI-style replies use the same words.
OPENAI_FINISH_REASONS: dict[str, FinishReason] = {
    "stop": "stop",
    "tool_calls": "tool_calls",
    "function_call": "tool_calls",
    "length": "length",
    "content_filter": "content_filter",
}

_S = TypeVar("_S")
_A = TypeVar("_A")
_T = TypeVar("_T")
_T_co = TypeVar("_T_co", covariant=True)


class RetryingClient(Protocol):
    """What the SDK clients share that retries need: their own retry count, and a copy with another."""

    @property
    def max_retries(self) -> int: ...

    def with_options(self, *, max_retries: int) -> Self: ...


class ClosingAsyncClient(Protocol):
    """An async SDK client: closing it releases the connections it keeps on its event loop."""

    async def close(self) -> None: ...


class SyncStream(Protocol[_T_co]):
    """A sync SDK stream (``openai.Stream``, ``anthropic.Stream``): items one by one, then closed."""

    def __next__(self) -> _T_co: ...

    def close(self) -> None: ...


class RetryingAsyncClient(RetryingClient, ClosingAsyncClient, Protocol):
    """An async SDK client as an adapter holds it."""


_SC = TypeVar("_SC", bound=RetryingClient)
_AC = TypeVar("_AC", bound=RetryingAsyncClient)
_CA = TypeVar("_CA", bound=ClosingAsyncClient)


def _next_item(stream: SyncStream[_T]) -> tuple[_T] | None:
    """The next item in a 1-tuple, or None at the end (a StopIteration cannot cross into a future)."""
    try:
        return (next(stream),)
    except StopIteration:
        return None


async def in_worker_threads(open_stream: Callable[[], SyncStream[_T]]) -> AsyncGenerator[_T]:
    """A stream of a sync SDK client, opened, read and closed on worker threads.

    How a user's own sync client serves ``stream()``: every blocking call
    (the request, each read, the close) runs off the event loop, which goes
    on with other work meanwhile.
    """
    import asyncio  # on first use: keeps importing this module cheap

    stream = await asyncio.to_thread(open_stream)
    try:
        while (item := await asyncio.to_thread(_next_item, stream)) is not None:
            yield item[0]
    finally:
        await asyncio.to_thread(stream.close)


class AdapterIdentity:
    """The read-only facts a :class:`~weakprompt.model.ProviderAdapter` exposes.

    None of these adapters counts tokens locally, so ``token_counter`` is None.
    """

    def __init__(self, *, name: str, model: str, context_window: int | None) -> None:
        self._name = name
        self._model = model
        self._context_window = context_window

    @property
    def name(self) -> str:
        return self._name

    @property
    def model(self) -> str:
        return self._model

    @property
    def context_window(self) -> int | None:
        return self._context_window

    @property
    def token_counter(self) -> TokenCounter | None:
        return None


def clients_or_build(
    adapter: str,
    sync_client: _S | None,
    async_client: _A | None,
    build: Callable[..., tuple[_S, _A]],
    **settings: object,
) -> tuple[_S | None, _A | None]:
    """The ready clients when any is given (refusing settings they would ignore), else both built.

    A given sync client is never paired with an async one built from other
    settings: that one would talk to another server or with another key.
    A sync client alone serves streams too (:func:`in_worker_threads`); an
    async client alone is refused for whole replies (:func:`missing_client`).
    """
    if sync_client is not None or async_client is not None:
        reject_ignored_settings(adapter, **settings)
        return sync_client, async_client
    return build(**settings)


def missing_client(adapter: str, method: str, parameter: str, client_type: str) -> ConfigurationError:
    """The error for a whole reply asked of an adapter given an async client only."""
    return ConfigurationError(
        f"{adapter}: {method} needs an {client_type} client, and only the other kind of client "
        f"was given; pass {parameter}= as well"
    )


class LoopBoundClient(Generic[_CA]):
    """An async SDK client for the event loop that is running: one per loop, closed by that loop.

    An async HTTP client keeps its connections on the event loop that opened
    them, so a second ``evaluate()`` (a new loop) cannot reuse them, and
    loops running at once in several threads cannot share one. A client the
    adapter built itself is therefore built for each loop (the first loop
    gets the one built with the adapter), and closed by the loop it served
    when that loop shuts down: the loop is handed an async generator whose
    closing closes the client, and ``asyncio.run`` (so every ``evaluate()``)
    closes the async generators it ran before it closes. Left to the garbage
    collector instead, the client would try to close its connections on a
    later loop ("Task exception was never retrieved ... Event loop is
    closed"). A loop closed by hand without closing its async generators
    leaves its client unclosed; it is forgotten when the next loop comes.
    A client the user gave is theirs: used as it is, never closed here.
    """

    def __init__(self, client: _CA | None, rebuild: Callable[[], _CA] | None) -> None:
        self._client = client
        self._rebuild = rebuild
        self._spare = client  # built with the adapter, for the first loop
        self._by_loop: dict[asyncio.AbstractEventLoop, _LoopClient[_CA]] = {}
        self._lock = threading.Lock()  # the bookkeeping only; loops in several threads may ask at once

    @property
    def current(self) -> _CA | None:
        """The client most recently handed out, or the one built with the adapter (no loop needed)."""
        return self._client

    async def for_running_loop(self) -> _CA | None:
        """The client to use in the running event loop."""
        if self._client is None or self._rebuild is None:
            return self._client
        import asyncio  # on first use: keeps importing this module cheap

        loop = asyncio.get_running_loop()
        with self._lock:
            bound = self._by_loop.get(loop)
            if bound is None:
                for gone in [other for other in self._by_loop if other.is_closed()]:
                    # closed by hand, its async generators never closed: nothing can close its client
                    # now, and asyncio drops a closed loop's generators without calling on it
                    del self._by_loop[gone]
                client = self._spare if self._spare is not None else self._rebuild()
                self._spare = None
                bound = self._by_loop[loop] = _LoopClient(client, lambda: self._ended(loop))
            self._client = bound.client
        await bound.hand_to_loop()
        return bound.client

    def _ended(self, loop: asyncio.AbstractEventLoop) -> None:
        with self._lock:
            self._by_loop.pop(loop, None)


class _LoopClient(Generic[_CA]):
    """One loop's client, and the async generator through which that loop closes it."""

    def __init__(self, client: _CA, ended: Callable[[], None]) -> None:
        self.client = client
        self._ended = ended
        # Held here: a loop keeps only a weak reference to the async generators it will close.
        self._closer = self._closed_with_the_loop()
        self._started = False

    async def hand_to_loop(self) -> None:
        """Run the closer to its ``yield`` on the running loop, which from then on will close it."""
        if not self._started:
            self._started = True
            await anext(self._closer)

    async def _closed_with_the_loop(self) -> AsyncGenerator[None]:
        try:
            yield
        finally:
            self._ended()
            try:
                await self.client.close()
            except Exception:  # at shutdown there is nobody left to tell but the log
                logger.debug("closing an async client at the end of its event loop failed", exc_info=True)


def sdk_retries_and_clients(
    adapter: str,
    *,
    provider: str,
    model: str,
    given: tuple[_SC | None, _AC | None],
    ready: tuple[_SC | None, _AC | None],
    rebuild_async: Callable[[], _AC],
    retries: RetrySetting,
    max_retries: int | None,
) -> tuple[Retrier, _SC | None, LoopBoundClient[_AC]]:
    """An SDK adapter's retrier, and its clients with the SDK's own retries turned off.

    Ours are the only retries: the SDK's would multiply them and hide them
    from the deadline and the events. A given client's ``max_retries``
    becomes the policy (``adapter_retrier``). An async client built here is
    built again for each event loop (a second ``evaluate()`` runs a new
    one); a given one is the user's and is kept.
    """
    from .retries import adapter_retrier  # retries -> output_modes -> this module: not at the top

    user_client = given[0] or given[1]
    retrier = adapter_retrier(
        adapter,
        provider=provider,
        model=model,
        retries=retries,
        max_retries=max_retries,
        client_retries=user_client.max_retries if user_client is not None else None,
    )
    sync_client, async_client = ready
    sync_client = sync_client.with_options(max_retries=0) if sync_client is not None else None
    async_client = async_client.with_options(max_retries=0) if async_client is not None else None
    return (
        retrier,
        sync_client,
        LoopBoundClient(async_client, None if user_client is not None else rebuild_async),
    )
