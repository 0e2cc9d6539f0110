"""Dotted paths into parsed JSON (a bot API's reply): ``data.answer``, ``chunks.*.text``, ``items.0``."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any


def json_path(obj: Any, path: str) -> Any:
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
