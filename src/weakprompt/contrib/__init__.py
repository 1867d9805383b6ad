"""Optional building blocks that sit on top of the core (layer 4).

Nothing here is imported by ``import weakprompt``; pull in the sub-package you
need, e.g. :mod:`weakprompt.contrib.planning`.
"""

from __future__ import annotations

__all__: list[str] = []
