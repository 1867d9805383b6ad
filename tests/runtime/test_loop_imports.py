"""Importing what an agent needs loads no database code; the store loads on first use."""

from __future__ import annotations

import importlib
import json
import pkgutil
import subprocess
import sys

import pytest

AGENT_IMPORTS = (
    "weakprompt.prompt",
    "weakprompt.tools",
    "weakprompt.session",
    "weakprompt.runtime",
    "weakprompt.adapters.testing",
    "weakprompt.model",
    "weakprompt.agent",
)
HEAVY = ("sqlalchemy", "weakprompt.store", "weakprompt.transcript.transcript", "weakprompt.runtime.results")


def loaded_after(code: str) -> list[str]:
    script = f"import json, sys\n{code}\nprint(json.dumps([m for m in {HEAVY!r} if m in sys.modules]))"
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True)
    found: list[str] = json.loads(done.stdout)
    return found


def test_agent_imports_do_not_load_the_store() -> None:
    assert loaded_after("\n".join(f"import {m}" for m in AGENT_IMPORTS)) == []


def test_agent_imports_do_not_even_load_the_transcript_package() -> None:
    code = "\n".join(f"import {m}" for m in AGENT_IMPORTS if not m.startswith("weakprompt.transcript"))
    code += "\nassert 'weakprompt.transcript' not in sys.modules, 'the transcript package was imported'"
    assert loaded_after(code) == []


def test_the_transcript_and_the_store_load_when_used() -> None:
    code = "from weakprompt.transcript import ACTIVE_TOOLS, Transcript\nassert Transcript.__name__"
    assert loaded_after(code) == ["sqlalchemy", "weakprompt.store", "weakprompt.transcript.transcript"]
    run = (
        "from weakprompt.adapters.testing import ScriptedAdapter\n"
        "from weakprompt.prompt import MarkdownSection, Prompt, PromptTemplate\n"
        "from weakprompt.runtime import evaluate\n"
        "from weakprompt.session import Session\n"
        "section = MarkdownSection(title='T', key='t', template='x')\n"
        "prompt = Prompt(PromptTemplate(ns='t', key='k', sections=[section]))\n"
        "assert evaluate(prompt, adapter=ScriptedAdapter(['ok']), session=Session()).text == 'ok'"
    )
    assert loaded_after(run) == list(HEAVY)


def test_unknown_names_still_fail_like_a_normal_module() -> None:
    code = (
        "import weakprompt.transcript as t\n"
        "try:\n    t.NoSuchThing\nexcept AttributeError as exc:\n    assert 'NoSuchThing' in str(exc)\n"
        "else:\n    raise SystemExit('no AttributeError')"
    )
    assert loaded_after(code) == []


def test_agent_imports_leave_what_a_first_agent_does_not_use_unloaded() -> None:
    """Paths, temp files, UUIDs, decimals and the provider adapters load when something uses them."""
    unused = (
        "pathlib",
        "tempfile",
        "uuid",
        "decimal",
        "weakprompt.adapters.local",
        "weakprompt.adapters.openai",
        "weakprompt.adapters.anthropic",
        "weakprompt.resources._host_fs",
    )
    script = "import json, sys\n" + "\n".join(f"import {m}" for m in AGENT_IMPORTS)
    script += f"\nprint(json.dumps([m for m in {unused!r} if m in sys.modules]))"
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True)
    assert json.loads(done.stdout) == []


def test_types_of_modules_loaded_later_still_dump_and_parse() -> None:
    script = (
        "from dataclasses import dataclass\n"
        "from weakprompt.serde import dump, parse, schema\n"
        "from weakprompt.adapters import ScriptedAdapter, LocalAdapter\n"
        "from weakprompt.resources import HostFilesystem\n"
        "import decimal, pathlib, uuid\n"
        "@dataclass\n"
        "class Row:\n"
        "    where: pathlib.Path\n"
        "    amount: decimal.Decimal\n"
        "    id: uuid.UUID\n"
        "row = Row(pathlib.Path('/tmp/x'), decimal.Decimal('1.5'), uuid.UUID(int=7))\n"
        "data = dump(row)\n"
        "assert data == {'where': '/tmp/x', 'amount': '1.5', 'id': str(uuid.UUID(int=7))}, data\n"
        "assert parse(Row, data) == row\n"
        "assert schema(Row)['properties']['id']['format'] == 'uuid'\n"
        "assert ScriptedAdapter.__name__ and LocalAdapter.__name__ and HostFilesystem.__name__\n"
    )
    subprocess.run([sys.executable, "-c", script], check=True)


def test_lazy_packages_still_refuse_unknown_names_and_list_their_own() -> None:
    import weakprompt.adapters as adapters
    import weakprompt.resources as resources

    for package in (adapters, resources):
        try:
            package.NoSuchThing  # type: ignore[attr-defined]
        except AttributeError as exc:
            assert "NoSuchThing" in str(exc)
        else:  # pragma: no cover - the assertion below reports it
            raise AssertionError(f"{package.__name__} invented an attribute")
    assert "LocalAdapter" in dir(adapters) and adapters.FunctionAdapter.__name__ == "FunctionAdapter"
    assert resources.HostFilesystem.__name__ == "HostFilesystem"


# What the agent imports leave for first use: the event loop, OpenSSL's hashes, the worker pool, and
# the modules of features a plain run never uses (pausing and deciding, streaming and run events,
# provider retries, extraction and summary events, prompt overrides, persisted session state, the
# in-memory filesystem).
LOADED_ON_FIRST_USE = (
    "asyncio",
    "hashlib",
    "random",
    "concurrent.futures.thread",
    "sqlalchemy",
    "weakprompt.runtime.approval",
    "weakprompt.runtime.pause_events",
    "weakprompt.runtime.pausing",
    "weakprompt.runtime.resumption",
    "weakprompt.runtime.decision_checks",
    "weakprompt.runtime.streaming",
    "weakprompt.runtime.run_events",
    "weakprompt.events._provider",
    "weakprompt.events._output_events",
    "weakprompt.events._pause",
    "weakprompt.prompt.overrides",
    "weakprompt.session._persist",
    "weakprompt.resources._memory_fs",
)
# Packages whose __init__ resolves some of its public names on first access (PEP 562).
LAZY_PACKAGES = (
    "weakprompt.adapters",
    "weakprompt.events",
    "weakprompt.prompt",
    "weakprompt.resources",
    "weakprompt.runtime",
    "weakprompt.session",
)


def _loaded(code: str, names: tuple[str, ...]) -> list[str]:
    script = f"import json, sys\n{code}\nprint(json.dumps([m for m in {names!r} if m in sys.modules]))"
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True)
    found: list[str] = json.loads(done.stdout)
    return found


def test_agent_imports_leave_what_only_some_runs_use_for_first_use() -> None:
    imports = "\n".join(f"import {m}" for m in AGENT_IMPORTS)
    assert _loaded(imports, LOADED_ON_FIRST_USE) == []


def test_each_of_those_loads_when_its_feature_is_used() -> None:
    """The probe above can see them: using the features loads every one."""
    code = (
        "\n".join(f"import {m}" for m in AGENT_IMPORTS)
        + "\nfrom weakprompt.runtime import Approve, RunPaused, TextDelta, stream, resume_sync"
        + "\nfrom weakprompt.runtime import pausing"
        + "\nfrom weakprompt.events import ModelCallRetried, ToolOutputExtracted"
        + "\nfrom weakprompt.session import persist_state"
        + "\nfrom weakprompt.prompt import PromptOverrides"
        + "\nfrom weakprompt.resources import InMemoryFilesystem"
        + "\nfrom weakprompt.canonical import content_hash; content_hash({})"
        + "\nfrom weakprompt.events import new_event_id; new_event_id()"
        + "\nfrom weakprompt.transcript import Transcript"
        + "\nfrom weakprompt.runtime._store_work import StoreWork; StoreWork(inline=False).close()"
    )
    assert _loaded(code, LOADED_ON_FIRST_USE) == list(LOADED_ON_FIRST_USE)


def _lazy_table(package: str) -> dict[str, str]:
    table: dict[str, str] = getattr(importlib.import_module(package), "_LAZY")
    return table


@pytest.mark.parametrize("package", LAZY_PACKAGES)
def test_lazy_names_are_public_and_are_their_modules_objects(package: str) -> None:
    module = importlib.import_module(package)
    table = _lazy_table(package)
    assert table, f"{package} resolves nothing lazily"
    assert set(table) <= set(module.__all__)
    for name, where in table.items():
        assert getattr(module, name) is getattr(importlib.import_module(where, package), name), name
    # every public name resolves, eager or lazy, and dir() lists exactly them
    for name in module.__all__:
        assert hasattr(module, name), f"{package}.{name}"
    assert dir(module) == sorted(module.__all__)


@pytest.mark.parametrize("package", LAZY_PACKAGES)
def test_no_lazy_name_is_also_a_submodule_name(package: str) -> None:
    """Importing a submodule sets it on its package: a lazy name spelled the same would be shadowed."""
    path = importlib.import_module(package).__path__
    submodules = {info.name for info in pkgutil.iter_modules(path)}
    assert not submodules & set(_lazy_table(package))


def test_lazy_names_survive_their_modules_being_imported_first() -> None:
    """Whatever imported a defining module before, the package still gives the name's object."""
    checks = "\n".join(
        f"import {package}\n"
        f"for name, where in {package}._LAZY.items():\n"
        f"    module = importlib.import_module(where, {package!r})\n"
        f"    assert getattr({package}, name) is getattr(module, name), ({package!r}, name)\n"
        for package in LAZY_PACKAGES
    )
    code = "import importlib\nimport weakprompt.runtime.resume, weakprompt.runtime.streaming\n" + checks
    subprocess.run([sys.executable, "-c", code], check=True)


@pytest.mark.parametrize("package", LAZY_PACKAGES)
def test_lazy_packages_refuse_names_they_do_not_have(package: str) -> None:
    module = importlib.import_module(package)
    with pytest.raises(AttributeError, match=f"module '{package}' has no attribute 'NoSuchThing'"):
        getattr(module, "NoSuchThing")
