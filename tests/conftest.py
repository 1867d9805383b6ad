"""Shared pytest wiring: the --skip-real flag, hypothesis profiles and the kit's fixtures."""

from __future__ import annotations

import os

import pytest
from hypothesis import HealthCheck, settings

# The testing kit's fixtures (session, store, transcript, scripted_adapter, function_adapter) are
# what users get from the pytest11 entry point; naming the module here makes them available even
# before the package is reinstalled, and pytest skips it when the entry point already loaded it.
# pytester runs the kit's plugin tests in a fresh pytest; postgres_support (tests/support) gives every
# folder the PostgreSQL fixtures (pg_database, pg_url, backend_url).
pytest_plugins = ["pytester", "weakprompt.testing.pytest_plugin", "postgres_support"]

settings.register_profile("ci", max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
settings.register_profile("dev", max_examples=60, deadline=None)
_CI = bool(os.environ.get("CI"))
settings.load_profile("ci" if _CI else "dev")
# Fuzz tests that guard a "never escapes" contract ask for this profile by name:
# 10,000 examples under CI, a quick pass locally.
settings.register_profile(
    "fuzz",
    max_examples=10_000 if _CI else 300,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.filter_too_much],
)


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--skip-real",
        action="store_true",
        default=False,
        help="skip tests that run the real local model (llama.cpp)",
    )


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if not config.getoption("--skip-real"):
        return
    skip = pytest.mark.skip(reason="--skip-real given")
    for item in items:
        if "real_model" in item.keywords:
            item.add_marker(skip)
