"""OpenTelemetry spans for weakprompt runs, following the GenAI semantic conventions.

``instrument()`` traces every run; ``OTelTracing(...)`` passed as
``evaluate(..., tracing=)`` traces one. Each run is an ``invoke_agent`` span
with a ``chat`` span per model call and an ``execute_tool`` span per tool
call; the model calls that summarize a result or extract from a stored
output are ``chat`` spans nested under their tool call. Content (messages,
arguments, results) is recorded only with ``capture_content=True``, and
always through the run's redaction hook. Needs the ``otel`` extra
(``opentelemetry-api``); see ``specs/OBSERVABILITY.md``.
"""

from __future__ import annotations

from importlib.util import find_spec

if find_spec("opentelemetry") is None:  # pragma: no cover - the test environment has the extra
    raise ImportError("weakprompt.otel needs OpenTelemetry: pip install 'weakprompt[otel]'")

from .attributes import (
    CONTENT_ATTRIBUTES,
    EVENT_CACHE_BUSTED,
    EVENT_HANDLE,
    EVENT_RETRY,
    EVENT_RUN_ROLLED_BACK,
    EVENT_TOOL_ROLLED_BACK,
    PURPOSE,
)
from .tracing import OTelTracing, instrument, uninstrument

__all__ = [
    "CONTENT_ATTRIBUTES",
    "EVENT_CACHE_BUSTED",
    "EVENT_HANDLE",
    "EVENT_RETRY",
    "EVENT_RUN_ROLLED_BACK",
    "EVENT_TOOL_ROLLED_BACK",
    "PURPOSE",
    "OTelTracing",
    "instrument",
    "uninstrument",
]
