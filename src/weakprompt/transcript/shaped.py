"""Tool results the evaluation's output pipeline has already shaped for the model.

Inside ``evaluate()`` the output store and size policy run before the
commit, so a ``tool_result`` hook sees what would be committed. Some of
that must reach the model exactly as it is: the handle message of an
oversized output (rewriting it would lose the handle) and the replies of
``tool_output`` / ``get_tool_result`` (answers the model asked for about
stored output). ``configure_tool_summarization()`` and
``compress_tool_calls()`` leave those alone; a custom handler can ask the
same question.
"""

from __future__ import annotations

from collections.abc import Mapping

from ..jsontypes import JSONValue
from .lazy import LOADED_RESULT_KEY, STORED_OUTPUT_KEY

__all__ = ["shaped_by_output_pipeline"]


def shaped_by_output_pipeline(tool_name: str, metadata: Mapping[str, JSONValue]) -> str | None:
    """Why this result must not be rewritten, or None when it may be."""
    reference = metadata.get(STORED_OUTPUT_KEY)
    if isinstance(reference, dict) and reference.get("oversized") is True:
        return "it is the handle message of an oversized stored output"
    if LOADED_RESULT_KEY in metadata:
        return "it is a get_tool_result reply, which the model asked for in full"
    # The runtime package imports this one, so its constant is read on use.
    from ..runtime.extraction import NEVER_STORED_TOOLS

    if tool_name in NEVER_STORED_TOOLS:
        return f"it is a {tool_name} reply about stored output"
    return None
