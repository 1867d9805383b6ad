"""What a queued evaluation names: its prompt, its adapter, its session, by reference.

A durable evaluation must be restartable in another process, so it carries
no live objects: the prompt and the adapter are import references
(``package.module:factory``) resolved in the worker, and everything else is
JSON.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any, cast

import attrs

from ..canonical import canonical_json, parse_canonical_json
from ..errors import WeakpromptError
from ..jsontypes import JSONObject, JSONValue

if TYPE_CHECKING:
    from ..model import ProviderAdapter
    from ..prompt import Prompt

__all__ = ["DurableJobError", "EvaluationJob", "load_reference"]


class DurableJobError(WeakpromptError):
    """A queued evaluation cannot run as submitted (a bad reference, bad parameters, a bad job)."""


def load_reference(reference: str, what: str) -> object:
    """The object ``reference`` (``package.module:name``, dotted names allowed after the colon) names."""
    module_name, colon, qualname = reference.partition(":")
    if not colon or not module_name or not qualname:
        raise DurableJobError(f"{what} reference {reference!r} is not of the form 'package.module:name'")
    try:
        found: object = importlib.import_module(module_name)
    except Exception as exc:  # the user's module failed: say which and why
        raise DurableJobError(
            f"{what} reference {reference!r}: importing module {module_name!r} failed: "
            f"{type(exc).__name__}: {exc}"
        ) from exc
    for part in qualname.split("."):
        try:
            found = getattr(found, part)
        except AttributeError:
            raise DurableJobError(
                f"{what} reference {reference!r}: {module_name!r} has no attribute {qualname!r}"
            ) from None
    return found


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

    def load_prompt(self) -> Prompt[Any]:
        from ..prompt import Prompt

        found = load_reference(self.prompt, "prompt")
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

    def load_adapter(self) -> ProviderAdapter:
        found = load_reference(self.adapter, "adapter")
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
