"""Tool-call arguments as the parsed object Anthropic wants.

OpenAI takes the JSON *string* (``ToolCall.arguments_json()``); Anthropic a
parsed *object*. A model can emit malformed JSON, and the conversation must
still convert (the dispatcher reports the mistake to the model), so nothing
here raises.
"""

from __future__ import annotations

from ...jsontypes import JSONObject
from ...messages import ToolCall

__all__ = ["RAW_ARGUMENTS_KEY", "arguments_object"]

RAW_ARGUMENTS_KEY = "_raw"
"""Key under which unparseable (or non-object) argument text is kept for Anthropic."""


def arguments_object(call: ToolCall) -> JSONObject:
    """The arguments as a JSON object.

    Blank text means "no arguments" (``{}``). Arguments that are not a plain
    JSON object (malformed text, another JSON value, ``NaN``, a repeated
    key...) are kept verbatim as ``{"_raw": text}`` so that no information
    is lost and the request still has the shape Anthropic requires. The
    object is the call's own decode (:attr:`ToolCall.decoded_arguments`),
    copied at the top level: converting a conversation parses nothing again.
    """
    decoded = call.decoded_arguments
    if isinstance(decoded, dict):
        return dict(decoded)
    return {RAW_ARGUMENTS_KEY: call.arguments_json()}
