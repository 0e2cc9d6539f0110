"""Markdown that is safe to render whatever the data holds.

Questions, answers, labels and chunk texts come from users, bots and LLMs: rendered raw in a Markdown
export, ``<script>``, ``<img onerror=...>``, remote images ``![](http://...)`` (a tracking pixel when a
viewer opens the report) and links would become live HTML. Every *data* field therefore goes into a
code span: no HTML, image, link or emphasis is interpreted inside one, and GFM tables still allow an
escaped ``\\|`` in it. Numbers, the report's own words and text made only of characters that cannot start
any Markdown construct that renders HTML, an image or a link (letters, digits, spaces and ``_ . , % + = ? ! ( ) : ; · — – -``,
``@`` only when no domain follows: ``hit_rate@5``, not ``a@b.ru``) stay plain text.
"""

from __future__ import annotations

import json
import math
import re
from typing import Any

_BACKTICKS = re.compile(r"`+")
_PLAIN = re.compile(r"[\w .,%+=?!@():;·—–-]*")


def literal(value: Any) -> str:
    """``value`` as an inline code span (a fence longer than any backtick run inside; whitespace collapsed)."""
    s = " ".join(str(value).split())
    if not s:
        return ""
    longest = max((len(m.group(0)) for m in _BACKTICKS.finditer(s)), default=0)
    fence = "`" * (longest + 1)
    pad = " " if s.startswith("`") or s.endswith("`") else ""
    return f"{fence}{pad}{s}{pad}{fence}"


def inert(s: str) -> bool:
    """Whether ``s`` can render no HTML, image, link, autolink or email link in any Markdown flavour."""
    if not _PLAIN.fullmatch(s) or "www." in s.lower():
        return False
    return "@" not in s or "." not in s.rsplit("@", 1)[1]


def _plain(value: Any, digits: int) -> str | None:
    """Numbers, booleans and missing values: plain text (nothing to escape); None for anything else."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "—"
    if isinstance(value, bool):
        return str(value)
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return f"{value:.{digits}f}"
    return None


def cell(value: Any, *, width: int = 120, digits: int = 4) -> str:
    """A GFM table cell: numbers and :func:`inert` text plain; other text (cut to ``width`` characters) as a
    code span, pipes escaped."""
    plain = _plain(value, digits)
    if plain is not None:
        return plain
    try:  # numpy / pandas scalars
        import numpy as np  # heavy: defers numpy

        if isinstance(value, np.generic):
            return cell(value.item(), width=width, digits=digits)
    except ImportError:  # pragma: no cover
        pass
    s = json.dumps(value, ensure_ascii=False, default=str) if isinstance(value, dict | list | tuple) else str(value)
    s = " ".join(s.split())
    if len(s) > width:
        s = s[: width - 1] + "…"
    return s if inert(s) else literal(s).replace("|", "\\|")


def table(rows: list[dict[str, Any]], cols: list[str], *, width: int = 120) -> str:
    """A GFM table of ``rows`` (column names are the report's own; values go through :func:`cell`)."""
    if not rows:
        return "_—_\n"
    out = ["| " + " | ".join(cols) + " |", "|" + "---|" * len(cols)]
    out += ["| " + " | ".join(cell(r.get(c), width=width) for c in cols) + " |" for r in rows]
    return "\n".join(out) + "\n"
