"""The stored-output record, as the store names it: the classes of :mod:`weakprompt.output_record`.

The record sits below the store so that the transcript can share it
without loading the store (and SQLAlchemy) on import.
"""

from __future__ import annotations

from ..lazy import lazy_exports
from ..output_record import OutputFacts, StoredOutputRef, ToolResultMetadata

__all__ = ["OutputFacts", "StoredOutputRef", "ToolResultMetadata"]

# ``ToolResultReference`` warns here too, as it does in the record's own module.

__getattr__, __dir__ = lazy_exports(
    __name__, {}, __all__, renamed={"ToolResultReference": "ToolResultMetadata"}
)
