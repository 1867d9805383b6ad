"""Errors raised by the resource registry and the filesystems."""

from __future__ import annotations

from ..errors import WeakpromptError

__all__ = ["ResourceNotFoundError", "UnsafePathError"]


class ResourceNotFoundError(WeakpromptError, LookupError):
    """No resource is registered for the requested type."""


class UnsafePathError(WeakpromptError, ValueError):
    """A filesystem path is malformed or would leave the filesystem's root."""
