r"""Classification and inter-rater agreement metrics (judge quality, Yes/No verdicts).

* :func:`binary_classification_report` - accuracy, precision, recall, F1 and the confusion matrix
  of a binary classifier (e.g. a pass/fail judge against human labels).
* :func:`cohen_kappa` - chance-corrected agreement of two raters.
* :func:`fleiss_kappa` - chance-corrected agreement of a fixed number of raters per item.
* :func:`misclassification_adjusted_rate` - a rate from a model's decisions with the model's estimated
  errors carried into a confidence interval.

Failed predictions (an unparseable judge reply) must be removed by the caller and reported as a
count; these functions never turn a failure into a label.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Hashable, Sequence
from typing import Any

import numpy as np

__all__ = ["binary_classification_report", "cohen_kappa", "fleiss_kappa", "misclassification_adjusted_rate"]


def _as_binary(values: Sequence[Any], name: str) -> list[bool]:
    out: list[bool] = []
    for i, v in enumerate(values):
        if v is None or isinstance(v, str) or v not in (0, 1):
            raise ValueError(f"{name}[{i}] = {v!r} is not a binary label (True/False or 1/0)")
        out.append(bool(v))
    return out


def _safe_div(num: float, den: float) -> float:
    return num / den if den else 0.0


def binary_classification_report(y_true: Sequence[Any], y_pred: Sequence[Any]) -> dict[str, Any]:
    r"""Binary classification metrics, the positive class being ``True``/``1``.

    .. math::
        \text{accuracy} = \frac{TP + TN}{n},\quad
        \text{precision} = \frac{TP}{TP + FP},\quad
        \text{recall} = \frac{TP}{TP + FN},\quad
        F_1 = \frac{2 \cdot \text{precision} \cdot \text{recall}}{\text{precision} + \text{recall}}

    A zero denominator gives 0.0 (as ``sklearn.metrics`` with ``zero_division=0``): precision is
    0.0 when nothing was predicted positive, recall is 0.0 when there is no positive label, F1 is
    0.0 when both are 0.

    Labels must be ``True``/``False`` or ``1``/``0`` (strings and ``None`` raise ``ValueError``).

    Returns:
        ``{"accuracy", "precision", "recall", "f1_score": float in [0, 1],
        "confusion_matrix": {"tp", "fp", "tn", "fn": int}, "n": int}``.
    """
    if len(y_true) != len(y_pred):
        raise ValueError(f"y_true and y_pred differ in length: {len(y_true)} != {len(y_pred)}")
    if len(y_true) == 0:
        raise ValueError("binary_classification_report needs at least one item")
    t = _as_binary(y_true, "y_true")
    p = _as_binary(y_pred, "y_pred")
    tp = sum(1 for a, b in zip(t, p, strict=True) if a and b)
    tn = sum(1 for a, b in zip(t, p, strict=True) if not a and not b)
    fp = sum(1 for a, b in zip(t, p, strict=True) if not a and b)
    fn = sum(1 for a, b in zip(t, p, strict=True) if a and not b)
    n = len(t)
    precision = _safe_div(tp, tp + fp)
    recall = _safe_div(tp, tp + fn)
    f1 = _safe_div(2 * tp, 2 * tp + fp + fn)
    return {
        "accuracy": (tp + tn) / n,
        "precision": precision,
        "recall": recall,
        "f1_score": f1,
        "confusion_matrix": {"tp": tp, "fp": fp, "tn": tn, "fn": fn},
        "n": n,
    }


def cohen_kappa(a: Sequence[Hashable], b: Sequence[Hashable]) -> float:
    r"""Cohen's kappa of two raters over the same items (any hashable labels).

    .. math:: \kappa = \frac{p_o - p_e}{1 - p_e},\quad
              p_o = \frac{1}{n}\sum_i \mathbb{1}[a_i = b_i],\quad
              p_e = \sum_c \frac{n^a_c}{n}\frac{n^b_c}{n}

    Range [-1, 1]; agrees with ``sklearn.metrics.cohen_kappa_score``. Degenerate case: when both
    raters always give the same single label, :math:`p_e = 1` and the formula is 0/0; this function
    returns 1.0 (perfect agreement) where sklearn returns NaN.
    """
    if len(a) != len(b):
        raise ValueError(f"rater sequences differ in length: {len(a)} != {len(b)}")
    n = len(a)
    if n == 0:
        raise ValueError("cohen_kappa needs at least one item")
    p_o = sum(1 for x, y in zip(a, b, strict=True) if x == y) / n
    count_a = Counter(a)
    count_b = Counter(b)
    p_e = sum(count_a[c] * count_b.get(c, 0) for c in count_a) / (n * n)
    if p_e >= 1.0:
        return 1.0
    kappa = (p_o - p_e) / (1.0 - p_e)
    return max(-1.0, min(1.0, kappa))


def fleiss_kappa(ratings: Sequence[Sequence[Hashable]]) -> float:
    r"""Fleiss' kappa for N items each rated by the same number m >= 2 of raters.

    ``ratings[i]`` lists the m labels item i received (rater identity does not matter).
    With :math:`n_{ij}` = number of raters giving item i category j:

    .. math::
        P_i = \frac{\sum_j n_{ij}^2 - m}{m(m-1)},\quad
        \bar P = \frac{1}{N}\sum_i P_i,\quad
        p_j = \frac{1}{N m}\sum_i n_{ij},\quad
        \bar P_e = \sum_j p_j^2,\quad
        \kappa = \frac{\bar P - \bar P_e}{1 - \bar P_e}

    Range: at most 1 (negative values mean worse than chance). If every rating is the same single
    category, :math:`\bar P_e = 1` and the result is defined as 1.0.
    """
    if not ratings:
        raise ValueError("fleiss_kappa needs at least one item")
    m = len(ratings[0])
    if m < 2:
        raise ValueError("fleiss_kappa needs at least 2 ratings per item")
    for i, row in enumerate(ratings):
        if len(row) != m:
            raise ValueError(f"item {i} has {len(row)} ratings, expected {m} (same number for every item)")
    n_items = len(ratings)
    totals: Counter[Hashable] = Counter()
    p_sum = 0.0
    for row in ratings:
        counts = Counter(row)
        totals.update(counts)
        p_sum += (sum(c * c for c in counts.values()) - m) / (m * (m - 1))
    p_bar = p_sum / n_items
    p_e = sum((c / (n_items * m)) ** 2 for c in totals.values())
    if p_e >= 1.0:
        return 1.0
    return min(1.0, (p_bar - p_e) / (1.0 - p_e))


def misclassification_adjusted_rate(
    *,
    n_total: int,
    n_known_positive: int,
    n_predicted_positive: int,
    n_predicted_negative: int,
    tp: int,
    fp: int,
    fn: int,
    tn: int,
    confidence: float = 0.95,
    n_draws: int = 4000,
    seed: int = 0,
) -> dict[str, Any]:
    r"""A rate whose rows were partly classified by a model, with the model's errors carried into a CI.

    ``n_known_positive`` rows are positive by a person's label (no error); ``n_predicted_positive`` /
    ``n_predicted_negative`` rows were classified by the model; ``tp, fp, fn, tn`` is the model's binary
    confusion matrix estimated by cross-validation on the labelled sample. With
    :math:`\mathrm{PPV} = P(\text{positive} \mid \text{predicted positive})` and
    :math:`\mathrm{FOR} = P(\text{positive} \mid \text{predicted negative})`:

    .. math:: r = \frac{K + P\cdot\mathrm{PPV} + N\cdot\mathrm{FOR}}{T}

    PPV and FOR are drawn from their Jeffreys posteriors :math:`\mathrm{Beta}(tp+\tfrac12, fp+\tfrac12)`
    and :math:`\mathrm{Beta}(fn+\tfrac12, tn+\tfrac12)` (``n_draws`` Monte-Carlo draws, fixed ``seed``);
    ``value`` is the median of :math:`r` over the draws, ``ci_low``/``ci_high`` its equal-tailed percentiles.
    ``classified`` is the plain share :math:`(K + P) / T` the model's decisions give. The rows are the whole
    log (a census): only the classification is uncertain, so with a perfect and large labelled sample the
    interval shrinks to ``classified``. ``n`` is the size of the labelled sample (``tp + fp + fn + tn``).
    """
    counts = {"n_total": n_total, "n_known_positive": n_known_positive, "n_predicted_positive": n_predicted_positive,
              "n_predicted_negative": n_predicted_negative, "tp": tp, "fp": fp, "fn": fn, "tn": tn}
    bad = {k: v for k, v in counts.items() if int(v) < 0}
    if bad:
        raise ValueError(f"counts must be >= 0, got {bad}")
    if n_known_positive + n_predicted_positive + n_predicted_negative > n_total:
        raise ValueError("known + predicted rows exceed n_total")
    if not 0.0 < confidence < 1.0:
        raise ValueError(f"confidence must be in (0, 1), got {confidence}")
    n = int(tp + fp + fn + tn)
    if n_total == 0:
        return {"value": None, "ci_low": None, "ci_high": None, "classified": None, "n": n}
    rng = np.random.default_rng(seed)
    ppv = rng.beta(tp + 0.5, fp + 0.5, size=n_draws)
    fo_r = rng.beta(fn + 0.5, tn + 0.5, size=n_draws)
    r = (n_known_positive + n_predicted_positive * ppv + n_predicted_negative * fo_r) / n_total
    alpha = (1 - confidence) / 2
    return {"value": float(np.median(r)), "ci_low": float(np.quantile(r, alpha)),
            "ci_high": float(np.quantile(r, 1 - alpha)),
            "classified": float((n_known_positive + n_predicted_positive) / n_total), "n": n}
