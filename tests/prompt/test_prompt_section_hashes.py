"""Each rendered section carries its declared volatility and the hash of its own text."""

from __future__ import annotations

from dataclasses import dataclass

from weakprompt.prompt import MarkdownSection, Prompt, PromptTemplate


@dataclass(frozen=True)
class Status:
    step: str


def _render(step: str) -> dict[str, tuple[str, str]]:
    template = PromptTemplate[None](
        ns="tests",
        key="hashes",
        sections=[
            MarkdownSection(
                title="Role",
                key="role",
                template="You plan.",
                children=[
                    MarkdownSection[Status](
                        title="Status", key="status", template="Now: ${step}", params_type=Status
                    )
                ],
            ),
            MarkdownSection[Status](
                title="Plan",
                key="plan",
                template="Step ${step}",
                volatility="turn",
                default_params=Status("x"),
            ),
        ],
    )
    rendered = Prompt(template).bind(Status(step)).render()
    return {s.path_text: (s.volatility, s.text_hash) for s in rendered.sections}


def test_a_section_hash_changes_with_its_own_text_only() -> None:
    first, second = _render("one"), _render("two")
    assert first["role"] == second["role"]  # a child's change is not the parent's
    assert first["role/status"][1] != second["role/status"][1]
    assert first["plan"][0] == "turn" and first["role"][0] == "stable"
    assert all(len(hash_) == 64 for _, hash_ in first.values())
