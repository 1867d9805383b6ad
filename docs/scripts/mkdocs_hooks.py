"""MkDocs hooks for the guide (mkdocs.yml ``hooks:``).

The docstrings use Sphinx roles (``:class:`Store```); mkdocstrings renders the name as code and
leaves the role's prefix as text. This drops the prefix, so the reference reads as prose.
"""

from __future__ import annotations

import re
from typing import Any

_ROLE = re.compile(r":(?:py:)?(?:class|func|meth|attr|data|exc|mod|obj|const):(?=<code>)")


def on_page_content(html: str, **kwargs: Any) -> str:
    """The page's HTML without the role prefixes in front of code spans."""
    return _ROLE.sub("", html)
