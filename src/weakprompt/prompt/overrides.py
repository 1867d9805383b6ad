"""Prompt overrides: replacement section bodies and tool descriptions, kept on disk.

Each override carries the hash of the text it was written against (see
:mod:`.descriptor`). The renderer applies it only while that hash still
matches, so editing a template can never be silently undone by an old override.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Mapping
from types import MappingProxyType
from typing import TYPE_CHECKING, Protocol, runtime_checkable

import attrs

from ..errors import PromptRenderError, PromptValidationError
from ..jsontypes import JSONObject, JSONValue
from .keys import KEY_PATTERN, validate_ns

if TYPE_CHECKING:
    from pathlib import Path

__all__ = [
    "FORMAT_VERSION",
    "LocalOverridesStore",
    "OverridesStore",
    "PromptOverrides",
    "SectionOverride",
    "ToolOverride",
    "validate_ns",
]

FORMAT_VERSION = 1
_VERSION_FILE = re.compile(r"^v(\d{6})\.json$")


def _frozen_strings(value: Mapping[str, str]) -> Mapping[str, str]:
    return MappingProxyType(dict(value))


@attrs.frozen
class SectionOverride:
    """Replace one section's template by ``body`` while its hash is ``expected_hash``."""

    expected_hash: str
    body: str


@attrs.frozen
class ToolOverride:
    """Replace a tool's description and/or individual parameter descriptions."""

    name: str
    expected_hash: str
    description: str | None = None
    param_descriptions: Mapping[str, str] = attrs.field(
        factory=dict[str, str], converter=_frozen_strings, hash=False
    )


def _frozen_sections(value: Mapping[str, SectionOverride]) -> Mapping[str, SectionOverride]:
    return MappingProxyType(dict(value))


def _frozen_tools(value: Mapping[str, ToolOverride]) -> Mapping[str, ToolOverride]:
    return MappingProxyType(dict(value))


@attrs.frozen
class PromptOverrides:
    """All overrides for one (ns, key, tag); sections are keyed by ``parent/child`` path."""

    ns: str
    key: str
    tag: str = "latest"
    sections: Mapping[str, SectionOverride] = attrs.field(
        factory=dict[str, SectionOverride], converter=_frozen_sections, hash=False
    )
    tools: Mapping[str, ToolOverride] = attrs.field(
        factory=dict[str, ToolOverride], converter=_frozen_tools, hash=False
    )

    def to_json(self) -> JSONObject:
        """The on-disk document (format version included)."""
        sections: JSONObject = {
            path: {"expected_hash": o.expected_hash, "body": o.body} for path, o in self.sections.items()
        }
        tools: JSONObject = {}
        for name, o in self.tools.items():
            params: JSONObject = dict(o.param_descriptions)
            tools[name] = {
                "expected_hash": o.expected_hash,
                "description": o.description,
                "param_descriptions": params,
            }
        return {
            "format": FORMAT_VERSION,
            "ns": self.ns,
            "key": self.key,
            "tag": self.tag,
            "sections": sections,
            "tools": tools,
        }

    @classmethod
    def from_json(cls, data: JSONValue, *, source: str = "<data>") -> PromptOverrides:
        """Parse a document written by :meth:`to_json`; errors name ``source`` and the field."""
        reader = _Reader(source)
        root = reader.obj(data, "$")
        fmt = root.get("format")
        if fmt != FORMAT_VERSION:
            raise reader.fail("$.format", f"unsupported format {fmt!r} (expected {FORMAT_VERSION})")
        sections: dict[str, SectionOverride] = {}
        for path, raw in reader.obj(root.get("sections", {}), "$.sections").items():
            where = f"$.sections[{path!r}]"
            entry = reader.obj(raw, where)
            sections[path] = SectionOverride(
                expected_hash=reader.text(entry.get("expected_hash"), f"{where}.expected_hash"),
                body=reader.text(entry.get("body"), f"{where}.body"),
            )
        tools: dict[str, ToolOverride] = {}
        for name, raw in reader.obj(root.get("tools", {}), "$.tools").items():
            where = f"$.tools[{name!r}]"
            entry = reader.obj(raw, where)
            description = entry.get("description")
            params = reader.obj(entry.get("param_descriptions", {}), f"{where}.param_descriptions")
            tools[name] = ToolOverride(
                name=name,
                expected_hash=reader.text(entry.get("expected_hash"), f"{where}.expected_hash"),
                description=None if description is None else reader.text(description, f"{where}.description"),
                param_descriptions={
                    param: reader.text(text, f"{where}.param_descriptions[{param!r}]")
                    for param, text in params.items()
                },
            )
        return cls(
            ns=reader.text(root.get("ns"), "$.ns"),
            key=reader.text(root.get("key"), "$.key"),
            tag=reader.text(root.get("tag"), "$.tag"),
            sections=sections,
            tools=tools,
        )


@attrs.frozen
class _Reader:
    """Type checks for override documents, raising with the file and JSON path."""

    source: str

    def fail(self, where: str, problem: str) -> PromptRenderError:
        return PromptRenderError(f"overrides file {self.source}: {where}: {problem}")

    def obj(self, value: JSONValue, where: str) -> dict[str, JSONValue]:
        if not isinstance(value, dict):
            raise self.fail(where, f"expected an object, got {type(value).__name__}")
        return value

    def text(self, value: JSONValue, where: str) -> str:
        if not isinstance(value, str):
            raise self.fail(where, f"expected a string, got {type(value).__name__}")
        return value


@runtime_checkable
class OverridesStore(Protocol):
    """Where a :class:`~weakprompt.prompt.Prompt` looks for its overrides."""

    def load(self, ns: str, key: str, tag: str) -> PromptOverrides | None:
        """The newest overrides for (ns, key, tag), or ``None`` when there are none."""
        ...

    def save(self, overrides: PromptOverrides) -> Path:
        """Store ``overrides`` as a new version and return where it went."""
        ...


def _as_path(value: str | os.PathLike[str]) -> Path:
    # pathlib (and tempfile, below) load when a local store is made, not when prompts are imported
    from pathlib import Path

    return Path(value)


@attrs.frozen
class LocalOverridesStore:
    """Versioned JSON files: ``root/<ns>/<key>/<tag>/v000001.json``, ``v000002.json``, ...

    Saving never rewrites an existing version (each save adds the next file,
    written to a temporary name first), so a crash cannot corrupt history and
    older versions stay readable with ``load(..., version=n)``.
    """

    root: Path = attrs.field(converter=_as_path)

    def folder(self, ns: str, key: str, tag: str) -> Path:
        """The folder holding every version for (ns, key, tag)."""
        validate_ns(ns)
        for what, value in (("key", key), ("tag", tag)):
            if not KEY_PATTERN.match(value):
                raise PromptValidationError(f"overrides {what} {value!r} must match {KEY_PATTERN.pattern}")
        return self.root.joinpath(*ns.split("/"), key, tag)

    def versions(self, ns: str, key: str, tag: str) -> tuple[int, ...]:
        """Stored version numbers, oldest first."""
        folder = self.folder(ns, key, tag)
        if not folder.is_dir():
            return ()
        found = (_VERSION_FILE.match(entry.name) for entry in folder.iterdir())
        return tuple(sorted(int(match.group(1)) for match in found if match))

    def load(self, ns: str, key: str, tag: str, *, version: int | None = None) -> PromptOverrides | None:
        """Read the newest (or the given) version; ``None`` if nothing is stored."""
        versions = self.versions(ns, key, tag)
        if version is None:
            if not versions:
                return None
            version = versions[-1]
        elif version not in versions:
            raise PromptRenderError(
                f"overrides for {ns}/{key}@{tag} have no version {version} (stored: {list(versions)})"
            )
        path = self.folder(ns, key, tag) / f"v{version:06d}.json"
        try:
            data: JSONValue = json.loads(path.read_text(encoding="utf-8"))
        except (json.JSONDecodeError, UnicodeDecodeError) as exc:
            raise PromptRenderError(f"overrides file {path} is not valid JSON: {exc}") from exc
        overrides = PromptOverrides.from_json(data, source=str(path))
        if (overrides.ns, overrides.key, overrides.tag) != (ns, key, tag):
            raise PromptRenderError(
                f"overrides file {path} is for {overrides.ns}/{overrides.key}@{overrides.tag}, "
                f"not {ns}/{key}@{tag}"
            )
        return overrides

    def save(self, overrides: PromptOverrides) -> Path:
        folder = self.folder(overrides.ns, overrides.key, overrides.tag)
        folder.mkdir(parents=True, exist_ok=True)
        payload = json.dumps(overrides.to_json(), indent=2, sort_keys=True, ensure_ascii=False) + "\n"
        import tempfile

        fd, tmp_name = tempfile.mkstemp(dir=folder, prefix=".tmp-", suffix=".json")
        tmp = _as_path(tmp_name)
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as handle:
                handle.write(payload)
                handle.flush()
                os.fsync(handle.fileno())
            while True:
                versions = self.versions(overrides.ns, overrides.key, overrides.tag)
                target = folder / f"v{(versions[-1] if versions else 0) + 1:06d}.json"
                try:
                    os.link(tmp, target)  # fails instead of clobbering a concurrent writer's version
                except FileExistsError:
                    continue
                return target
        finally:
            tmp.unlink(missing_ok=True)
