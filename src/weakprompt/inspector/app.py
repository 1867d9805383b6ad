"""The inspector web app: Starlette routes over the read-only queries, rendered with Jinja2.

Every failure ends in a page: an unknown session or output is a 404 page,
a store that cannot be opened (missing, foreign, an older schema) a 503
page saying why, a database error or a damaged stored output a 500 page.
The store is opened read-only, on the first request, and again after a
failed open (so a store migrated meanwhile is picked up).
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import AsyncGenerator, Callable, Iterator, Mapping
from datetime import datetime
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

import attrs
import jinja2
from sqlalchemy.exc import SQLAlchemyError
from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import HTMLResponse, RedirectResponse, Response, StreamingResponse
from starlette.routing import Route

from ..errors import StoreError, WeakpromptError
from ..safetext import escape_surrogates
from ..store import Store
from .access import TokenCheck, checked_token
from .charts import usage_chart
from .experiments import (
    UnknownExperiment,
    compare_stored,
    list_experiment_summaries,
    load_experiment_view,
)
from .hosts import HostCheck, allowed_host
from .outputs import DamagedOutput, check_payload, list_outputs, load_output, stream_payload
from .parts import DIGEST, SAFE_IMAGE_TYPES, load_part_bytes
from .session_view import UnknownSession, load_session, locate_commit
from .sessions import list_sessions, session_exists
from .status import DEFAULT_PAUSED_RUNS, PausedRuns
from .toolsets import load_tool_set_page

__all__ = ["InspectorSettings", "create_app"]

_TEMPLATES = Path(__file__).with_name("templates")


@attrs.frozen
class InspectorSettings:
    """What the app shows: page sizes, the paused-runs table, a trace URL template; whom it answers.

    ``trace_url`` is e.g. ``"http://localhost:16686/trace/{trace_id}"``: a
    turn whose commit holds a trace id links there (without it, the ids are shown).
    ``allowed_hosts``: ``Host`` names answered besides the loopback ones
    (``127.0.0.1``, ``localhost``, ``[::1]``); any other is refused with 421,
    so a rebinding domain cannot read the store (``specs/OBSERVABILITY.md``).
    ``token``: when set, every request must show it (``Authorization: Bearer``,
    or a cookie got by opening a page with ``?token=``), else 401; it is left
    out of the settings' repr so it does not end up in logs.
    """

    sessions_per_page: int = 50
    turns_per_page: int = 50
    outputs_per_page: int = 100
    experiments_per_page: int = 50
    runs_per_page: int = 100
    paused_runs: PausedRuns = DEFAULT_PAUSED_RUNS
    trace_url: str | None = None
    allowed_hosts: tuple[str, ...] = attrs.field(default=(), converter=tuple[str, ...])
    token: str | None = attrs.field(default=None, repr=False)

    def __attrs_post_init__(self) -> None:
        for name in self.allowed_hosts:
            allowed_host(name)  # a bad name fails here, naming it, not on the first request
        if self.token is not None:
            checked_token(self.token)


class _Problem(Exception):
    """A request that ends in an error page."""

    def __init__(self, status: int, title: str, detail: str) -> None:
        super().__init__(detail)
        self.status, self.title, self.detail = status, title, detail


class _StoreHolder:
    """Opens the store read-only on first use; a failed open is tried again on the next request."""

    def __init__(self, url: str | None, store: Store | None) -> None:
        self._url, self._store, self._lock = url, store, threading.Lock()

    def get(self) -> Store:
        with self._lock:
            if self._store is None:
                assert self._url is not None
                try:
                    self._store = Store.open(self._url, read_only=True)
                except WeakpromptError as exc:
                    raise _Problem(503, "The store cannot be opened", f"{type(exc).__name__}: {exc}") from exc
            return self._store

    def close(self) -> None:
        with self._lock:
            if self._store is not None and self._url is not None:
                self._store.close()
                self._store = None


def _text(value: object) -> object:
    """Every value a template prints: lone surrogates (kept exactly by the store) cannot be sent as UTF-8."""
    return escape_surrogates(value) if isinstance(value, str) else value


def _size(value: int) -> str:
    amount = float(value)
    for unit in ("B", "KB", "MB", "GB"):
        if amount < 1024 or unit == "GB":
            return f"{int(amount)} {unit}" if unit == "B" else f"{amount:.1f} {unit}"
        amount /= 1024
    return f"{value} B"  # pragma: no cover - the loop always returns


def _when(value: object) -> str:
    if isinstance(value, datetime):
        moment = value
    else:
        try:
            moment = datetime.fromisoformat(str(value))
        except ValueError:
            return str(value)
    return moment.strftime("%Y-%m-%d %H:%M:%S")


def _query(params: Mapping[str, object]) -> str:
    """A link's query string from the template's parameters, empty ones left out."""
    return urlencode({key: value for key, value in params.items() if value not in (None, "")})


def _environment() -> jinja2.Environment:
    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(str(_TEMPLATES)),
        autoescape=True,
        finalize=_text,
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    env.filters["size"] = _size
    env.filters["when"] = _when
    env.filters["short"] = lambda value: str(value)[:12]
    env.filters["query"] = _query
    return env


def _positive(request: Request, name: str, default: int = 1) -> int:
    raw = request.query_params.get(name)
    if raw is None or raw == "":
        return default
    try:
        value = int(raw)
    except ValueError:
        value = 0
    if value < 1:
        raise _Problem(400, "Bad request", f"{name} must be a whole number from 1 up, got {raw!r}")
    return value


def _required(request: Request, name: str) -> str:
    value = request.query_params.get(name)
    if not value:
        raise _Problem(400, "Bad request", f"the {name!r} query parameter is missing")
    return value


def create_app(
    db: str | Store, *, settings: InspectorSettings | None = None, debug: bool = False
) -> Starlette:
    """The inspector for the store at ``db`` (a URL or path, opened read-only; or an open store).

    An open store is used as it is (the caller closes it); a URL is opened
    read-only on the first request and closed when the app shuts down.
    """
    config = settings or InspectorSettings()
    holder = _StoreHolder(None, db) if isinstance(db, Store) else _StoreHolder(str(db), None)
    env = _environment()

    def render(name: str, code: int = 200, **context: object) -> HTMLResponse:
        body = env.get_template(name).render(trace_url=config.trace_url, **context)
        return HTMLResponse(body, status_code=code)

    def problem_page(exc: _Problem) -> HTMLResponse:
        return render("error.html", exc.status, title=exc.title, detail=exc.detail, status=exc.status)

    def page(handler: Callable[[Request, Store], Response]) -> Callable[[Request], Any]:
        """Run ``handler`` off the event loop (the store is synchronous); every failure becomes a page."""

        async def endpoint(request: Request) -> Response:
            try:
                return await run_in_threadpool(lambda: handler(request, holder.get()))
            except _Problem as exc:
                return problem_page(exc)
            except UnknownExperiment as exc:
                return problem_page(
                    _Problem(404, "Unknown experiment", f"this store has no experiment {exc.args[0]!r}")
                )
            except UnknownSession as exc:
                return problem_page(
                    _Problem(404, "Unknown session", f"this store has no session {exc.args[0]!r}")
                )
            except (StoreError, SQLAlchemyError) as exc:
                detail = f"{type(exc).__name__}: {exc}"
                return problem_page(_Problem(500, "Database error", detail))
            except Exception as exc:  # a viewer shows what went wrong rather than dropping the connection
                return problem_page(_Problem(500, "Internal error", f"{type(exc).__name__}: {exc}"))

        return endpoint

    def sessions(request: Request, store: Store) -> Response:
        number = _positive(request, "page")
        query = request.query_params.get("q", "")
        per = config.sessions_per_page
        listing = list_sessions(
            store, query=query, offset=(number - 1) * per, limit=per, paused_runs=config.paused_runs
        )
        pages = max(1, -(-listing.total // per))
        if number > pages:  # past the end (the list shrank, or a hand-made link): show the last page
            return RedirectResponse(f"/?{_query({'q': query, 'page': pages})}", status_code=303)
        return render("sessions.html", listing=listing, page=number, pages=pages, query=query)

    def session(request: Request, store: Store) -> Response:
        session_id = _required(request, "id")
        view = load_session(
            store,
            session_id,
            page=_positive(request, "page"),
            per_page=config.turns_per_page,
            paused_runs=config.paused_runs,
        )
        return render("session.html", view=view, chart=usage_chart(view.usage))

    def commit(request: Request, store: Store) -> Response:
        session_id, commit_hash = _required(request, "id"), _required(request, "hash")
        found = locate_commit(store, session_id, commit_hash, per_page=config.turns_per_page)
        if found is None:
            raise _Problem(404, "Unknown commit", f"session {session_id!r} has no commit {commit_hash!r}")
        page_part, anchor = found.split("#", 1)
        return RedirectResponse(f"/session{page_part}&{_query({'id': session_id})}#{anchor}", status_code=303)

    def outputs(request: Request, store: Store) -> Response:
        session_id = _required(request, "session")
        number = _positive(request, "page")
        if not session_exists(store, session_id):
            raise UnknownSession(session_id)
        per = config.outputs_per_page
        listing = list_outputs(store, session_id, offset=(number - 1) * per, limit=per)
        pages = max(1, -(-listing.total // per))
        return render("outputs.html", session_id=session_id, listing=listing, page=number, pages=pages)

    def output(request: Request, store: Store) -> Response:
        session_id, seq = _required(request, "session"), _seq(request)
        detail = load_output(store, session_id, seq)
        if detail is None:
            raise _Problem(
                404, "Unknown stored output", f"session {session_id!r} has no stored output #{seq}"
            )
        return render("output.html", detail=detail)

    def raw(request: Request, store: Store) -> Response:
        session_id, seq = _required(request, "session"), _seq(request)
        detail = load_output(store, session_id, seq)
        if detail is None:
            raise _Problem(
                404, "Unknown stored output", f"session {session_id!r} has no stored output #{seq}"
            )
        try:
            check_payload(store, detail.record)
        except DamagedOutput as exc:
            raise _Problem(
                500, "Damaged stored output", f"stored output #{seq} of {session_id!r}: {exc}"
            ) from exc
        pieces: Iterator[bytes] = stream_payload(store, detail.record)
        return StreamingResponse(
            pieces,
            media_type="text/plain; charset=utf-8",
            headers={
                "Content-Length": str(detail.record.size_bytes),
                "X-Content-Type-Options": "nosniff",
                "Content-Disposition": f'inline; filename="output-{seq}.txt"',
            },
        )

    def part(request: Request, store: Store) -> Response:
        digest = request.path_params["digest"]
        found = load_part_bytes(store, digest) if DIGEST.fullmatch(digest) else None
        if found is None:
            raise _Problem(404, "Unknown part", f"this store has no image or document {digest!r}")
        if not found.intact:
            raise _Problem(500, "Damaged part", f"the stored bytes of {digest} do not hash to that digest")
        headers = {
            "X-Content-Type-Options": "nosniff",
            "Content-Security-Policy": "default-src 'none'; sandbox",
            "Cache-Control": "private, max-age=3600",
        }
        if found.media_type in SAFE_IMAGE_TYPES:
            return Response(found.data, media_type=found.media_type, headers=headers)
        name = digest.removeprefix("sha256:")[:16]
        headers["Content-Disposition"] = f'attachment; filename="part-{name}"'
        return Response(found.data, media_type="application/octet-stream", headers=headers)

    def toolset(request: Request, store: Store) -> Response:
        set_hash = request.path_params["set_hash"]
        found = load_tool_set_page(store, set_hash)
        if found is None:
            raise _Problem(404, "Unknown tool set", f"this store has no tool set {set_hash!r}")
        return render("toolset.html", toolset=found)

    def experiments(request: Request, store: Store) -> Response:
        number = _positive(request, "page")
        per = config.experiments_per_page
        listing = list_experiment_summaries(store, offset=(number - 1) * per, limit=per)
        pages = max(1, -(-listing.total // per))
        if number > pages:
            return RedirectResponse(f"/experiments?{_query({'page': pages})}", status_code=303)
        return render("experiments.html", listing=listing, page=number, pages=pages)

    def experiment(request: Request, store: Store) -> Response:
        experiment_id = _required(request, "id")
        view = load_experiment_view(
            store, experiment_id, page=_positive(request, "page"), per_page=config.runs_per_page
        )
        if view is None:
            raise UnknownExperiment(experiment_id)
        return render("experiment.html", view=view)

    def comparison(request: Request, store: Store) -> Response:
        a, b = _required(request, "a"), _required(request, "b")
        found = compare_stored(store, a, b, min_pass_rate=_rate(request, "min_pass_rate"))
        return render("comparison.html", comparison=found)

    routes = [
        Route("/", page(sessions)),
        Route("/experiments", page(experiments)),
        Route("/experiment", page(experiment)),
        Route("/experiments/compare", page(comparison)),
        Route("/session", page(session)),
        Route("/session/commit", page(commit)),
        Route("/outputs", page(outputs)),
        Route("/output", page(output)),
        Route("/output/raw", page(raw)),
        Route("/toolset/{set_hash}", page(toolset)),
        Route("/part/{digest}", page(part)),
    ]

    async def not_found(request: Request, exc: Exception) -> Response:
        return problem_page(_Problem(404, "Not found", f"no page at {request.url.path!r}"))

    @contextlib.asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncGenerator[None]:
        yield
        holder.close()

    middleware = [Middleware(HostCheck, extra_hosts=config.allowed_hosts)]  # outermost: Host first
    if config.token is not None:
        middleware.append(Middleware(TokenCheck, token=config.token))
    return Starlette(
        debug=debug,
        routes=routes,
        middleware=middleware,
        exception_handlers={404: not_found},
        lifespan=lifespan,
    )


def _seq(request: Request) -> int:
    raw = request.query_params.get("seq")
    try:
        value = int(raw) if raw is not None else -1
    except ValueError:
        value = -1
    if value < 0:
        raise _Problem(400, "Bad request", f"seq must be a whole number from 0 up, got {raw!r}")
    return value


def _rate(request: Request, name: str) -> float:
    """A pass-rate threshold from the query (default 1.0: every run of a case passes)."""
    raw = request.query_params.get(name)
    if raw is None or raw == "":
        return 1.0
    try:
        value = float(raw)
    except ValueError:
        value = -1.0
    if not 0.0 <= value <= 1.0:
        raise _Problem(400, "Bad request", f"{name} must be a number from 0 to 1, got {raw!r}")
    return value
