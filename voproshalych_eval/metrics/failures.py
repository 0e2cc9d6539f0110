"""Failure kinds: why an item (or one call) has no score, counted separately everywhere.

Categories (:data:`KINDS`):

* ``transport`` — the call never produced a reply: timeout, 429 after the retries, 5xx, a refused
  connection, a request the API rejected;
* ``parse`` — a reply came back but could not be read as the metric's answer (not JSON, wrong schema,
  a verdict that is neither "Yes" nor "No: reason");
* ``no_quorum`` — some votes/models answered, but fewer than the aggregator's quorum;
* ``no_consensus`` — every model answered but the ``consensus`` aggregator found them apart;
* ``error`` — anything else (a bug, a local failure);
* ``not_applicable`` — the metric cannot apply to this item (a field it needs, e.g. the reference, is
  missing; a free-form criterion on the offline judge). **Not a failure**: it is left out of both the
  mean and ``n_failed`` and counted apart;
* ``undecided`` — the judges' verdicts tie (1–1): no verdict, **not a failure** — counted apart and left
  out of pass rates and accuracies;
* ``empty_answer`` — the system answered with an empty text. **Not a failure either**: the item is
  scored as the bad answer it is (0 on overlap metrics, the scale's lowest value by rule on judge
  metrics) and counted, so an empty answer can never raise an average by being left out.

:func:`category` maps the raw kinds used by the LLM client and the judges to these categories.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import Any

__all__ = ["FAILURES", "KINDS", "NOT_FAILURES", "category", "count", "from_message", "item_kind"]

KINDS = ("transport", "parse", "no_quorum", "no_consensus", "error", "not_applicable", "empty_answer", "undecided")
#: kinds that are not failures (the item is excluded as not applicable or undecided, or scored)
NOT_FAILURES = frozenset({"not_applicable", "empty_answer", "undecided"})
FAILURES = tuple(k for k in KINDS if k not in NOT_FAILURES)

_RAW: dict[str, str] = {
    # llm.client.ERROR_KINDS
    "rate_limited": "transport", "server_error": "transport", "timeout": "transport", "connection": "transport",
    "bad_request": "transport", "transport": "transport",
    "parse_error": "parse", "parse": "parse", "schema": "parse", "json": "parse",
    "missing_field": "not_applicable", "unsupported_offline": "not_applicable", "not_applicable": "not_applicable",
    "no_quorum": "no_quorum", "no_consensus": "no_consensus", "empty_answer": "empty_answer", "undecided": "undecided",
}
_RAW_RE = re.compile(r"\b(" + "|".join(sorted(_RAW, key=len, reverse=True)) + r")\b")


def category(raw: str | None) -> str:
    """The category of a raw failure kind (``rate_limited`` -> ``transport``); unknown kinds -> ``error``."""
    if not raw:
        return "error"
    return _RAW.get(str(raw).strip().lower(), "error")


def from_message(message: str | None) -> str:
    """The category named in a recorded error message (``"RuntimeError: ... timeout: read timed out"``
    -> ``transport``): the first raw kind the message contains as a word; ``error`` when none."""
    m = _RAW_RE.search(str(message or "").lower())
    return _RAW[m.group(1)] if m else "error"


def item_kind(failures: Iterable[Mapping[str, Any] | str], *, n_answered: int = 0) -> str:
    """The category of an item without a score from its call failures: ``not_applicable`` if any call
    said so; ``no_consensus``; ``no_quorum`` when some calls answered; else ``transport`` when a call
    failed in transport, ``parse`` when one failed to parse, ``error`` otherwise."""
    cats = []
    for f in failures:
        raw = f.get("kind") if isinstance(f, Mapping) else None
        cats.append(category(raw) if raw else from_message(f if isinstance(f, str) else str(f.get("message"))))
    for kind in ("not_applicable", "undecided", "no_consensus", "no_quorum"):
        if kind in cats:
            return kind
    if n_answered > 0:
        return "no_quorum"
    for kind in ("transport", "parse"):
        if kind in cats:
            return kind
    return "error"


def count(kinds: Iterable[str | None]) -> dict[str, int]:
    """``{kind: n}`` over the known kinds (every kind present, zeros included); ``None`` entries skipped."""
    out = dict.fromkeys(KINDS, 0)
    for k in kinds:
        if k is not None:
            out[k if k in out else "error"] += 1
    return out
