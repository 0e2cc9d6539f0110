"""Structured output: the fallback chain and the strict parser.

Modes, tried in order per (provider, model) and remembered once one works:

1. ``json_schema`` — ``response_format={"type": "json_schema", "json_schema": {...}}`` (OpenAI, vLLM, ...);
2. ``json_object_schema`` — ``response_format={"type": "json_object", "schema": {...}}`` with the schema also
   written in the prompt (llama-cpp-python's server constrains the reply to the schema this way);
3. ``json_object`` — plain ``{"type": "json_object"}`` (JSON mode of OpenAI, Mistral, DeepSeek, whose
   validators refuse the extra ``schema`` key), schema in the prompt;
4. ``text`` — no response format; the schema is in the prompt and the reply is parsed strictly.

Whatever the mode, the reply is parsed by :func:`parse_structured`: the first JSON object in the text
(prose or a code fence around it is tolerated), then the schema's required fields, types, ranges and
enums are checked. Anything else raises :class:`ParseError` — never a default value.
"""

from __future__ import annotations

import json
from typing import Any

from voproshalych_eval.errors import VoproshalychEvalError

MODES = ("json_schema", "json_object_schema", "json_object", "text")


class ParseError(VoproshalychEvalError, ValueError):
    """The reply has no JSON object satisfying the schema. ``raw_text`` keeps the reply."""

    def __init__(self, message: str, raw_text: str | None) -> None:
        super().__init__(message)
        self.raw_text = raw_text


def schema_instruction(schema: dict[str, Any], lang: str = "ru") -> str:
    """The text appended to the prompt in ``json_object`` and ``text`` modes."""
    compact = json.dumps(schema, ensure_ascii=False, separators=(",", ":"))
    if lang == "en":
        return (
            "Reply with exactly one JSON object and nothing else, matching this JSON Schema.\n"
            f"JSON Schema: {compact}"
        )
    return (
        "Ответь ровно одним JSON-объектом без какого-либо другого текста, соответствующим этой схеме.\n"
        f"JSON Schema: {compact}"
    )


def response_format(mode: str, schema: dict[str, Any], name: str = "result") -> dict[str, Any] | None:
    """The ``response_format`` request parameter for a mode (None for ``text``)."""
    if mode == "json_schema":
        return {"type": "json_schema", "json_schema": {"name": name, "schema": schema, "strict": False}}
    if mode == "json_object_schema":
        return {"type": "json_object", "schema": schema}
    if mode == "json_object":
        return {"type": "json_object"}
    return None


def extract_json_object(text: str | None) -> dict[str, Any] | None:
    """The first JSON object (``{...}``) found in ``text``, or None."""
    if not text:
        return None
    decoder = json.JSONDecoder()
    pos = text.find("{")
    while pos != -1:
        try:
            obj, _ = decoder.raw_decode(text, pos)
        except json.JSONDecodeError:
            pos = text.find("{", pos + 1)
            continue
        if isinstance(obj, dict):
            return obj
        pos = text.find("{", pos + 1)
    return None


_TYPES: dict[str, tuple[type, ...]] = {
    "string": (str,),
    "number": (int, float),
    "integer": (int,),
    "boolean": (bool,),
    "array": (list,),
    "object": (dict,),
}


def _coerce(value: Any, spec: dict[str, Any], path: str) -> Any:
    typ = spec.get("type")
    types = typ if isinstance(typ, list) else [typ] if typ else []
    if "null" in types and value is None:
        return None
    types = [t for t in types if t != "null"]
    if types:
        t = types[0]
        if t in ("number", "integer"):
            if isinstance(value, bool):
                raise ValueError(f"{path}: expected a number, got a boolean")
            if isinstance(value, str):  # "4" or "0.5" from weaker models: accepted, but nothing else
                try:
                    value = float(value.strip().replace(",", "."))
                except ValueError:
                    raise ValueError(f"{path}: expected a number, got {value!r}") from None
            if not isinstance(value, int | float):
                raise ValueError(f"{path}: expected a number, got {type(value).__name__}")
            if t == "integer":
                if float(value) != int(value):
                    raise ValueError(f"{path}: expected an integer, got {value!r}")
                value = int(value)
            if value != value:  # NaN
                raise ValueError(f"{path}: NaN")
            if "minimum" in spec and value < spec["minimum"]:
                raise ValueError(f"{path}: {value} < minimum {spec['minimum']}")
            if "maximum" in spec and value > spec["maximum"]:
                raise ValueError(f"{path}: {value} > maximum {spec['maximum']}")
        elif t == "boolean" and isinstance(value, str) and value.strip().lower() in ("true", "false"):
            value = value.strip().lower() == "true"
        elif t in _TYPES and not isinstance(value, _TYPES[t]):
            raise ValueError(f"{path}: expected {t}, got {type(value).__name__}")
        if t == "array":
            items = spec.get("items")
            if isinstance(items, dict):
                value = [_coerce(v, items, f"{path}[{i}]") for i, v in enumerate(value)]
            if "minItems" in spec and len(value) < spec["minItems"]:
                raise ValueError(f"{path}: fewer than {spec['minItems']} items")
        if t == "object":
            value = validate(value, spec, path=path)
    if "enum" in spec and value not in spec["enum"]:
        raise ValueError(f"{path}: {value!r} not in {spec['enum']}")
    return value


def validate(obj: Any, schema: dict[str, Any], *, path: str = "$") -> dict[str, Any]:
    """Check required fields, types, ``minimum``/``maximum`` and ``enum``; returns the coerced object."""
    if not isinstance(obj, dict):
        raise ValueError(f"{path}: expected an object")
    props: dict[str, Any] = schema.get("properties", {})
    out = dict(obj)
    for name in schema.get("required", []):
        if name not in obj:
            raise ValueError(f"{path}: missing required field '{name}'")
    for name, spec in props.items():
        if name in obj:
            out[name] = _coerce(obj[name], spec, f"{path}.{name}")
    return out


def parse_structured(text: str | None, schema: dict[str, Any]) -> dict[str, Any]:
    """Strictly parse a reply: first JSON object, validated against ``schema``; else :class:`ParseError`."""
    if text is None or not text.strip():
        raise ParseError("empty reply", text)
    obj = extract_json_object(text)
    if obj is None:
        raise ParseError("no JSON object in the reply", text)
    try:
        return validate(obj, schema)
    except ValueError as exc:
        raise ParseError(f"reply does not match the schema: {exc}", text) from None
