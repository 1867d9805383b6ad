"""How the per-type caches (schemas, parsers, type models) key a type."""

from __future__ import annotations

__all__ = ["cache_key"]


def cache_key(tp: object) -> object:
    """What a per-type cache keys ``tp`` by.

    A class is its own key. An annotation is keyed with its spelling too:
    ``Literal["a", "b"]`` equals ``Literal["b", "a"]`` and hashes alike (so
    does anything holding one, ``list[Literal[...]]``), but each one's enum
    keeps the order it was written in, which a schema shows the model.
    """
    return tp if isinstance(tp, type) else (tp, repr(tp))
