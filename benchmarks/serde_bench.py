"""serde benchmark: ``parse`` cost per call against a hand-written floor.

The floor is what any JSON tool call must pay anyway: ``json.loads`` of the
arguments text plus constructing the dataclass by hand. ``parse`` is measured
the same way (``json.loads`` + ``parse``) in the same run, so the ratio is
machine-independent. Peers (cattrs ``structure``, which converts without our
strict validation, and pydantic's strict ``TypeAdapter``) are reported when
importable. Schema generation is timed
cold (first call for a type) and cached.

Floor, parse and peers are measured interleaved (one repeat of each in turn)
so load from other processes hits them alike. Run:
``python benchmarks/serde_bench.py [--quick]``; writes ``benchmarks/results/serde.json``.
"""

from __future__ import annotations

import dataclasses
import json
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from harness import interleaved, run_cli

from weakprompt.serde import parse, schema


@dataclasses.dataclass(frozen=True)
class Search:
    query: str
    limit: int
    exact: bool


@dataclasses.dataclass(frozen=True)
class Item:
    name: str
    sku: str
    count: int
    price: float
    taxable: bool
    weight: float
    aisle: int
    label: str
    fragile: bool
    note: str


@dataclasses.dataclass(frozen=True)
class Order:
    items: list[Item]


SMALL_TEXT = json.dumps({"query": "weather in Paris", "limit": 5, "exact": False})
_ITEM = {
    "name": "lamp",
    "sku": "L-204",
    "count": 2,
    "price": 19.5,
    "taxable": True,
    "weight": 1.25,
    "aisle": 7,
    "label": "home",
    "fragile": False,
    "note": "",
}
LARGE_TEXT = json.dumps({"items": [dict(_ITEM, aisle=index) for index in range(5)]})  # 50 leaves


def floor_small() -> Search:
    data = json.loads(SMALL_TEXT)
    return Search(query=data["query"], limit=data["limit"], exact=data["exact"])


def ours_small() -> Search:
    return parse(Search, json.loads(SMALL_TEXT))


def floor_large() -> Order:
    data = json.loads(LARGE_TEXT)
    return Order(
        items=[
            Item(
                name=item["name"],
                sku=item["sku"],
                count=item["count"],
                price=item["price"],
                taxable=item["taxable"],
                weight=item["weight"],
                aisle=item["aisle"],
                label=item["label"],
                fragile=item["fragile"],
                note=item["note"],
            )
            for item in data["items"]
        ]
    )


def ours_large() -> Order:
    return parse(Order, json.loads(LARGE_TEXT))


Case = Callable[[], object]


def _peers() -> tuple[dict[str, tuple[Case, Case]], dict[str, str]]:
    peers: dict[str, tuple[Case, Case]] = {}
    versions: dict[str, str] = {}
    try:
        from importlib.metadata import version

        import cattrs
    except ImportError:  # pragma: no cover - cattrs is a core dependency
        return peers, versions
    converter = cattrs.Converter()
    peers["cattrs.structure (no strict checks)"] = (
        lambda: converter.structure(json.loads(SMALL_TEXT), Search),
        lambda: converter.structure(json.loads(LARGE_TEXT), Order),
    )
    versions["cattrs"] = version("cattrs")
    try:
        import pydantic
    except ImportError:
        versions["pydantic"] = "not installed (bench extra)"
        return peers, versions
    small_adapter = pydantic.TypeAdapter(Search)
    large_adapter = pydantic.TypeAdapter(Order)
    # validate_json reads the text itself (in Rust), so it replaces json.loads too.
    peers["pydantic validate_json, strict"] = (
        lambda: small_adapter.validate_json(SMALL_TEXT, strict=True),
        lambda: large_adapter.validate_json(LARGE_TEXT, strict=True),
    )
    versions["pydantic"] = version("pydantic")
    return peers, versions


def _schema_cold_us(repeats: int) -> float:
    """First ``schema()`` call for a type never seen before (a fresh class each time)."""
    cold: list[float] = []
    for index in range(repeats):
        fresh = dataclasses.make_dataclass(
            f"Fresh{index}", [(field.name, field.type) for field in dataclasses.fields(Item)]
        )
        holder = dataclasses.make_dataclass(f"Holder{index}", [("items", list[fresh])])  # type: ignore[valid-type]
        start = time.perf_counter()
        schema(holder)
        cold.append((time.perf_counter() - start) * 1e6)
    return statistics.median(cold)


def main(quick: bool) -> dict[str, Any]:
    repeats = 7 if quick else 21
    assert ours_small() == floor_small() and ours_large() == floor_large()
    peers, versions = _peers()
    rows: list[dict[str, object]] = []
    ratios: dict[str, float] = {}
    bars: dict[str, float] = {}
    for label, floor, ours, peer_index, number in (
        ("3-field object", floor_small, ours_small, 0, 5_000 if quick else 20_000),
        ("50-leaf nested object", floor_large, ours_large, 1, 500 if quick else 2_000),
    ):
        cases: dict[str, Case] = {"floor": floor, "parse": ours}
        cases.update({name: funcs[peer_index] for name, funcs in peers.items()})
        stats = interleaved(cases, number=number, repeats=repeats)
        base = stats["floor"]
        ratios[label] = stats["parse"].ratio_to(base)
        rows.append(base.as_row(f"{label}: floor (json.loads + hand-built dataclass)", x_floor=1.0))
        rows.append(
            stats["parse"].as_row(
                f"{label}: json.loads + serde.parse", x_floor=round(stats["parse"].ratio_to(base), 2)
            )
        )
        bars[f"parse, {label}"] = ratios[label]
        for name in peers:
            rows.append(
                stats[name].as_row(f"{label}: peer {name}", x_floor=round(stats[name].ratio_to(base), 2))
            )
    cached = interleaved({"schema": lambda: schema(Order)}, number=2_000, repeats=repeats)["schema"]
    cold_us = _schema_cold_us(repeats)
    rows.append(cached.as_row("schema(Order), cached (returns a fresh copy)"))
    rows.append({"case": "schema(new type), first call", "median_us": round(cold_us, 1)})
    small = ratios["3-field object"]
    return {
        "title": "serde: parse vs a hand-written floor",
        "rows": rows,
        "goals": [
            {
                "goal": "parse of a 3-field object <= 3x floor (json.loads + hand construction)",
                "met": small <= 3.0,
                "value": f"{small:.2f}x",
            },
            {
                "goal": "schema generation cached per type",
                "met": cached.median_us < cold_us,
                "value": f"cached {cached.median_us:.1f} us vs first call {cold_us:.0f} us",
            },
        ],
        "peers": versions,
        "notes": [
            "Both sides include json.loads of the same text; the floor then reads three (or fifty) keys "
            "and calls the constructor, parse also checks every type, forbids unknown keys and would "
            "report every problem with its path.",
            'cattrs is shown for scale: its default structure hooks convert ("3" becomes 3) rather '
            "than validate, so it does less work than parse.",
            f"50-leaf object: parse is {ratios['50-leaf nested object']:.2f}x its floor.",
        ],
        "charts": [
            {
                "kind": "bar",
                "title": "serde.parse cost as a multiple of the floor (lower is better)",
                "ylabel": "x floor",
                "bars": bars,
                "file": "serde.png",
            }
        ],
    }


if __name__ == "__main__":
    run_cli(main, name="serde", description=__doc__, quick_help="fewer repeats (well under 20 s)")
