"""How the model should answer: one typed set of sampling and reasoning knobs, merged by layer.

Settings come from three places, each over the one before: the adapter
(its defaults), the prompt template, then the run. A field left ``None``
says nothing, so a later layer changes only what it sets; ``extra`` merges
key by key. An adapter refuses, before sending anything, a setting its
provider does not take, naming it (a silently dropped setting is a bug
the user never sees).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from typing import Literal, TypeAlias

import attrs

from .errors import ConfigurationError
from .jsontypes import JSONObject, JSONValue

__all__ = [
    "SETTING_NAMES",
    "ModelSettings",
    "ReasoningEffort",
    "SettingsAware",
    "adapter_settings",
    "check_supported",
]

ReasoningEffort: TypeAlias = Literal["minimal", "low", "medium", "high"]
_EFFORTS: tuple[str, ...] = ("minimal", "low", "medium", "high")


def _number_in(
    low: float, high: float, *, open_low: bool = False
) -> Callable[[object, attrs.Attribute[float | None], float | None], None]:
    def check(_self: object, attribute: attrs.Attribute[float | None], value: float | None) -> None:
        if value is None:
            return
        number_ok = isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)  # pyright: ignore[reportUnnecessaryIsInstance]  # a caller's value
        in_range = number_ok and (low < value if open_low else low <= value) and value <= high
        if not in_range:
            bound = f"({low}, {high}]" if open_low else f"[{low}, {high}]"
            raise ConfigurationError(
                f"ModelSettings: {attribute.name} must be a number in {bound}, got {value!r}"
            )

    return check


def _positive_int(_self: object, attribute: attrs.Attribute[int | None], value: int | None) -> None:
    if value is None:
        return
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:  # pyright: ignore[reportUnnecessaryIsInstance]  # a caller's value
        raise ConfigurationError(f"ModelSettings: {attribute.name} must be an int >= 1, got {value!r}")


def _any_int(_self: object, attribute: attrs.Attribute[int | None], value: int | None) -> None:
    if value is not None and (isinstance(value, bool) or not isinstance(value, int)):  # pyright: ignore[reportUnnecessaryIsInstance]  # a caller's value
        raise ConfigurationError(f"ModelSettings: {attribute.name} must be an int, got {value!r}")


def _stop_tuple(value: object) -> tuple[str, ...] | None:
    if value is None:
        return None
    if isinstance(value, str):
        raise ConfigurationError(
            f"ModelSettings: stop must be a sequence of strings, not one string ({value!r})"
        )
    if not isinstance(value, list | tuple):
        raise ConfigurationError(f"ModelSettings: stop must be a sequence of strings, got {value!r}")
    items = tuple[object, ...](value)  # pyright: ignore[reportUnknownArgumentType]  # a caller's sequence
    for item in items:
        if not isinstance(item, str) or not item:
            raise ConfigurationError(
                f"ModelSettings: every stop sequence must be a non-empty string, got {item!r}"
            )
    return tuple(str(item) for item in items)


def _check_effort(_self: object, _attribute: object, value: object) -> None:
    if value is not None and value not in _EFFORTS:
        raise ConfigurationError(
            f"ModelSettings: reasoning_effort must be one of {', '.join(_EFFORTS)}, got {value!r}"
        )


def _check_tier(_self: object, _attribute: object, value: object) -> None:
    if value is not None and (not isinstance(value, str) or not value):
        raise ConfigurationError(f"ModelSettings: service_tier must be a non-empty string, got {value!r}")


def _check_flag(_self: object, attribute: attrs.Attribute[bool | None], value: object) -> None:
    if value is not None and not isinstance(value, bool):
        raise ConfigurationError(
            f"ModelSettings: {attribute.name} must be True, False or None, got {value!r}"
        )


def _extra_copy(value: Mapping[str, JSONValue] | None) -> Mapping[str, JSONValue]:
    if value is None:
        return {}
    if not isinstance(value, Mapping):  # pyright: ignore[reportUnnecessaryIsInstance]  # a caller's value
        raise ConfigurationError(f"ModelSettings: extra must be a mapping of request fields, got {value!r}")
    for key in value:
        if not isinstance(key, str) or not key:  # pyright: ignore[reportUnnecessaryIsInstance]  # a caller's value
            raise ConfigurationError(f"ModelSettings: extra keys must be non-empty strings, got {key!r}")
    return dict(value)


@attrs.frozen(kw_only=True)
class ModelSettings:
    """Sampling, length, reasoning and provider options for a model call; ``None`` means "not set".

    ``max_output_tokens`` caps the reply; ``thinking_budget`` is a token
    budget for providers that take one, ``reasoning_effort`` a level for
    those that take that. ``extra`` is passed to the provider's request as
    is (its own option names), for what this class does not name.
    """

    temperature: float | None = attrs.field(default=None, validator=_number_in(0.0, 2.0))
    top_p: float | None = attrs.field(default=None, validator=_number_in(0.0, 1.0, open_low=True))
    max_output_tokens: int | None = attrs.field(default=None, validator=_positive_int)
    stop: tuple[str, ...] | None = attrs.field(default=None, converter=_stop_tuple)
    seed: int | None = attrs.field(default=None, validator=_any_int)
    parallel_tool_calls: bool | None = attrs.field(default=None, validator=_check_flag)
    reasoning_effort: ReasoningEffort | None = attrs.field(default=None, validator=_check_effort)
    thinking_budget: int | None = attrs.field(default=None, validator=_positive_int)
    service_tier: str | None = attrs.field(default=None, validator=_check_tier)
    extra: Mapping[str, JSONValue] = attrs.field(factory=dict[str, JSONValue], converter=_extra_copy)

    def merged(self, over: ModelSettings | None) -> ModelSettings:
        """These settings with every field ``over`` sets put over them (``extra`` merged key by key)."""
        if over is None:
            return self
        changes: dict[str, object] = {
            name: getattr(over, name) for name in SETTING_NAMES if getattr(over, name) is not None
        }
        if over.extra:
            changes["extra"] = {**self.extra, **over.extra}
        return attrs.evolve(self, **changes) if changes else self  # pyright: ignore[reportArgumentType]

    def chosen(self) -> tuple[str, ...]:
        """The names of the fields that are set (``extra`` when it has any key)."""
        names = tuple(name for name in SETTING_NAMES if getattr(self, name) is not None)
        return (*names, "extra") if self.extra else names

    def to_json(self) -> JSONObject:
        """The set fields as JSON (what a commit records as the settings used)."""
        data: JSONObject = {}
        for name in SETTING_NAMES:
            value: JSONValue | tuple[str, ...] = getattr(self, name)
            if isinstance(value, tuple):
                data[name] = list[JSONValue](value)
            elif value is not None:
                data[name] = value
        if self.extra:
            data["extra"] = dict(self.extra)
        return data


SETTING_NAMES: tuple[str, ...] = tuple(
    field.name for field in attrs.fields(ModelSettings) if field.name != "extra"
)
"""Every named setting, in declaration order (``extra`` aside)."""


class SettingsAware:
    """Mixin of adapters with default settings: ``model_settings`` and the names the provider takes."""

    model_settings: ModelSettings = ModelSettings()
    supported_settings: frozenset[str] = frozenset((*SETTING_NAMES, "extra"))


def check_supported(settings: ModelSettings, supported: frozenset[str], *, adapter: str, model: str) -> None:
    """Refuse settings the provider does not take, naming each, before any request is sent."""
    refused = [name for name in settings.chosen() if name not in supported]
    if refused:
        takes = ", ".join(name for name in (*SETTING_NAMES, "extra") if name in supported)
        raise ConfigurationError(
            f"{adapter} ({model}) does not support the model setting(s) {', '.join(refused)}; "
            f"it takes {takes}"
        )


def adapter_settings(adapter: object) -> ModelSettings:
    """An adapter's default settings (none for an adapter without any, such as a test double)."""
    settings = getattr(adapter, "model_settings", None)
    return settings if isinstance(settings, ModelSettings) else ModelSettings()
