"""A section params field JSON cannot express is refused where the section is built (issue 30 item 6)."""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field

import attrs
import pytest

from weakprompt.errors import PromptValidationError
from weakprompt.prompt import MarkdownSection, Prompt, PromptTemplate


@dataclass(frozen=True)
class Hook:
    name: str
    on_done: Callable[[str], None]


@dataclass(frozen=True)
class TaskParams:
    topic: str
    hooks: list[Hook] = field(default_factory=list[Hook])
    flags: frozenset[str] = frozenset()


@attrs.frozen
class PatternParams:
    pattern: re.Pattern[str]


def test_a_section_params_field_json_cannot_express_is_refused_naming_its_path() -> None:
    with pytest.raises(PromptValidationError) as info:
        MarkdownSection(
            title="Task", key="task", template="About $topic, then $hooks.", params_type=TaskParams
        )
    message = str(info.value)
    assert message.startswith("section 'task' template: params field 'hooks[].on_done'")
    assert "Callable" in message and "cannot be expressed as JSON" in message


def test_default_params_and_summaries_are_checked_the_same_way() -> None:
    with pytest.raises(
        PromptValidationError, match=r"section 'rules' template: params field 'pattern' \(re\."
    ):
        MarkdownSection(
            title="Rules",
            key="rules",
            template="Match $pattern.",
            default_params=PatternParams(re.compile("x")),
        )
    with pytest.raises(PromptValidationError, match=r"section 'task' summary: params field 'flags'"):
        MarkdownSection(
            title="Task",
            key="task",
            template="About $topic.",
            summary="Flags $flags.",
            params_type=TaskParams,
        )


def test_fields_no_placeholder_names_may_hold_anything() -> None:
    section = MarkdownSection(
        title="Task",
        key="task",
        template="About $topic.",
        params_type=TaskParams,
        enabled=lambda params: "on" in params.flags,
    )
    prompt = Prompt(PromptTemplate(ns="t", key="p", sections=[section])).bind(
        TaskParams("cats", [Hook("h", print)], frozenset({"on"}))
    )
    assert "About cats." in prompt.render().text
