"""A template plus bound params, expanded sections and an overrides source.

``Prompt`` is immutable: ``bind`` and ``with_expanded`` return new prompts, so
a prompt can be shared between evaluations and threads without surprises.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from types import MappingProxyType
from typing import TYPE_CHECKING, Generic, TypeVar

import attrs

from ..errors import PromptRenderError
from .keys import normalize_key
from .output import OutputT
from .render import render_template

if TYPE_CHECKING:
    from ..session import Session
    from .descriptor import PromptDescriptor
    from .overrides import OverridesStore, PromptOverrides
    from .prompt_template import PromptTemplate
    from .rendered import RenderedPrompt

__all__ = ["Prompt"]

T = TypeVar("T")


def _to_tag(value: str) -> str:
    return normalize_key(value, what="overrides tag")


def _frozen_bindings(value: Mapping[type[object], object]) -> Mapping[type[object], object]:
    return MappingProxyType(dict(value))


@attrs.frozen(eq=False)
class Prompt(Generic[OutputT]):
    """What gets rendered: ``Prompt(template).bind(params...).render(session)``.

    ``overrides_store`` (optional) is read on every render for the overrides of
    (``template.ns``, ``template.key``, ``tag``).
    """

    template: PromptTemplate[OutputT]
    overrides_store: OverridesStore | None = None
    tag: str = attrs.field(default="latest", converter=_to_tag)
    _bindings: Mapping[type[object], object] = attrs.field(
        factory=dict[type[object], object],
        converter=_frozen_bindings,
        kw_only=True,
        alias="bindings",
        repr=False,
    )
    _expanded: frozenset[str] = attrs.field(factory=frozenset[str], kw_only=True, alias="expanded")

    @property
    def ns(self) -> str:
        return self.template.ns

    @property
    def key(self) -> str:
        return self.template.key

    @property
    def descriptor(self) -> PromptDescriptor:
        return self.template.descriptor

    @property
    def expanded(self) -> frozenset[str]:
        """Summarized sections this prompt renders in full."""
        return self._expanded

    def bind(self, *params: object) -> Prompt[OutputT]:
        """A new prompt with ``params`` bound to every section using their type.

        Each value goes to the sections whose params type is exactly its type
        (or, failing that, the single declared type it is an instance of).
        Binding a type again replaces the earlier value in the new prompt.
        """
        accepted = self.template.params_types
        updates: dict[type[object], object] = {}
        for value in params:
            target = self._params_type_for(value, accepted)
            if target in updates:
                raise PromptRenderError(
                    f"prompt {self.ns}/{self.key}: bind() got two {target.__qualname__} values"
                )
            updates[target] = value
        return attrs.evolve(self, bindings={**self._bindings, **updates})

    def _params_type_for(self, value: object, accepted: frozenset[type[object]]) -> type[object]:
        exact = type(value)
        if exact in accepted:
            return exact
        matches = sorted((tp for tp in accepted if isinstance(value, tp)), key=lambda tp: tp.__qualname__)
        if len(matches) == 1:
            return matches[0]
        names = ", ".join(sorted(tp.__qualname__ for tp in accepted)) or "none"
        if matches:
            raise PromptRenderError(
                f"prompt {self.ns}/{self.key}: a {exact.__qualname__} matches several section params "
                f"types ({', '.join(tp.__qualname__ for tp in matches)}); bind an instance of exactly one"
            )
        raise PromptRenderError(
            f"prompt {self.ns}/{self.key}: no section takes {exact.__qualname__} params "
            f"(params types used by its sections: {names})"
        )

    def params(self, params_type: type[T]) -> T | None:
        """The value bound for ``params_type``, if any."""
        value = self._bindings.get(params_type)
        return value if isinstance(value, params_type) else None

    def with_expanded(self, keys: Iterable[str]) -> Prompt[OutputT]:
        """A new prompt that also renders the summarized sections ``keys`` in full.

        This is how the evaluation loop answers ``VisibilityExpansionRequired``:
        ``prompt = prompt.with_expanded(exc.section_keys)`` and render again.
        """
        return attrs.evolve(self, expanded=self._expanded | self._check_keys(keys))

    def _check_keys(self, keys: Iterable[str]) -> frozenset[str]:
        wanted = frozenset(keys)
        known = self.template.summary_keys
        unknown = sorted(wanted - known.keys())
        if unknown:
            raise PromptRenderError(
                f"prompt {self.ns}/{self.key}: cannot expand unknown section key(s) {', '.join(unknown)} "
                f"(sections with a summary: {', '.join(sorted(known)) or 'none'})"
            )
        return wanted

    def load_overrides(self) -> PromptOverrides | None:
        """The overrides this prompt would apply now (``None`` without a store)."""
        if self.overrides_store is None:
            return None
        return self.overrides_store.load(self.ns, self.key, self.tag)

    def render(
        self, session: Session | None = None, *, expanded: Iterable[str] = ()
    ) -> RenderedPrompt[OutputT]:
        """Render with the bound params; ``expanded`` adds keys to :attr:`expanded` for this call.

        Raises :class:`PromptRenderError` when an enabled section has neither
        bound nor default params.
        """
        keys = self._expanded | self._check_keys(expanded) if expanded else self._expanded
        return render_template(
            self.template,
            bindings=self._bindings,
            session=session,
            expanded=keys,
            overrides=self.load_overrides(),
        )
