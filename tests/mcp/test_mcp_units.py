"""The MCP pieces that need no server: names, server specs, filters, schemas, result conversion, imports."""

from __future__ import annotations

import math
import subprocess
import sys

import mcp.types as mcp_types
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from jsonschema import Draft202012Validator

from weakprompt.errors import ConfigurationError
from weakprompt.mcp import McpServer, McpToolInfo, ToolFilter
from weakprompt.mcp._names import tool_name
from weakprompt.mcp._results import content_text, tool_result
from weakprompt.mcp._tool import SchemaProblem, compile_schema, quick_check
from weakprompt.tools import ToolResult, tool
from weakprompt.tools.definition import NAME_PATTERN

# -- names ------------------------------------------------------------------------------------


@given(st.lists(st.text(min_size=1, max_size=90), min_size=1, max_size=12, unique=True))
def test_every_server_name_maps_to_a_unique_provider_safe_name(names: list[str]) -> None:
    taken: set[str] = set()
    made = [tool_name("p_", name, taken) for name in names]
    assert all(NAME_PATTERN.fullmatch(name) for name in made)
    assert len(set(made)) == len(made)


def test_a_valid_name_is_kept_and_a_changed_one_gets_a_digest() -> None:
    taken: set[str] = set()
    assert tool_name("", "get_time", taken) == "get_time"
    changed = tool_name("", "Get.Time", taken)
    assert changed.startswith("get_time_") and changed != "get_time"
    assert len(tool_name("", "x" * 100, taken)) == 64


# -- server specs -------------------------------------------------------------------------------


def test_parse_tells_commands_from_urls() -> None:
    stdio = McpServer.parse("uvx  'mcp-server-time' --local-timezone Europe/Lisbon")
    assert (stdio.transport, stdio.command, stdio.args) == (
        "stdio",
        "uvx",
        ("mcp-server-time", "--local-timezone", "Europe/Lisbon"),
    )
    assert stdio.name == "uvx"
    http = McpServer.parse(" https://example.test/mcp ")
    assert (http.transport, http.url) == ("http", "https://example.test/mcp")


@pytest.mark.parametrize("text", ["", "   ", "'unclosed"])
def test_parse_refuses_what_is_not_a_server(text: str) -> None:
    with pytest.raises(ConfigurationError):
        McpServer.parse(text)


def test_constructors_check_their_input() -> None:
    with pytest.raises(ConfigurationError, match="needs a command"):
        McpServer.stdio(" ")
    with pytest.raises(ConfigurationError, match="http:// or https://"):
        McpServer.http("ftp://x")
    assert McpServer.in_memory(object(), name="x").name == "x"


# -- filters -----------------------------------------------------------------------------------


def _info(name: str = "t", **hints: object) -> McpToolInfo:
    return McpToolInfo(name=name, description="d", input_schema={"type": "object"}, **hints)  # type: ignore[arg-type]


def test_filter_conditions_all_hold() -> None:
    chosen = ToolFilter(include=["a", "b"], exclude=["b"], where=lambda info: info.name != "c")
    assert [n for n in "abc" if chosen.accepts(_info(n))] == ["a"]
    assert ToolFilter(destructive=False).accepts(_info(read_only=True))  # read-only implies not destructive
    assert not ToolFilter(destructive=False).accepts(_info())  # no hint: may be destructive
    assert ToolFilter(meta={"k": 1}).accepts(_info(meta={"k": 1}))
    assert not ToolFilter(meta={"k": 1}).accepts(_info(meta={}))


# -- schemas ---------------------------------------------------------------------------------------


def test_compile_schema_names_what_is_wrong() -> None:
    with pytest.raises(SchemaProblem, match=r"not valid JSON Schema at \$\.properties\.a\.type"):
        compile_schema({"type": "object", "properties": {"a": {"type": "nope"}}})
    with pytest.raises(SchemaProblem, match="must describe an object"):
        compile_schema({"type": "array"})
    assert (
        compile_schema({"$schema": "http://json-schema.org/draft-07/schema#", "type": "object"}) is not None
    )


_PRIMITIVE_TYPES = st.sampled_from(["string", "integer", "number", "boolean"])
_JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False) | st.text(),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=3), inner, max_size=3),
    max_leaves=6,
)


@st.composite
def _flat_schemas(draw: st.DrawFn) -> dict[str, object]:
    names = draw(st.lists(st.sampled_from(["a", "b", "c", "d"]), unique=True, max_size=4))
    properties = {name: {"type": draw(_PRIMITIVE_TYPES)} for name in names}
    schema: dict[str, object] = {"type": "object", "properties": properties}
    schema["required"] = draw(st.lists(st.sampled_from(["a", "b", "c", "d", "e"]), unique=True, max_size=3))
    if draw(st.booleans()):
        schema["additionalProperties"] = draw(st.booleans())
    return schema


@settings(max_examples=300)
@given(_flat_schemas(), st.dictionaries(st.sampled_from(["a", "b", "c", "d", "e"]), _JSON, max_size=5))
def test_the_quick_check_never_accepts_what_jsonschema_refuses(
    schema: dict[str, object], arguments: dict[str, object]
) -> None:
    check = quick_check(schema)  # type: ignore[arg-type]
    assert check is not None
    if check(arguments):  # type: ignore[arg-type]
        assert Draft202012Validator(schema).is_valid(arguments)


def test_the_quick_check_steps_aside_for_other_schemas() -> None:
    assert quick_check({"type": "object", "properties": {"a": {"type": "array"}}}) is None
    assert quick_check({"type": "object", "properties": {"a": {"type": "string", "minLength": 2}}}) is None
    assert quick_check({"type": "object", "anyOf": []}) is None
    assert quick_check({"type": "object", "additionalProperties": {"type": "string"}}) is None


# -- results ---------------------------------------------------------------------------------------


def test_content_blocks_read_as_text() -> None:
    blocks = [
        mcp_types.TextContent(type="text", text="hello"),
        mcp_types.ImageContent(type="image", data="aGVsbG8=", mime_type="image/png"),
        mcp_types.ResourceLink(type="resource_link", uri="demo://x", name="x"),
        mcp_types.EmbeddedResource(
            type="resource", resource=mcp_types.TextResourceContents(uri="demo://t", text="inline")
        ),
        mcp_types.EmbeddedResource(
            type="resource", resource=mcp_types.BlobResourceContents(uri="demo://b", blob="aGVsbG8=")
        ),
    ]
    assert content_text(blocks).splitlines() == [
        "hello",
        "[image image/png, 6 bytes]",
        "[resource demo://x x]",
        "inline",
        "[resource demo://b, 6 bytes]",
    ]


def test_results_convert() -> None:
    failed = tool_result(
        "t", mcp_types.CallToolResult(content=[], structured_content={"why": "x"}, is_error=True)
    )
    assert not failed.success and '{"why":"x"}' in failed.message
    silent = tool_result("t", mcp_types.CallToolResult(content=[], is_error=True))
    assert "(no message)" in silent.message
    structured = tool_result("t", mcp_types.CallToolResult(content=[], structured_content={"a": [1, "é"]}))
    assert structured.render() == '{"a":[1,"é"]}' and structured.value == {"a": [1, "é"]}
    odd = tool_result(
        "t",
        mcp_types.CallToolResult(
            content=[mcp_types.TextContent(type="text", text="nan")], structured_content={"x": math.nan}
        ),
    )
    assert odd.render() == "nan"


# -- imports ----------------------------------------------------------------------------------------


def test_importing_weakprompt_or_its_mcp_package_loads_no_sdk() -> None:
    code = (
        "import sys, weakprompt, weakprompt.mcp, weakprompt.cli; "
        "print(sorted(m for m in sys.modules if m == 'mcp' or m.startswith(('mcp.', 'mcp_types'))))"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "[]"


def test_the_live_schema_memo_is_kept_per_tool_object_and_bounded(monkeypatch: pytest.MonkeyPatch) -> None:
    from weakprompt.prompt import ToolSchemaCache, tool_schemas

    @tool
    def one(x: int) -> ToolResult[None]:
        """One."""
        return ToolResult.ok(None)

    @tool
    def two(x: int) -> ToolResult[None]:
        """Two."""
        return ToolResult.ok(None)

    monkeypatch.setattr(tool_schemas, "_LIVE_LIMIT", 1)
    cache = ToolSchemaCache()
    first = cache.live_entry(one)
    assert cache.live_entry(one) is first and cache.hits == 1
    cache.live_entry(two)  # over the limit: the memo starts afresh
    assert cache.live_entry(one) is not first and cache.misses == 3
