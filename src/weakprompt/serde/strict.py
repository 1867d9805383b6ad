"""Final touches for strict (OpenAI structured outputs) schemas.

Strict mode does not allow ``$ref`` next to other keywords, so a reference that
carries a description (or any sibling) is replaced by a copy of the referenced
definition with the siblings laid over it. Definitions nothing points to any
more are dropped. The per-keyword rules live in ``schemas.py``; this module only
rewrites references.
"""

from __future__ import annotations

from weakprompt.jsontypes import JSONObject, JSONValue

__all__ = ["finish_strict", "prune_defs"]


def finish_strict(root: JSONObject) -> JSONObject:
    defs = root.get("$defs")
    definitions: JSONObject = defs if isinstance(defs, dict) else {}
    body: JSONObject = {key: value for key, value in root.items() if key != "$defs"}
    inliner = _Inliner(body, definitions)
    new_body = inliner.walk_object(body, ())
    new_defs: JSONObject = {
        name: inliner.walk(value, (f"#/$defs/{name}",)) for name, value in definitions.items()
    }
    if new_defs:
        new_body["$defs"] = new_defs
    return prune_defs(new_body)


class _Inliner:
    def __init__(self, body: JSONObject, defs: JSONObject) -> None:
        self.body = body
        self.defs = defs

    def target(self, ref: str) -> JSONObject | None:
        if ref == "#":
            return self.body
        name = ref.removeprefix("#/$defs/")
        found = self.defs.get(name)
        return found if isinstance(found, dict) else None

    def walk(self, value: JSONValue, stack: tuple[str, ...]) -> JSONValue:
        if isinstance(value, dict):
            return self.walk_object(value, stack)
        if isinstance(value, list):
            return [self.walk(item, stack) for item in value]
        return value

    def walk_object(self, value: JSONObject, stack: tuple[str, ...]) -> JSONObject:
        ref = value.get("$ref")
        if isinstance(ref, str) and len(value) > 1:
            target = self.target(ref)
            if target is not None and ref not in stack:
                merged: JSONObject = {key: item for key, item in target.items() if key != "$defs"}
                merged.update({key: item for key, item in value.items() if key != "$ref"})
                return self.walk_object(merged, (*stack, ref))
            # A reference cycle through siblings: keep the reference, wrap it.
            siblings: JSONObject = {key: item for key, item in value.items() if key != "$ref"}
            return {"anyOf": [{"$ref": ref}], **siblings}
        return {key: self.walk(item, stack) for key, item in value.items()}


def prune_defs(root: JSONObject) -> JSONObject:
    """Drop ``$defs`` entries that no reference reaches from the root."""
    defs = root.get("$defs")
    if not isinstance(defs, dict):
        return root
    body: JSONObject = {key: value for key, value in root.items() if key != "$defs"}
    reached: set[str] = set()
    pending = _refs_in(body)
    while pending:
        name = pending.pop()
        if name in reached or name not in defs:
            continue
        reached.add(name)
        pending |= _refs_in(defs[name])
    kept: JSONObject = {name: value for name, value in defs.items() if name in reached}
    if kept:
        body["$defs"] = kept
    return body


def _refs_in(value: JSONValue) -> set[str]:
    found: set[str] = set()
    stack: list[JSONValue] = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, dict):
            ref = item.get("$ref")
            if isinstance(ref, str) and ref.startswith("#/$defs/"):
                found.add(ref.removeprefix("#/$defs/"))
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)
    return found
