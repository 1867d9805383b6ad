"""Tool-call arguments as the parsed object Anthropic wants.

OpenAI takes the JSON *string* (``ToolCall.arguments_json()``); Anthropic a
parsed *object*. A model can emit malformed JSON, and the conversation must
still convert (the dispatcher reports the mistake to the model), so nothing
here raises.
"""

from __future__ import annotations

import json

from ...jsontypes import JSONObject, JSONValue
from ...messages import ToolCall

__all__ = ["RAW_ARGUMENTS_KEY", "arguments_object"]

RAW_ARGUMENTS_KEY = "_raw"
"""Key under which unparseable (or non-object) argument text is kept for Anthropic."""


def arguments_object(call: ToolCall) -> JSONObject:
    """The arguments as a JSON object.

    Blank text means "no arguments" (``{}``). Text that is not a JSON object
    is kept verbatim as ``{"_raw": text}`` so that no information is lost and
    the request still has the shape Anthropic requires.
    """
    if not isinstance(call.arguments, str):
        return dict(call.arguments)
    text = call.arguments
    if not text.strip():
        return {}
    try:
        parsed: JSONValue = json.loads(text)
    except ValueError:
        return {RAW_ARGUMENTS_KEY: text}
    if isinstance(parsed, dict):
        return parsed
    return {RAW_ARGUMENTS_KEY: text}
