"""The wheel carries the PEP 561 marker, so type checkers use weakprompt's own annotations."""

from __future__ import annotations

import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def test_the_package_has_a_py_typed_marker() -> None:
    assert (ROOT / "src" / "weakprompt" / "py.typed").is_file()


def test_the_built_wheel_ships_py_typed(tmp_path: Path) -> None:
    wheel_builder = pytest.importorskip("hatchling.builders.wheel")
    builder = wheel_builder.WheelBuilder(str(ROOT))
    (wheel,) = builder.build(directory=str(tmp_path), versions=["standard"])
    with zipfile.ZipFile(wheel) as archive:
        names = set(archive.namelist())
    assert "weakprompt/py.typed" in names
    assert "weakprompt/tools/decorator.py" in names
