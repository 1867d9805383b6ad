"""Storage: one SQLAlchemy Core database with a versioned, migrated schema."""

from __future__ import annotations

from . import tables
from .migrations import LATEST_VERSION, MIGRATIONS, Migration
from .store import Store

__all__ = ["LATEST_VERSION", "MIGRATIONS", "Migration", "Store", "tables"]
