"""How a structured answer is asked of a model: the output modes.

A prompt with an output type needs the model to answer in JSON that fits a
schema. Providers (and OpenAI-compatible servers) differ in how that can be
asked, so the request names a mode and each adapter maps it to its wire:

- ``native``: the provider's own JSON-schema output (grammar-constrained on the local model);
- ``json_object``: the provider's plain JSON mode, with the schema in the instructions;
- ``tool``: a final-answer tool whose parameters are the schema;
- ``prompted``: the schema in the instructions only, the answer parsed from the text;
- ``auto``: the adapter's best mode, moving to its next one when a server refuses it.

The names are declared once, with the prompt (a template may choose its mode).
"""

from __future__ import annotations

from typing import Literal, TypeAlias

from ..prompt.output import OUTPUT_MODES, OutputMode

__all__ = ["CONCRETE_OUTPUT_MODES", "OUTPUT_MODES", "ConcreteOutputMode", "OutputMode"]

ConcreteOutputMode: TypeAlias = Literal["native", "json_object", "tool", "prompted"]
"""A mode an adapter actually sends (``auto`` resolved)."""

CONCRETE_OUTPUT_MODES: tuple[ConcreteOutputMode, ...] = ("native", "json_object", "tool", "prompted")
