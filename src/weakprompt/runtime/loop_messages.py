"""The texts the evaluation loop itself writes into the conversation.

Kept apart from the loop so their wording can be read (and tested) on its
own: each one tells the model what happened and what to do next.
"""

from __future__ import annotations

import json

from ..jsontypes import JSONObject

__all__ = ["expansion_limit", "expansion_refused", "output_correction", "output_rejection", "sections_opened"]


def sections_opened(keys: tuple[str, ...], tool_names: tuple[str, ...]) -> str:
    listing = ", ".join(keys)
    tools = ", ".join(tool_names) if tool_names else "none"
    return (
        f"Opened section(s) {listing}: their full text is now part of the instructions above. "
        f"Tools available now: {tools}."
    )


def expansion_limit(limit: int) -> str:
    return (
        f"No more sections can be opened in this task (the limit is {limit} expansion(s)). "
        "Continue with what you have."
    )


def expansion_refused(error: str) -> str:
    return f"The sections could not be opened: {error}"


def output_correction(errors: str, output_name: str | None, schema: JSONObject | None) -> str:
    """The corrective user turn after a final answer that did not parse."""
    name = f" ({output_name})" if output_name else ""
    text = (
        f"Your final answer could not be used: {errors}. "
        f"Reply again with only a JSON value matching the required output{name}, and no other text."
    )
    if schema is not None:
        text += " Its JSON Schema: " + json.dumps(schema, separators=(",", ":"), ensure_ascii=False)
    return text


def output_rejection(reason: str, output_name: str | None) -> str:
    """The corrective user turn after an output validator rejected a final answer that parsed."""
    name = f" ({output_name})" if output_name else ""
    return (
        f"Your final answer was rejected: {reason}. "
        f"Reply again with only a corrected JSON value for the required output{name}, and no other text."
    )
