"""Property tests: schema, parse and dump agree for random dataclass shapes."""

from __future__ import annotations

import json

from hypothesis import given
from hypothesis import strategies as st
from jsonschema import Draft202012Validator

from test_serde_strategies import fuzzy_json_for, shapes, values_for
from test_serde_strict_rules import strict_violations
from weakprompt.jsontypes import JSONObject
from weakprompt.serde import SerdeError, dump, parse, schema

FORMATS = Draft202012Validator.FORMAT_CHECKER


def _validator(tp: type, *, strict: bool = False) -> Draft202012Validator:
    return Draft202012Validator(schema(tp, strict=strict), format_checker=FORMATS)


def _parses(tp: type, value: object) -> bool:
    try:
        parse(tp, value)
    except SerdeError:
        return False
    return True


@given(shapes(), st.data())
def test_dump_validates_against_schema_and_parses_back(shape: type, data: st.DataObject) -> None:
    value = data.draw(values_for(shape))
    dumped = dump(value)
    assert json.loads(json.dumps(dumped)) == dumped
    errors = [error.message for error in _validator(shape).iter_errors(dumped)]
    assert errors == []
    assert parse(shape, dumped) == value


@given(shapes())
def test_generated_schemas_satisfy_the_2020_12_metaschema(shape: type) -> None:
    Draft202012Validator.check_schema(schema(shape))


@given(shapes(with_dicts=False), st.data())
def test_strict_schemas_follow_the_strict_rules(shape: type, data: st.DataObject) -> None:
    strict = schema(shape, strict=True)
    Draft202012Validator.check_schema(strict)
    assert strict_violations(strict) == []
    value = data.draw(values_for(shape))
    # dump writes every field, so strict schemas (all keys required) accept it too.
    errors = [error.message for error in _validator(shape, strict=True).iter_errors(dump(value))]
    assert errors == []


@given(shapes(with_formats=False, with_unions=True), st.data())
def test_schema_accepts_exactly_what_parse_accepts(shape: type, data: st.DataObject) -> None:
    value = data.draw(fuzzy_json_for(shape))
    assert _validator(shape).is_valid(value) == _parses(shape, value), value


@given(shapes(with_formats=False, with_unions=True), st.data())
def test_parse_is_total_and_reports_issue_paths(shape: type, data: st.DataObject) -> None:
    value = data.draw(fuzzy_json_for(shape))
    try:
        parse(shape, value)
    except SerdeError as err:
        assert err.issues
        for issue in err.issues:
            assert issue.path.startswith("$")
            assert issue.expected and issue.received
            assert issue.path in str(err) or len(err.issues) > 20


@given(shapes())
def test_schema_is_cached_and_returned_as_a_fresh_copy(shape: type) -> None:
    first = schema(shape)
    first["mutated"] = True
    second: JSONObject = schema(shape)
    assert "mutated" not in second
