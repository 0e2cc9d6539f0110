"""The annotation queue's order: which judged items a person labels first (pure functions on plain dicts).

A queue item is a dict with at least ``key``; the strategies read ``judge`` (the judge's score on 0–1 or
the metric's scale with ``low``/``high``), ``per_model`` (the jury's scores) and ``topic``:

* ``random`` — a seeded shuffle;
* ``uncertain`` — the judge's least certain first: the distance of the score from the middle of its scale
  (a verdict averaged over models or votes near 0.5 comes first; a single binary verdict carries no
  uncertainty and keeps the random order);
* ``disagreement`` — the jury's largest spread (max − min of the models' scores) first;
* ``stratified`` — round robin over topics (each topic's items shuffled), so every topic is reached early.
"""

from __future__ import annotations

import random
from collections.abc import Mapping, Sequence
from typing import Any

STRATEGIES = ("random", "uncertain", "disagreement", "stratified")


def uncertainty(item: Mapping[str, Any]) -> float:
    """1 − |score − middle| / half-width: 1 at the middle of the scale, 0 at its ends (0 without a score)."""
    s = item.get("judge")
    if s is None:
        return 0.0
    lo, hi = float(item.get("low", 0.0)), float(item.get("high", 1.0))
    half = (hi - lo) / 2 or 1.0
    return max(0.0, 1.0 - abs(float(s) - (lo + half)) / half)


def jury_spread(item: Mapping[str, Any]) -> float:
    """max − min of the models' scores (0 with fewer than two scores)."""
    vals = [float(v) for v in (item.get("per_model") or {}).values() if v is not None]
    return max(vals) - min(vals) if len(vals) > 1 else 0.0


def order(items: Sequence[Mapping[str, Any]], strategy: str = "random", *, seed: int = 0,
          limit: int | None = None) -> list[Mapping[str, Any]]:
    """``items`` in the order of ``strategy`` (see the module doc), the first ``limit``."""
    if strategy not in STRATEGIES:
        raise ValueError(f"unknown sampling {strategy!r}; use one of {', '.join(STRATEGIES)}")
    rng = random.Random(seed)
    shuffled = sorted(items, key=lambda it: str(it["key"]))
    rng.shuffle(shuffled)
    if strategy == "uncertain":
        out = sorted(shuffled, key=uncertainty, reverse=True)  # stable: ties keep the random order
    elif strategy == "disagreement":
        out = sorted(shuffled, key=jury_spread, reverse=True)
    elif strategy == "stratified":
        by_topic: dict[str, list[Mapping[str, Any]]] = {}
        for it in shuffled:
            by_topic.setdefault(str(it.get("topic") or "—"), []).append(it)
        out, lists = [], [by_topic[t] for t in sorted(by_topic)]
        while any(lists):
            for lst in lists:
                if lst:
                    out.append(lst.pop(0))
    else:
        out = shuffled
    return out[:limit] if limit else out


def value_keys(kind: str, low: float, high: float) -> list[tuple[str, float]]:
    """The keyboard keys of a label scale and their values: binary ``0``/``1``; an integer scale its levels
    (1–5: keys 1…5); a 0–1 scale five steps on keys 1…5 (0, 0.25, 0.5, 0.75, 1)."""
    if kind == "binary":
        return [("0", float(low)), ("1", float(high))]
    if kind == "ordinal" and float(low).is_integer() and float(high).is_integer() and low >= 0 and high <= 9:
        return [(str(int(v)), float(v)) for v in range(int(low), int(high) + 1)]
    step = (high - low) / 4
    return [(str(i + 1), round(low + i * step, 4)) for i in range(5)]
