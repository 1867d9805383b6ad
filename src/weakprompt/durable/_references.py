"""What a queued evaluation names: its prompt, its adapter, its session, by reference.

A durable evaluation must be restartable in another process, so it carries
no live objects: the prompt and the adapter are references resolved in the
worker, and everything else is JSON. Anyone who can write to the queue can
name any reference, so a worker resolves only what it declares it serves
(:class:`Served`); every other reference is refused before anything is
imported (``specs/DURABLE.md``, "Trust model").
"""

from __future__ import annotations

import importlib
import inspect
from collections.abc import Iterable, Mapping
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, cast

import attrs

from ..canonical import canonical_json, parse_canonical_json
from ..errors import ConfigurationError, WeakpromptError
from ..jsontypes import JSONObject, JSONValue
from ..prompt import Prompt

if TYPE_CHECKING:
    from ..model import ProviderAdapter

__all__ = ["DurableJobError", "EvaluationJob", "Served", "load_reference"]


class DurableJobError(WeakpromptError):
    """A queued evaluation cannot run as submitted (a bad reference, bad parameters, a bad job)."""


def _split(reference: str, what: str) -> tuple[str, list[str]]:
    module_name, colon, qualname = reference.partition(":")
    if not colon or not module_name or not qualname:
        raise DurableJobError(f"{what} reference {reference!r} is not of the form 'package.module:name'")
    return module_name, qualname.split(".")


def _import(reference: str, what: str, module_name: str) -> object:
    try:
        return importlib.import_module(module_name)
    except Exception as exc:  # the user's module failed: say which and why
        raise DurableJobError(
            f"{what} reference {reference!r}: importing module {module_name!r} failed: "
            f"{type(exc).__name__}: {exc}"
        ) from exc


def _attribute(found: object, part: str, reference: str, what: str) -> object:
    try:
        return getattr(found, part)
    except AttributeError:
        raise DurableJobError(
            f"{what} reference {reference!r}: {reference.partition(':')[0]!r} has no attribute "
            f"{reference.partition(':')[2]!r}"
        ) from None


def load_reference(reference: str, what: str) -> object:
    """The object ``reference`` (``package.module:name``, dotted names allowed after the colon) names.

    It imports whatever it is given: a worker resolves a job's references
    through :meth:`Served.resolve`, which refuses what it does not serve.
    """
    module_name, parts = _split(reference, what)
    found = _import(reference, what, module_name)
    for part in parts:
        found = _attribute(found, part, reference, what)
    return found


def _names(value: Mapping[str, object]) -> Mapping[str, object]:
    return MappingProxyType(dict(value))


def _modules(value: Iterable[str]) -> tuple[str, ...]:
    modules = tuple(value)
    for prefix in modules:
        if not all(part.isidentifier() for part in prefix.split(".")):
            raise ConfigurationError(f"served module prefix {prefix!r} is not a dotted module name")
    return modules


@attrs.frozen
class Served:
    """What a worker runs: the prompts and adapters queued jobs may name.

    ``names`` maps a name a job may give to the object it stands for (a
    ``Prompt``, an adapter, or a factory of either): resolved without any
    import. ``modules`` are module prefixes, matched by whole dotted
    components (``support`` serves ``support`` and ``support.agents``, not
    ``supportx``): a reference ``module:name`` under one is imported. Any
    other reference is refused before anything is imported, as is a public
    name that reaches through another module (``support:os.system``) or a
    function or class defined outside the served modules (``support:getoutput``
    after ``from subprocess import getoutput``). The default serves nothing.
    """

    names: Mapping[str, object] = attrs.field(factory=dict[str, object], converter=_names)
    modules: tuple[str, ...] = attrs.field(default=(), converter=_modules)

    def serves_module(self, module_name: str) -> bool:
        """Whether ``module_name`` is one of the served modules or inside one."""
        return any(module_name == prefix or module_name.startswith(prefix + ".") for prefix in self.modules)

    def check(self, reference: str, what: str) -> None:
        """Refuse (:class:`DurableJobError`) a reference this worker does not serve; imports nothing."""
        if reference in self.names:
            return
        module_name, colon, qualname = reference.partition(":")
        if colon and module_name and qualname and self.serves_module(module_name):
            bad = [part for part in qualname.split(".") if not part.isidentifier() or part.startswith("_")]
            if bad:
                raise DurableJobError(
                    f"{what} reference {reference!r} is refused: {bad[0]!r} is not a public name"
                )
            return
        raise DurableJobError(
            f"{what} reference {reference!r} is not served by this worker (it serves "
            f"{self.describe()}); nothing was imported"
        )

    def resolve(self, reference: str, what: str) -> object:
        """The object ``reference`` names, if this worker serves it (:meth:`check` first)."""
        self.check(reference, what)
        if reference in self.names:
            return self.names[reference]
        module_name, parts = _split(reference, what)
        found = _import(reference, what, module_name)
        for part in parts:
            found = _attribute(found, part, reference, what)
            if inspect.ismodule(found):
                raise DurableJobError(
                    f"{what} reference {reference!r} is refused: it reaches into module {found.__name__!r}"
                )
        if inspect.isclass(found) or inspect.isroutine(found):
            defined_in = getattr(found, "__module__", None)
            if not isinstance(defined_in, str) or not self.serves_module(defined_in):
                raise DurableJobError(
                    f"{what} reference {reference!r} is refused: it names {found!r}, defined in "
                    f"{defined_in!r}, outside the served modules"
                )
        return found

    def describe(self) -> str:
        """What this worker serves, in words (for logs and refusals)."""
        served = [f"modules under {', '.join(self.modules)}"] if self.modules else []
        if self.names:
            served.append(f"the names {', '.join(sorted(self.names))}")
        return "; ".join(served) or "nothing: declare what it serves"


@attrs.frozen(kw_only=True)
class EvaluationJob:
    """One evaluation, as it is queued: references and JSON only.

    ``prompt`` names a ``Prompt`` or a factory called with ``params`` as
    keyword arguments; ``adapter`` names a ``ProviderAdapter`` or a
    factory called without arguments. ``decisions`` (JSON, as
    ``runtime.approval.decisions_to_json`` writes them) makes the job a
    resume of the session's pause.
    """

    prompt: str
    adapter: str
    session_id: str
    params: JSONObject = attrs.field(factory=dict[str, JSONValue])
    input: str | None = None
    max_turns: int = 16
    decisions: str | None = None
    decided_by: str | None = None
    pause_seq: int | None = None

    def to_json(self) -> str:
        data: JSONObject = {
            "prompt": self.prompt,
            "adapter": self.adapter,
            "session_id": self.session_id,
            "params": self.params,
            "input": self.input,
            "max_turns": self.max_turns,
            "decisions": self.decisions,
            "decided_by": self.decided_by,
            "pause_seq": self.pause_seq,
        }
        return canonical_json(data)

    @classmethod
    def from_json(cls, text: str) -> EvaluationJob:
        try:
            data = parse_canonical_json(text)
        except ValueError as exc:
            raise DurableJobError(f"queued evaluation is not JSON: {exc}") from exc
        if not isinstance(data, dict):
            raise DurableJobError("queued evaluation is not a JSON object")
        problems: list[str] = []

        def text_field(name: str, *, optional: bool = False) -> str | None:
            value = data.get(name)
            if value is None and optional:
                return None
            if not isinstance(value, str) or not value:
                problems.append(f"{name!r} must be a non-empty string, got {value!r:.60}")
                return None
            return value

        prompt = text_field("prompt")
        adapter = text_field("adapter")
        session_id = text_field("session_id")
        given_input = data.get("input")
        if given_input is not None and not isinstance(given_input, str):
            problems.append(f"'input' must be a string or null, got {given_input!r:.60}")
        params = data.get("params", {})
        if not isinstance(params, dict):
            problems.append(f"'params' must be a JSON object, got {params!r:.60}")
        max_turns = data.get("max_turns", 16)
        if isinstance(max_turns, bool) or not isinstance(max_turns, int) or max_turns < 1:
            problems.append(f"'max_turns' must be an int >= 1, got {max_turns!r:.60}")
        decisions = text_field("decisions", optional=True)
        decided_by = text_field("decided_by", optional=True)
        pause_seq = data.get("pause_seq")
        if pause_seq is not None and (isinstance(pause_seq, bool) or not isinstance(pause_seq, int)):
            problems.append(f"'pause_seq' must be an int or null, got {pause_seq!r:.60}")
        if problems or prompt is None or adapter is None or session_id is None:
            raise DurableJobError("queued evaluation is malformed: " + "; ".join(problems))
        return cls(
            prompt=prompt,
            adapter=adapter,
            session_id=session_id,
            params=cast("JSONObject", params),
            input=cast("str | None", given_input),
            max_turns=cast("int", max_turns),
            decisions=decisions,
            decided_by=decided_by,
            pause_seq=cast("int | None", pause_seq),
        )

    def load(self, served: Served) -> tuple[Prompt[Any], ProviderAdapter]:
        """The job's prompt and adapter, both references checked against ``served`` before any import."""
        served.check(self.prompt, "prompt")
        served.check(self.adapter, "adapter")
        return self.load_prompt(served), self.load_adapter(served)

    def load_prompt(self, served: Served) -> Prompt[Any]:
        found = served.resolve(self.prompt, "prompt")
        if isinstance(found, Prompt):
            if self.params:
                raise DurableJobError(
                    f"prompt reference {self.prompt!r} names a Prompt, which takes no params "
                    f"(got {sorted(self.params)})"
                )
            return cast("Prompt[Any]", found)
        if not callable(found):
            raise DurableJobError(f"prompt reference {self.prompt!r} is neither a Prompt nor a factory")
        try:
            made = found(**self.params)
        except Exception as exc:
            raise DurableJobError(
                f"prompt factory {self.prompt!r} failed with params {canonical_json(self.params)[:200]}: "
                f"{type(exc).__name__}: {exc}"
            ) from exc
        if not isinstance(made, Prompt):
            raise DurableJobError(
                f"prompt factory {self.prompt!r} returned {type(made).__name__}, not a Prompt"
            )
        return cast("Prompt[Any]", made)

    def load_adapter(self, served: Served) -> ProviderAdapter:
        found = served.resolve(self.adapter, "adapter")
        if callable(found) and not hasattr(found, "stream"):
            try:
                found = found()
            except Exception as exc:
                raise DurableJobError(
                    f"adapter factory {self.adapter!r} failed: {type(exc).__name__}: {exc}"
                ) from exc
        if not (hasattr(found, "stream") and hasattr(found, "complete") and hasattr(found, "name")):
            raise DurableJobError(
                f"adapter reference {self.adapter!r} gave {type(found).__name__}, not a ProviderAdapter"
            )
        return cast("ProviderAdapter", found)
