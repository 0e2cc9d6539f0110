"""Failure kinds: why an item (or one call) has no score, counted separately everywhere.

Categories (:data:`KINDS`):

* ``transport`` — the call never reached an answer on the wire: a timeout, a refused or broken connection;
* ``context_overflow`` — the prompt does not fit the model's context window (the server said so, or the
  context could not be cut to fit): shorten the context or use a model with a larger window;
* ``bad_request`` — the server refused the request as malformed (another HTTP 4xx): a parameter or model name;
* ``auth`` — the server refused the credentials (HTTP 401/403): the API key;
* ``rate_limit`` — the provider's rate limit (HTTP 429) persisted through the retries;
* ``server`` — the server failed (HTTP 5xx, or a reply without choices) through the retries;
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

__all__ = ["FAILURES", "KINDS", "NOT_FAILURES", "REQUEST_FAILURES", "WORDS", "category", "count", "from_message",
           "item_kind", "request_failures"]

KINDS = ("transport", "parse", "no_quorum", "no_consensus", "error", "not_applicable", "empty_answer",
         "context_overflow", "bad_request", "auth", "rate_limit", "server", "undecided")
#: the kinds of a request that produced no reply (what a run's ``error_rate`` counts)
REQUEST_FAILURES = ("transport", "context_overflow", "bad_request", "auth", "rate_limit", "server")
#: kinds that are not failures (the item is excluded as not applicable or undecided, or scored)
NOT_FAILURES = frozenset({"not_applicable", "empty_answer", "undecided"})
FAILURES = tuple(k for k in KINDS if k not in NOT_FAILURES)

_RAW: dict[str, str] = {
    # llm.client.ERROR_KINDS
    "rate_limited": "rate_limit", "rate_limit": "rate_limit", "server_error": "server", "server": "server",
    "timeout": "transport", "connection": "transport", "transport": "transport",
    "bad_request": "bad_request", "auth": "auth", "context_overflow": "context_overflow",
    "parse_error": "parse", "parse": "parse", "schema": "parse", "json": "parse",
    "missing_field": "not_applicable", "unsupported_offline": "not_applicable", "not_applicable": "not_applicable",
    "no_quorum": "no_quorum", "no_consensus": "no_consensus", "empty_answer": "empty_answer", "undecided": "undecided",
}
_RAW_RE = re.compile(r"\b(" + "|".join(sorted(_RAW, key=len, reverse=True)) + r")\b")


def category(raw: str | None) -> str:
    """The category of a raw failure kind (``rate_limited`` -> ``rate_limit``, ``timeout`` -> ``transport``);
    unknown kinds -> ``error``."""
    if not raw:
        return "error"
    return _RAW.get(str(raw).strip().lower(), "error")


def from_message(message: str | None) -> str:
    """The category named in a recorded error message (``"RuntimeError: ... timeout: read timed out"``
    -> ``transport``, ``"LLMCallError: context_overflow: ..."`` -> ``context_overflow``): the first raw kind the message contains as a word; ``error`` when none."""
    m = _RAW_RE.search(str(message or "").lower())
    return _RAW[m.group(1)] if m else "error"


def item_kind(failures: Iterable[Mapping[str, Any] | str], *, n_answered: int = 0) -> str:
    """The category of an item without a score from its call failures: ``not_applicable`` if any call
    said so; ``no_consensus``; ``no_quorum`` when some calls answered; else the request failure met
    (``context_overflow``, ``auth``, ``bad_request``, ``rate_limit``, ``server``, ``transport``, in that
    order), ``parse`` when a reply failed to parse, ``error`` otherwise."""
    cats = []
    for f in failures:
        raw = f.get("kind") if isinstance(f, Mapping) else None
        cats.append(category(raw) if raw else from_message(f if isinstance(f, str) else str(f.get("message"))))
    for kind in ("not_applicable", "undecided", "no_consensus", "no_quorum"):
        if kind in cats:
            return kind
    if n_answered > 0:
        return "no_quorum"
    for kind in ("context_overflow", "auth", "bad_request", "rate_limit", "server", "transport", "parse"):
        if kind in cats:
            return kind
    return "error"


def request_failures(kinds: Mapping[str, int]) -> int:
    """Items (or calls) of ``kinds`` whose request produced no reply, whatever the reason
    (:data:`REQUEST_FAILURES`)."""
    return sum(int(kinds.get(k, 0) or 0) for k in REQUEST_FAILURES)


#: each kind in plain words (logs, CLI summaries)
WORDS: dict[str, str] = {
    "transport": "timeouts and unreachable servers",
    "context_overflow": "prompts longer than the model's context window",
    "bad_request": "requests the server refused as malformed",
    "auth": "credentials the server refused",
    "rate_limit": "rate limits that persisted through the retries",
    "server": "server failures (HTTP 5xx)",
    "parse": "replies that could not be read",
    "no_quorum": "too few models answered",
    "no_consensus": "models disagreed",
    "error": "other errors",
}


def count(kinds: Iterable[str | None]) -> dict[str, int]:
    """``{kind: n}`` over the known kinds (every kind present, zeros included); ``None`` entries skipped."""
    out = dict.fromkeys(KINDS, 0)
    for k in kinds:
        if k is not None:
            out[k if k in out else "error"] += 1
    return out
