"""A store whose folder is missing is refused with the folder named, and nothing is created."""

from __future__ import annotations

from pathlib import Path

import pytest

from weakprompt.errors import StoreError
from weakprompt.store import Store


def test_a_missing_folder_is_named_with_how_to_create_it(tmp_path: Path) -> None:
    target = tmp_path / "no such" / "dir" / "run.db"
    with pytest.raises(StoreError) as raised:
        Store.open(target)
    message = str(raised.value)
    assert f"its folder {str(target.parent)!r} does not exist" in message
    assert f"mkdir -p '{target.parent}'" in message
    assert not (tmp_path / "no such").exists()  # nothing was made on the way


def test_a_file_where_the_folder_should_be_is_named(tmp_path: Path) -> None:
    blocker = tmp_path / "notes.txt"
    blocker.write_text("kept", encoding="utf-8")
    with pytest.raises(StoreError, match=r"'.*notes\.txt' is not a folder"):
        Store.open(blocker / "run.db")
    assert blocker.read_text(encoding="utf-8") == "kept"


def test_a_store_in_an_existing_folder_still_opens(tmp_path: Path) -> None:
    with Store.open(tmp_path / "run.db") as store:
        assert store.schema_version > 0
