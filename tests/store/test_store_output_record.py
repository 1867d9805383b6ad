"""One stored-output record: every field declared once, the commit's reference a view of the record."""

from __future__ import annotations

import inspect
from datetime import UTC, datetime

import attrs
import pytest
from hypothesis import given
from hypothesis import strategies as st

from weakprompt.runtime.results import PreparedOutput, commit_metadata, stored_output_ref
from weakprompt.store.output_record import OutputFacts, StoredOutputRef, ToolResultMetadata
from weakprompt.transcript import lazy

TEXT = st.text(max_size=20)
COUNT = st.integers(min_value=0, max_value=10**9)

RECORDS = st.builds(
    ToolResultMetadata,
    session_id=TEXT,
    tool_call_id=TEXT,
    tool_name=TEXT,
    arguments=TEXT,
    handle=TEXT,
    stored_hash=TEXT,
    size_bytes=COUNT,
    lines=COUNT,
    tokens=COUNT,
    is_error=st.booleans(),
    oversized=st.booleans(),
    summary=TEXT,
    preview=TEXT,
    created_at=st.just(datetime(2026, 1, 1, tzinfo=UTC)),
    seq=COUNT,
    deduplicated=st.booleans(),
)


def _own_fields(cls: type) -> set[str]:
    return set(inspect.get_annotations(cls))


def test_every_field_of_a_stored_output_is_declared_once() -> None:
    """The reference, the facts, the record and the prepared output extend one another, repeating nothing."""
    chain = [StoredOutputRef, OutputFacts, ToolResultMetadata]
    declared: set[str] = set()
    for cls in chain:
        own = _own_fields(cls)
        assert not own & declared, f"{cls.__name__} declares {sorted(own & declared)} again"
        declared |= own
        assert {f.name for f in attrs.fields(cls)} == declared
    assert issubclass(PreparedOutput, OutputFacts)
    assert not _own_fields(PreparedOutput) & declared
    assert lazy.StoredOutputRef is StoredOutputRef  # the transcript keeps no copy of its own


@given(RECORDS)
def test_a_commit_reference_is_the_records_own_view(record: ToolResultMetadata) -> None:
    ref = stored_output_ref(record)
    assert type(ref) is StoredOutputRef and ref.as_ref() is ref
    assert isinstance(record, StoredOutputRef)
    assert StoredOutputRef.from_json(record.to_json()) == ref
    assert commit_metadata(record) == {lazy.STORED_OUTPUT_KEY: ref.to_json()}
    assert all(getattr(ref, f.name) == getattr(record, f.name) for f in attrs.fields(StoredOutputRef))


def test_the_commit_metadata_keeps_the_same_keys() -> None:
    """Commits stored before the record was merged read back the same: the JSON is unchanged."""
    ref = StoredOutputRef(
        tool_call_id="c1",
        tool_name="t",
        handle="h",
        stored_hash="x",
        summary="s",
        preview="p",
        size_bytes=1,
        lines=1,
        tokens=1,
    )
    assert list(ref.to_json()) == [
        "tool_call_id",
        "tool_name",
        "handle",
        "stored_hash",
        "summary",
        "preview",
        "size_bytes",
        "lines",
        "tokens",
        "is_error",
        "oversized",
    ]


@pytest.mark.parametrize(
    "value",
    [None, "x", {"tool_call_id": "c"}, {**dict.fromkeys(("tool_call_id", "tool_name"), "a"), "lines": -1}],
)
def test_a_reference_not_shaped_like_one_reads_as_none(value: object) -> None:
    assert StoredOutputRef.from_json(value) is None  # type: ignore[arg-type]
