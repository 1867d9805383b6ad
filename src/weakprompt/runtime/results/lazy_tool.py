"""The ``get_tool_result`` tool: load an earlier tool result back into the context.

Old results compile as slim references; this is how the model gets one in
full again. Its own replies are ephemeral: they are never stored as tool
outputs, and in later turns they compile to a one-line note.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ...tools import Tool, ToolContext, ToolResult
from ...transcript.shaped import GET_TOOL_RESULT_NAME
from .policy import SizePolicy, handle_text
from .records import output_stats
from .store import ToolOutputStore

__all__ = [
    "KNOWN_IDS_SHOWN",
    "GetToolResultParams",
    "make_get_tool_result_tool",
    "not_found_text",
]

KNOWN_IDS_SHOWN = 10


@dataclass(frozen=True)
class GetToolResultParams:
    tool_call_id: str = field(
        metadata={"description": "The id of the earlier tool call whose full result you need."}
    )


def not_found_text(tool_call_id: str, known: list[str]) -> str:
    """The reply for an id this session has no stored result for."""
    shown = tool_call_id if len(tool_call_id) <= 80 else tool_call_id[:77] + "..."
    if not known:
        return f"No stored tool result has tool_call_id {shown!r}: this session has no stored results yet."
    listing = ", ".join(known)
    return (
        f"No stored tool result has tool_call_id {shown!r}. "
        f"Stored tool_call_ids in this session (newest first, at most {KNOWN_IDS_SHOWN}): {listing}."
    )


def make_get_tool_result_tool(
    outputs: ToolOutputStore, *, policy: SizePolicy | None = None
) -> Tool[GetToolResultParams, None]:
    """``get_tool_result`` over the stored outputs of ``outputs``' session.

    The result comes back in full unless it is oversized under ``policy``
    (by bytes, or by the remaining token budget of the evaluation): then the
    reply is its handle message, and ``tool_output`` is offered for it.
    """
    used_policy = policy if policy is not None else SizePolicy()

    def handler(params: GetToolResultParams, *, context: ToolContext) -> ToolResult[None]:
        call_id = params.tool_call_id.strip()
        meta = outputs.get_metadata(call_id) if call_id and len(call_id) <= 255 else None
        if meta is not None:
            tracker = context.budget_tracker
            remaining = None if tracker is None else tracker.remaining_tokens()
            if used_policy.is_oversized(output_stats(meta), remaining):  # the payload is not read at all
                if not meta.oversized:
                    outputs.mark_oversized(meta.tool_call_id)
                return ToolResult(message=handle_text(meta.handle, output_stats(meta)))
        found = outputs.get_result(call_id) if meta is not None else None
        if found is None:  # (or purged since its metadata was read)
            return ToolResult.error(
                not_found_text(params.tool_call_id, outputs.known_call_ids(KNOWN_IDS_SHOWN))
            )
        return ToolResult(message=found.text)

    return Tool(
        name=GET_TOOL_RESULT_NAME,
        description=(
            "Load the full result of an earlier tool call that is shown only as a stored reference, "
            "by its tool_call_id."
        ),
        handler=handler,
        params_type=GetToolResultParams,
        result_type=None,
        accepts_overrides=False,
    )
