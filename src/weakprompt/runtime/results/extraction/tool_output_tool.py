"""The ``tool_output`` tool: the main model's way to ask about an output kept behind a handle.

The tool knows nothing about storage: it is built with a ``lookup`` that
turns a handle into an :class:`ExtractionSource` (the output store provides
it) and an ``extractor_factory`` that picks the extraction model for the
current evaluation. Its schema is fixed, not generated, because models and
prompts written against it rely on that exact shape.
"""

from __future__ import annotations

import copy
import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import TypeVar

import attrs

from ....errors import ConfigurationError
from ....events import ToolOutputExtracted, publish
from ....jsontypes import JSONObject, JSONValue
from ....serde import StrictSchemaError
from ....tools import Tool, ToolContext, ToolResult
from ....transcript.shaped import TOOL_OUTPUT_NAME
from ...redaction import default_redact
from .config import EXTRACTION_MODES, ExtractionConfig, ExtractionMode
from .extractor import ExtractionResult, Extractor
from .read_grep import RunSubAgent
from .replies import failure_reply, not_found_reply, success_reply
from .source import ExtractionSource

__all__ = [
    "TOOL_OUTPUT_SCHEMA",
    "FixedSchemaTool",
    "SourceLookup",
    "ToolOutputParams",
    "context_extractor",
    "make_tool_output_tool",
]

logger = logging.getLogger(__name__)

P = TypeVar("P")
R = TypeVar("R")

TOOL_OUTPUT_SCHEMA: JSONObject = {
    "type": "object",
    "additionalProperties": False,
    "required": ["handle", "extract"],
    "properties": {
        "handle": {
            "type": "string",
            "minLength": 1,
            "description": (
                "The handle of the stored output, copied from the tool result that said the output "
                'was too large (tool_output(handle = "<handle>", ...)).'
            ),
        },
        "extract": {
            "type": "string",
            "minLength": 1,
            "description": (
                "Exactly what you need from the stored output, in detail: the facts, fields, keys, "
                "sections, lines or values to look for, and how to report them."
            ),
        },
        "mode": {
            "type": "string",
            "enum": list(EXTRACTION_MODES),
            "description": (
                "Optional. auto = let the tool choose; full-chunked = a model reads every chunk and "
                "the answers are merged; read-grep = a sub-agent searches with read and grep; "
                "truncate = only the start and end of the output, no model."
            ),
        },
    },
}
"""The parameters schema, exactly as models see it."""

SourceLookup = Callable[[str, ToolContext], ExtractionSource | None]
"""``lookup(handle, context)``: the stored output for ``handle`` in this session, or ``None``."""


@dataclass(frozen=True)
class ToolOutputParams:
    """Arguments of ``tool_output``.

    Emptiness and the mode are checked by the handler, not the parser, so
    the model gets the tool's own failure reply for them.
    """

    handle: str
    extract: str
    mode: str = "auto"


@attrs.frozen
class FixedSchemaTool(Tool[P, R]):
    """A tool that advertises a hand-written parameters schema instead of a generated one.

    The params type must accept what the schema allows. There is no strict
    variant (strict mode requires every property), so asking for one raises
    :class:`StrictSchemaError` and adapters send this schema unflagged.
    """

    fixed_schema: JSONObject = attrs.field(factory=dict[str, JSONValue], kw_only=True, eq=False, hash=False)

    def parameters_schema(self, *, strict: bool = False) -> JSONObject:
        if strict:
            raise StrictSchemaError(f"tool {self.name!r} has a fixed schema with no strict variant")
        return copy.deepcopy(self.fixed_schema)


def _publish(context: ToolContext, source: ExtractionSource, result: ExtractionResult) -> None:
    event = ToolOutputExtracted(
        session_id=context.session.session_id,
        handle=source.handle,
        tool_name=source.tool_name,
        strategy=result.strategy_used,
        fallback_reason=result.fallback_reason,
        usage=result.usage,
        created_at=context.session.clock.now(),
    )
    publish(context.session.bus, event, logger=logger, about=f"for handle {source.handle}")


def context_extractor(
    config: ExtractionConfig | None = None, *, run_agent: RunSubAgent | None = None
) -> Callable[[ToolContext], Extractor]:
    """An ``extractor_factory`` that extracts with the evaluation's own model and clock.

    ``run_agent`` runs the read-grep sub-agent (see :class:`Extractor`).
    Raises :class:`ConfigurationError` (turned into a failure reply by the
    tool) when the context carries no adapter.
    """

    def build(context: ToolContext) -> Extractor:
        if context.adapter is None:
            raise ConfigurationError(
                "tool_output needs an extraction model, and this tool context has no adapter"
            )
        return Extractor(context.adapter, config=config, clock=context.session.clock, run_agent=run_agent)

    return build


def make_tool_output_tool(
    lookup: SourceLookup,
    extractor_factory: Callable[[ToolContext], Extractor],
) -> Tool[ToolOutputParams, ExtractionResult]:
    """Build ``tool_output`` over ``lookup`` (handles of this session) and ``extractor_factory``.

    Replies: the success header and the extracted text (also after a
    truncate fallback); a successful "nothing found" reply for a handle this
    session does not have (another session's handles are treated as
    unknown); the failure header for an empty ``extract``, an unknown mode
    or an extractor that cannot be built. The result's value is the
    :class:`ExtractionResult` (kept out of the model's context) so callers
    can read the usage; it is also charged to ``context.budget_tracker``.
    """

    def handler(params: ToolOutputParams, *, context: ToolContext) -> ToolResult[ExtractionResult]:
        source = lookup(params.handle, context)
        if source is None or (
            source.session_id is not None and source.session_id != context.session.session_id
        ):
            return ToolResult(message=not_found_reply(params.handle))
        if not params.extract.strip():
            return ToolResult.error(
                failure_reply(
                    source.tool_name,
                    source.handle,
                    params.mode,
                    "`extract` is empty. Say precisely what you need from this output: "
                    "the facts, fields, keys or lines to look for.",
                )
            )
        if params.mode not in EXTRACTION_MODES:
            return ToolResult.error(
                failure_reply(
                    source.tool_name,
                    source.handle,
                    params.mode,
                    f"Unknown mode {params.mode!r}. Use one of: {', '.join(EXTRACTION_MODES)} "
                    "(or leave mode out to let the tool choose).",
                )
            )
        mode: ExtractionMode = params.mode
        try:
            extractor = extractor_factory(context)
        except Exception as exc:
            logger.warning("tool_output: no extractor for handle %s", source.handle, exc_info=exc)
            return ToolResult.error(
                failure_reply(
                    source.tool_name,
                    source.handle,
                    mode,
                    f"No extraction model is available ({default_redact(exc)}). "
                    'Try mode "truncate", which needs no model.',
                )
            )
        result = extractor.extract(
            source,
            params.extract,
            mode,
            deadline=context.deadline,
            budget_tracker=context.budget_tracker,
        )
        _publish(context, source, result)
        reply = success_reply(source.tool_name, source.handle, result.strategy_used, result.text)
        return ToolResult(message=reply, value=result, exclude_value_from_context=True)

    return FixedSchemaTool(
        name=TOOL_OUTPUT_NAME,
        description=(
            "Get what you need from a tool output that was too large to show: pass its handle and "
            "precise instructions about what to extract."
        ),
        handler=handler,
        params_type=ToolOutputParams,
        result_type=ExtractionResult,
        accepts_overrides=False,
        fixed_schema=TOOL_OUTPUT_SCHEMA,
    )
