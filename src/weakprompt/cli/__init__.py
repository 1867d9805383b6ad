"""The ``weakprompt`` command line (click + rich).

``weakprompt run path/to/module.py:prompt`` evaluates a prompt and prints each
turn as it happens; ``weakprompt transcript show`` reads a stored transcript;
``weakprompt tools`` lists a prompt's tools with schemas and hashes.
"""

from __future__ import annotations

from .app import cli, main

__all__ = ["cli", "main"]
