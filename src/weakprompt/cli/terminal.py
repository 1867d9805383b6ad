"""Text from a model, a tool or a server, ready for a rich console: nothing in it can drive the terminal.

Rich reads ``[...]`` as markup and passes ESC and most other control
characters straight to the terminal, so a hostile tool description or call
id could clear the screen, write a hyperlink or the clipboard, or overwrite
the line a person is about to approve. :func:`markup_text` first makes every
control character a visible escape (:func:`weakprompt.safetext.terminal_text`),
then escapes the markup.
"""

from __future__ import annotations

from rich.markup import escape

from ..safetext import terminal_text

__all__ = ["markup_text"]


def markup_text(text: str) -> str:
    """``text`` to put inside rich markup: control characters shown as escapes, brackets escaped."""
    return escape(terminal_text(text))
