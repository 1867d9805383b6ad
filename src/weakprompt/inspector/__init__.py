"""A read-only web inspector for a weakprompt store (the ``inspector`` extra: Starlette, Jinja2, uvicorn).

``weakprompt inspect --db URL`` serves it; :func:`create_app` builds the
Starlette app for a URL or an open store. The query modules
(:mod:`~weakprompt.inspector.sessions`, ``session_view``, ``outputs``,
``toolsets``, ``experiments``) need only SQLAlchemy, so the terminal's session list uses
them without the extra. Nothing here is imported by ``import weakprompt``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..lazy import lazy_exports

if TYPE_CHECKING:
    from .app import InspectorSettings, create_app
    from .sessions import SessionListing, SessionSummary, list_sessions
    from .status import PausedRuns

__all__ = [
    "InspectorSettings",
    "PausedRuns",
    "SessionListing",
    "SessionSummary",
    "create_app",
    "list_sessions",
]

_WHERE = {
    "InspectorSettings": ".app",
    "create_app": ".app",
    "SessionListing": ".sessions",
    "SessionSummary": ".sessions",
    "list_sessions": ".sessions",
    "PausedRuns": ".status",
}


# Names resolve on first use: the web app's imports load only when it is asked for.
__getattr__, __dir__ = lazy_exports(__name__, _WHERE, __all__)
