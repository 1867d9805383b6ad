"""A module no test worker serves: importing it writes a marker file, so a test can tell it never ran.

The marker goes to ``$WEAKPROMPT_DURABLE_COUNTS/imported-durable_marker``.
"""

from __future__ import annotations

import os
from pathlib import Path

_where = os.environ.get("WEAKPROMPT_DURABLE_COUNTS")
if _where:
    (Path(_where) / "imported-durable_marker").write_text(str(os.getpid()))


def marked_prompt() -> None:
    """Never called: a worker refuses the reference before importing this module."""
