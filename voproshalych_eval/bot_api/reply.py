"""Reading a bot's JSON reply: dotted paths and chunk texts."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any


def json_path(obj: Any, path: str | None) -> Any:
    """Follow a dotted path (``data.answer``, ``chunks.*.text``, ``items.0``) into parsed JSON.

    ``*`` maps the rest of the path over a list. An empty path returns ``obj``. Missing -> None.
    """
    if not path:
        return obj
    head, _, rest = path.partition(".")
    if head == "*":
        if not isinstance(obj, list):
            return None
        return [json_path(x, rest) for x in obj]
    if isinstance(obj, list):
        try:
            return json_path(obj[int(head)], rest)
        except (ValueError, IndexError):
            return None
    if isinstance(obj, Mapping):
        if head not in obj:
            return None
        return json_path(obj[head], rest)
    return None


def as_texts(value: Any) -> list[str]:
    """Chunk texts from whatever a path points at: a string, a list of strings, or objects with ``text``."""
    if value is None:
        return []
    if isinstance(value, str):
        return [value] if value else []
    if isinstance(value, list):
        out: list[str] = []
        for v in value:
            if isinstance(v, str):
                if v:
                    out.append(v)
            elif isinstance(v, Mapping):
                t = v.get("text") or v.get("content") or v.get("page_content") or v.get("chunk")
                if t:
                    out.append(str(t))
            elif isinstance(v, list):
                out.extend(as_texts(v))
        return out
    if isinstance(value, Mapping):
        return as_texts([value])
    return [str(value)]


def as_text(value: Any) -> str | None:
    """One text from a path's value: lists are joined with newlines; None stays None."""
    if value is None:
        return None
    if isinstance(value, list):
        parts = [str(v) for v in value if v not in (None, "")]
        return "\n".join(parts)
    return value if isinstance(value, str) else str(value)
