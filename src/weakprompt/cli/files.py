"""``weakprompt run --files DIR``: a host directory as the run's Filesystem, with the file tools."""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

import attrs

from ..contrib.files import FilesSection
from ..errors import ConfigurationError
from ..resources import Filesystem, HostFilesystem, ResourceRegistry

if TYPE_CHECKING:
    from ..prompt import Prompt, Section

__all__ = ["has_files_section", "mount_files"]


def has_files_section(sections: Iterable[Section[Any]]) -> bool:
    """Whether a :class:`FilesSection` is among ``sections`` or their children."""
    return any(
        isinstance(section, FilesSection) or has_files_section(section.children) for section in sections
    )


def mount_files(
    prompt: Prompt[object], directory: str, *, writable: bool
) -> tuple[Prompt[object], ResourceRegistry]:
    """``prompt`` with a files section (unless it has one) and a registry holding ``directory``.

    A prompt that brings its own ``FilesSection`` keeps it, with its own
    choice of tools; the directory is only its filesystem then, and
    ``writable`` is refused rather than silently ignored. The section
    added here writes without asking for approval when ``writable``: the
    person who typed ``--files-writable`` has already decided.
    """
    resources = ResourceRegistry({Filesystem: HostFilesystem(directory)})
    if has_files_section(prompt.template.sections):
        if writable:
            raise ConfigurationError(
                "--files-writable: the prompt has its own Files section, which decides whether the "
                "writing tools are offered; drop --files-writable, or make that section writable"
            )
        return prompt, resources
    section = FilesSection(writable=writable, require_approval_for_writes=False)
    template = attrs.evolve(prompt.template, sections=(*prompt.template.sections, section))
    return attrs.evolve(prompt, template=template), resources
