"""Tool results the evaluation's output pipeline shapes for the model, which rewriters leave alone.

Some results must reach the model exactly as they are: an output kept
behind a handle (its commit holds the handle message; inside
``evaluate()`` the hook, which runs before the size policy, is told in
``stored_output`` that it would be), and the replies of ``tool_output`` /
``get_tool_result`` (answers the model asked for about stored output).
``configure_tool_summarization()`` and ``compress_tool_calls()`` leave
those alone; a custom handler can ask the same question.

The names of the pipeline's own tools are decided here, in the lowest layer
that needs them: a bare transcript recognises a ``tool_output`` reply by
name (its commit may carry no metadata saying so). The output store, the
pipeline and the tools themselves (``weakprompt.runtime.results``) take
them from here.
"""

from __future__ import annotations

from collections.abc import Mapping

from ..jsontypes import JSONValue
from .lazy import LOADED_RESULT_KEY, STORED_OUTPUT_KEY

__all__ = ["GET_TOOL_RESULT_NAME", "NEVER_STORED_TOOLS", "TOOL_OUTPUT_NAME", "shaped_by_output_pipeline"]

TOOL_OUTPUT_NAME = "tool_output"
"""The tool that answers questions about an output kept behind a handle."""

GET_TOOL_RESULT_NAME = "get_tool_result"
"""The tool that loads an earlier result shown as a slim reference."""

NEVER_STORED_TOOLS: frozenset[str] = frozenset({TOOL_OUTPUT_NAME, GET_TOOL_RESULT_NAME})
"""Tools whose results always go to the model inline, never behind a handle.

Their results are already the answer to "show me a stored output"; storing
them again would send the model round in circles.
"""


def shaped_by_output_pipeline(tool_name: str, metadata: Mapping[str, JSONValue]) -> str | None:
    """Why this result must not be rewritten, or None when it may be."""
    reference = metadata.get(STORED_OUTPUT_KEY)
    if isinstance(reference, dict) and reference.get("oversized") is True:
        return "it is the handle message of an oversized stored output"
    if LOADED_RESULT_KEY in metadata:
        return "it is a get_tool_result reply, which the model asked for in full"
    if tool_name in NEVER_STORED_TOOLS:
        return f"it is a {tool_name} reply about stored output"
    return None
