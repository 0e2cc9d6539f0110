r"""Agreement of a judge with people (and of two people with each other), in the style of ``sklearn.metrics``.

Every function takes the human values first and the judge's second, item by item (failed judgements are
left out by the caller and counted apart). Scales:

* **binary** — Cohen's kappa (:func:`voproshalych_eval.metrics.classification.cohen_kappa`, equal to
  ``sklearn.metrics.cohen_kappa_score``);
* **ordinal** (1–5, rubric levels) — Krippendorff's alpha at the ordinal level (the ``krippendorff``
  package) and quadratic-weighted kappa (``sklearn.metrics.cohen_kappa_score(weights="quadratic")``);
* **continuous** (0–1 scores) — Spearman's rank correlation (``scipy.stats.spearmanr``) and Krippendorff's
  alpha at the interval level.

Each statistic comes with a percentile-bootstrap CI over items (resample items with replacement,
recompute, take the 2.5 % / 97.5 % quantiles; resamples where the statistic is undefined are skipped) and n.
*Bias* = mean(judge − human) on the metric's scale, with a bootstrap CI: a judge that is too lenient has a
positive bias, too strict a negative one.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Hashable, Sequence
from typing import Any

import numpy as np

from voproshalych_eval.metrics.classification import cohen_kappa
from voproshalych_eval.metrics.statistics import bootstrap_ci

__all__ = ["agreement_report", "best_threshold", "bias", "bootstrap_pairs_ci", "confusion", "krippendorff_alpha",
           "paired_difference_ci", "spearman", "weighted_kappa"]

KINDS = ("binary", "ordinal", "continuous")

#: one rater's values: a list or an array
Values = Sequence[float] | np.ndarray


def _pairs(human: Values, judge: Values) -> tuple[np.ndarray, np.ndarray]:
    if len(human) != len(judge):
        raise ValueError(f"human and judge values differ in length: {len(human)} != {len(judge)}")
    h, j = np.asarray(human, dtype=float), np.asarray(judge, dtype=float)
    if h.size == 0:
        raise ValueError("agreement needs at least one item")
    if not (np.isfinite(h).all() and np.isfinite(j).all()):
        raise ValueError("agreement got None/NaN values; leave failed judgements out and count them")
    return h, j


def weighted_kappa(human: Values, judge: Values, *, weights: str = "quadratic") -> float:
    r"""Weighted Cohen's kappa for ordinal values.

    .. math:: \kappa_w = 1 - \frac{\sum_{ij} w_{ij} O_{ij}}{\sum_{ij} w_{ij} E_{ij}},\quad
              w_{ij} = \left(\frac{i - j}{k - 1}\right)^2 \text{ (quadratic)}

    with :math:`O` the observed confusion matrix and :math:`E` the outer product of its margins / n.
    ``sklearn.metrics.cohen_kappa_score(weights=...)``; 1.0 when both raters give one and the same value.
    """
    from sklearn.metrics import cohen_kappa_score  # heavy: defers sklearn

    h, j = _pairs(human, judge)
    labels = sorted(set(h.tolist()) | set(j.tolist()))
    if len(labels) == 1:
        return 1.0
    k = float(cohen_kappa_score(h, j, labels=labels, weights=weights))
    return k if math.isfinite(k) else float("nan")


def krippendorff_alpha(ratings: Sequence[Sequence[float | None]], *, level: str = "ordinal") -> float:
    r"""Krippendorff's alpha of raters × items (``None`` = the rater did not rate the item).

    .. math:: \alpha = 1 - \frac{D_o}{D_e}

    :math:`D_o` the observed disagreement within items, :math:`D_e` the disagreement expected by chance
    over all pairable values, with the metric of ``level`` (``nominal``, ``ordinal``, ``interval``, ``ratio``).
    The ``krippendorff`` package; NaN when every value is the same (no variation to agree on).
    """
    import krippendorff  # heavy: defers numpy (via krippendorff)

    data = np.array([[np.nan if v is None else float(v) for v in row] for row in ratings], dtype=float)
    if data.ndim != 2 or data.shape[0] < 2:
        raise ValueError("krippendorff_alpha needs at least two raters (rows)")
    values = data[np.isfinite(data)]
    if values.size == 0 or np.unique(values).size < 2:
        return float("nan")
    return float(krippendorff.alpha(reliability_data=data, level_of_measurement=level))  # type: ignore[arg-type]  # level is checked by the caller's kind table


def spearman(human: Values, judge: Values) -> float:
    r"""Spearman's rank correlation :math:`\rho = \operatorname{corr}(\operatorname{rank}(h), \operatorname{rank}(j))`
    (``scipy.stats.spearmanr``, average ranks for ties); NaN when either side is constant."""
    from scipy.stats import spearmanr  # heavy: defers scipy

    h, j = _pairs(human, judge)
    if np.unique(h).size < 2 or np.unique(j).size < 2:
        return float("nan")
    return float(spearmanr(h, j).statistic)


def bias(human: Values, judge: Values, *, n_resamples: int = 1000, seed: int = 0) -> dict[str, Any]:
    r"""Mean signed difference :math:`\frac{1}{n}\sum_i (j_i - h_i)` with a percentile-bootstrap CI."""
    h, j = _pairs(human, judge)
    d = j - h
    lo, hi = bootstrap_ci(d, n_resamples=n_resamples, seed=seed)
    return {"mean": float(d.mean()), "ci": [float(lo), float(hi)], "n": int(d.size)}


def confusion(human: Sequence[Hashable], judge: Sequence[Hashable], *, labels: Sequence[Hashable] | None = None
              ) -> dict[str, Any]:
    """Confusion matrix: ``matrix[i][k]`` = items the human put in ``labels[i]`` and the judge in ``labels[k]``."""
    if len(human) != len(judge):
        raise ValueError(f"human and judge values differ in length: {len(human)} != {len(judge)}")
    labs = list(labels) if labels is not None else sorted(set(human) | set(judge))  # type: ignore[type-var]  # one rater's labels are all numbers or all strings
    index = {v: i for i, v in enumerate(labs)}
    m = [[0] * len(labs) for _ in labs]
    for a, b in zip(human, judge, strict=True):
        m[index[a]][index[b]] += 1
    return {"labels": labs, "matrix": m, "rows": "human", "columns": "judge"}


def bootstrap_pairs_ci(human: Values, judge: Values, statistic: Callable[[np.ndarray, np.ndarray], float],
                       *, n_resamples: int = 1000, confidence: float = 0.95, seed: int = 0) -> list[float] | None:
    """Percentile-bootstrap CI of ``statistic(human, judge)`` over items (pairs resampled together); resamples
    where the statistic is undefined (NaN) are skipped; None when fewer than half of them are defined."""
    h, j = _pairs(human, judge)
    rng = np.random.default_rng(seed)
    stats = []
    for _ in range(n_resamples):
        idx = rng.integers(0, h.size, h.size)
        v = statistic(h[idx], j[idx])
        if math.isfinite(v):
            stats.append(v)
    if len(stats) < n_resamples / 2:
        return None
    a = (1 - confidence) / 2
    return [float(np.quantile(stats, a)), float(np.quantile(stats, 1 - a))]


def _kappa(h: np.ndarray, j: np.ndarray) -> float:
    return cohen_kappa(h.tolist(), j.tolist())


def _alpha(level: str) -> Callable[[np.ndarray, np.ndarray], float]:
    return lambda h, j: krippendorff_alpha([h.tolist(), j.tolist()], level=level)


STATISTICS: dict[str, Callable[[np.ndarray, np.ndarray], float]] = {
    "kappa": _kappa,
    "alpha": _alpha("ordinal"),
    "alpha_interval": _alpha("interval"),
    "weighted_kappa": lambda h, j: weighted_kappa(h, j),
    "spearman": lambda h, j: spearman(h, j),
}


def main_statistic(kind: str) -> str:
    """The headline statistic of a scale kind: kappa (binary), alpha (ordinal), spearman (continuous)."""
    if kind not in KINDS:
        raise ValueError(f"unknown scale kind {kind!r}; use one of {', '.join(KINDS)}")
    return {"binary": "kappa", "ordinal": "alpha", "continuous": "spearman"}[kind]


def agreement_report(human: Values, judge: Values, *, kind: str,
                     topics: Sequence[str | None] | None = None, n_resamples: int = 1000, seed: int = 0,
                     min_topic_n: int = 5) -> dict[str, Any]:
    """Agreement of ``judge`` with ``human`` on a ``kind`` scale (see the module doc): ``n``, the headline
    statistic (``kappa`` / ``alpha`` / ``spearman``) and the others of the scale, each ``{"value", "ci"}``,
    ``bias`` (judge − human, mean and CI), ``confusion`` (binary and ordinal) and ``per_topic`` (topics with at
    least ``min_topic_n`` items)."""
    h, j = _pairs(human, judge)
    names = {"binary": ["kappa"], "ordinal": ["alpha", "weighted_kappa"],
             "continuous": ["spearman", "alpha_interval"]}[kind]
    out: dict[str, Any] = {"n": int(h.size), "kind": kind, "main": main_statistic(kind)}
    for name in names:
        fn = STATISTICS[name]
        v = fn(h, j)
        out[name] = {"value": v if math.isfinite(v) else None,
                     "ci": bootstrap_pairs_ci(h, j, fn, n_resamples=n_resamples, seed=seed)}
    out["bias"] = bias(h, j, n_resamples=n_resamples, seed=seed)
    if kind != "continuous":
        out["confusion"] = confusion([_num(x) for x in h], [_num(x) for x in j])
    if topics is not None:
        per: dict[str, Any] = {}
        t = list(topics)
        for topic in sorted({x for x in t if x}):
            idx = [i for i, x in enumerate(t) if x == topic]
            if len(idx) >= min_topic_n:
                per[topic] = agreement_report(h[idx], j[idx], kind=kind, n_resamples=n_resamples, seed=seed)
                per[topic].pop("per_topic", None)
        out["per_topic"] = per
    return out


def paired_difference_ci(human: Values, before: Values, after: Values, *, statistic: str,
                         n_resamples: int = 1000, confidence: float = 0.95, seed: int = 0) -> dict[str, Any]:
    r"""The change of an agreement statistic on the same items: :math:`\Delta = S(h, a) - S(h, b)` with a paired
    percentile-bootstrap CI (each resample draws items once and recomputes both). ``significant`` is true when
    the CI excludes zero."""
    h, b = _pairs(human, before)
    _, a = _pairs(human, after)
    fn = STATISTICS[statistic]
    delta = fn(h, a) - fn(h, b)
    rng = np.random.default_rng(seed)
    diffs = []
    for _ in range(n_resamples):
        idx = rng.integers(0, h.size, h.size)
        d = fn(h[idx], a[idx]) - fn(h[idx], b[idx])
        if math.isfinite(d):
            diffs.append(d)
    ci = None
    if len(diffs) >= n_resamples / 2:
        q = (1 - confidence) / 2
        ci = [float(np.quantile(diffs, q)), float(np.quantile(diffs, 1 - q))]
    return {"delta": float(delta) if math.isfinite(delta) else None, "ci": ci,
            "significant": bool(ci is not None and (ci[0] > 0 or ci[1] < 0))}


def best_threshold(human: Sequence[float], scores: Sequence[float], *, side: str = "at_least"
                   ) -> tuple[float | None, float | None]:
    r"""The decision threshold that agrees best with binary ``human`` labels: ``(c*, kappa)`` where
    :math:`c^* = \arg\max_c \kappa(h, v_c)` over the distinct scores ``c``, with the verdict
    :math:`v_c(s) = [s \ge c]` (``side="at_least"``) or :math:`[s < c]` (``side="below"``). Ties go to the most
    lenient cut (the lowest for ``at_least``, the highest for ``below``). ``(None, kappa)`` when no cut reaches a
    kappa above zero (``kappa`` the best one, None when undefined everywhere). Example: human ``[0, 0, 1, 1]``,
    scores ``[0.1, 0.4, 0.6, 0.9]``, ``at_least`` -> ``(0.6, 1.0)``."""
    if side not in ("at_least", "below"):
        raise ValueError(f"side must be 'at_least' or 'below', got {side!r}")
    h, s = _pairs(human, scores)
    cuts = sorted(set(s.tolist()), reverse=side == "below")
    best, best_k = None, None
    for c in cuts:
        v = (s >= c) if side == "at_least" else (s < c)
        k = _kappa(h, v.astype(float))
        if math.isfinite(k) and (best_k is None or k > best_k + 1e-12):
            best, best_k = float(c), float(k)
    if best_k is None or best_k <= 0:
        return None, best_k
    return best, best_k


def _num(x: float) -> float | int:
    return int(x) if float(x).is_integer() else float(x)
