"""The replay benchmark's checks as a plain test: 30 seeded mutations are each named by the report.

No timing is asserted: the speed is the benchmark's business (``benchmarks/replay_bench.py``).
"""

from __future__ import annotations

import importlib.util
import sys
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType

import pytest

from weakprompt import Store
from weakprompt.replay import replay_sync

BENCHMARKS = Path(__file__).resolve().parents[2] / "benchmarks"


@pytest.fixture(scope="module")
def bench() -> Iterator[ModuleType]:
    sys.path.insert(0, str(BENCHMARKS))
    spec = importlib.util.spec_from_file_location("replay_bench", BENCHMARKS / "replay_bench.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    try:
        spec.loader.exec_module(module)
        yield module
    finally:
        sys.modules.pop(spec.name, None)


def test_every_one_of_30_seeded_mutations_is_named_by_the_report(bench: ModuleType, tmp_path: Path) -> None:
    with Store.open(tmp_path / "r.db") as store:
        bench.record_sessions(store, 4, seconds=0)
        checked = bench.mutation_check(store, [f"s{i}" for i in range(4)])
    kinds = [mutation.kind for mutation, _ in checked]
    assert {kind: kinds.count(kind) for kind in bench.KINDS} == {
        "section": 8,
        "description": 8,
        "schema": 7,
        "settings": 7,
    }
    assert {mutation.target for mutation, _ in checked if mutation.kind == "section"} >= {"shop/returns"}
    missed = [(m.kind, m.target) for m, named in checked if not named]
    assert missed == []


def test_recorded_sessions_replay_identically_with_no_provider_call(
    bench: ModuleType, tmp_path: Path
) -> None:
    with Store.open(tmp_path / "r.db") as store:
        bench.record_sessions(store, 3, seconds=0)
        before = bench.SlowModel.calls
        for index in range(3):
            assert replay_sync(store, f"s{index}", prompt=bench.shop_prompt()).identical
        assert bench.SlowModel.calls == before
    assert not bench.names_it(bench.mutations(1)[0], None)
