"""Importing what an agent needs loads no database code; the store loads on first use."""

from __future__ import annotations

import json
import subprocess
import sys

AGENT_IMPORTS = (
    "weakprompt.prompt",
    "weakprompt.tools",
    "weakprompt.session",
    "weakprompt.runtime",
    "weakprompt.adapters.testing",
    "weakprompt.model",
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
