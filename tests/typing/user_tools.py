"""Tools built with the Tool(...) constructor and with @tool, in both handler forms."""

from __future__ import annotations

from dataclasses import dataclass
from typing import assert_type

import attrs

from weakprompt import Tool, ToolArguments, ToolContext, ToolResult, tool


@dataclass(frozen=True)
class Lookup:
    city: str


@attrs.frozen
class AttrsLookup:
    city: str


@dataclass(frozen=True)
class Cost:
    euros: float


def lookup_cost(params: Lookup, *, context: ToolContext) -> ToolResult[Cost]:
    return ToolResult.ok(Cost(80.0))


# -- the constructor infers Tool[P, R] from the handler --------------------------------------

built = Tool(name="lookup_cost", description="Cost of a night.", handler=lookup_cost)
assert_type(built, Tool[Lookup, Cost])
explicit = Tool(
    name="lookup_cost",
    description="Cost of a night.",
    handler=lookup_cost,
    params_type=Lookup,
    result_type=Cost,
)
assert_type(explicit, Tool[Lookup, Cost])
# an explicit params type that does not fit the handler is caught
mismatch = Tool(name="x", description="d", handler=lookup_cost, params_type=AttrsLookup)  # pyright: ignore[reportArgumentType]


# -- @tool with one params object -------------------------------------------------------------


@tool
def by_dataclass(params: Lookup, *, context: ToolContext) -> ToolResult[Cost]:
    """Cost of a night."""
    return ToolResult.ok(Cost(80.0))


assert_type(by_dataclass, Tool[Lookup, Cost])


@tool(name="by-attrs", description="Cost of a night.")
def by_attrs(params: AttrsLookup) -> ToolResult[Cost]:  # the context may be left out
    return ToolResult.ok(Cost(80.0))


assert_type(by_attrs, Tool[AttrsLookup, Cost])


# -- @tool with plain parameters ------------------------------------------------------------


@tool
def city_cost(city: str, nights: int = 1, *, context: ToolContext) -> ToolResult[Cost]:
    """Cost of a stay in a city.

    Args:
        city: City name.
        nights: How many nights.
    """
    return ToolResult.ok(Cost(80.0 * nights))


assert_type(city_cost, Tool[ToolArguments, Cost])


@tool(description="Say hello.")
def hello(name: str) -> ToolResult[None]:
    return ToolResult.ok(None)


assert_type(hello, Tool[ToolArguments, None])
assert_type(hello.result_type, type[None] | None)

# -- handlers may return plain values: the value is the R of Tool[P, R] ---------------------


@tool
def forecast(city: str) -> str:
    """Forecast for a city."""
    return f"sunny in {city}"


assert_type(forecast, Tool[ToolArguments, str])


@tool
def cost_of(params: Lookup, *, context: ToolContext) -> Cost:
    """Cost of a night."""
    return Cost(80.0)


assert_type(cost_of, Tool[Lookup, Cost])


@tool(description="Cost of a night.")
async def cost_later(params: AttrsLookup) -> Cost:
    return Cost(80.0)


assert_type(cost_later, Tool[AttrsLookup, Cost])


@tool
async def totals(city: str, *, context: ToolContext) -> dict[str, float]:
    """Totals for a city."""
    return {city: 80.0}


assert_type(totals, Tool[ToolArguments, dict[str, float]])


@tool
def forget(city: str) -> None:
    """Forget a city."""


assert_type(forget, Tool[ToolArguments, None])


@tool
def cost_or_refusal(params: Lookup) -> ToolResult[Cost] | Cost:
    """Cost of a night, or why not."""
    if not params.city:
        return ToolResult.error("which city?")
    return Cost(80.0)


assert_type(cost_or_refusal, Tool[Lookup, Cost])

plain_handler_tool = Tool(name="cost_of", description="Cost of a night.", handler=cost_of.handler)
assert_type(plain_handler_tool, Tool[Lookup, Cost])
