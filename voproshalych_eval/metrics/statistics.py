"""Aggregation statistics: means with bootstrap confidence intervals, paired tests, percentiles.

Conventions used throughout:

* A *failure* (a judge reply that could not be parsed, an API error, ...) is passed as ``None``
  (``NaN`` is treated the same way). It is never turned into a score: aggregates exclude it and
  report how many there were, per kind when the kinds are given (:mod:`voproshalych_eval.metrics.failures`).
  A ``None`` of kind ``not_applicable`` is not a failure: it is counted in ``n_not_applicable`` only.
* Confidence intervals are percentile-bootstrap intervals computed with a seeded
  ``numpy.random.Generator``; the same inputs and seed always give the same interval.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Sequence
from dataclasses import asdict, dataclass, field
from itertools import product
from typing import Any

import numpy as np

from voproshalych_eval.metrics.failures import count
from voproshalych_eval.metrics.validation import check_consistent_length

__all__ = [
    "Aggregate",
    "EffectSize",
    "PairedTestResult",
    "adjust_pvalues",
    "bootstrap_ci",
    "clean_values",
    "correction_label",
    "paired_bootstrap_test",
    "paired_effect_size",
    "paired_permutation_test",
    "percentiles",
    "summarize",
    "two_sample_permutation_test",
]

#: Significance level used for :attr:`PairedTestResult.significant`.
ALPHA = 0.05

# Upper bound on the number of floats materialised at once by the vectorised resampling.
_MAX_BLOCK_ELEMENTS = 2_000_000


@dataclass(frozen=True)
class Aggregate:
    """A mean over items with its sample size, its failures and a bootstrap confidence interval.

    Attributes:
        value: mean of the valid values, ``None`` when there is none.
        n: number of valid values the mean is computed over.
        n_failed: number of failed items (``None``/``NaN`` inputs that are not ``not_applicable``),
            excluded from the mean.
        ci_low, ci_high: percentile-bootstrap confidence interval of the mean (``None`` when
            ``n == 0``; equal to ``value`` when ``n == 1``).
        n_partial: valid values given by a quorum but not by every vote/model asked.
        n_not_applicable: items the metric does not apply to (neither valid nor failed).
        failure_kinds: ``{kind: n}`` per failure kind (``transport``, ``parse``, …) plus
            ``not_applicable`` and ``empty_answer`` (an empty answer is valid, scored, and counted here).
    """

    value: float | None
    n: int
    n_failed: int
    ci_low: float | None
    ci_high: float | None
    n_partial: int = 0
    n_not_applicable: int = 0
    failure_kinds: dict[str, int] = field(default_factory=dict)

    @property
    def n_total(self) -> int:
        """All items, valid, failed and not applicable."""
        return self.n + self.n_failed + self.n_not_applicable

    def to_dict(self) -> dict[str, Any]:
        """Plain ``dict`` with the keys ``value, n, n_failed, ci_low, ci_high, n_partial, n_not_applicable,
        failure_kinds`` (JSON-serialisable)."""
        return asdict(self)


@dataclass(frozen=True)
class PairedTestResult:
    """Result of a paired comparison of two systems evaluated on the same items.

    Attributes:
        mean_diff: mean of the per-item differences ``b - a`` (positive: ``b`` scores higher).
        ci_low, ci_high: percentile-bootstrap confidence interval of ``mean_diff``.
        p_value: two-sided p-value of the null hypothesis "mean difference is zero".
        n: number of pairs used (pairs where either side failed are dropped).
        significant: ``p_value < 0.05``.
        method: ``"paired_bootstrap"``, ``"paired_permutation"`` (Monte-Carlo sign flips) or
            ``"paired_permutation_exact"`` (all ``2**n`` sign flips enumerated).
    """

    mean_diff: float
    ci_low: float
    ci_high: float
    p_value: float
    n: int
    significant: bool
    method: str

    def to_dict(self) -> dict[str, Any]:
        """Plain ``dict`` of all fields."""
        return asdict(self)


def _is_missing(value: float | None) -> bool:
    return value is None or (isinstance(value, float | np.floating) and math.isnan(value))


def clean_values(values: Iterable[float | None]) -> tuple[np.ndarray, int]:
    """Split values into the valid ones (as a float array) and the number of failures.

    ``None`` and ``NaN`` are failures. Infinite values raise ``ValueError``.
    """
    valid: list[float] = []
    n_failed = 0
    for value in values:
        if _is_missing(value):
            n_failed += 1
            continue
        number = float(value)  # type: ignore[arg-type]
        if math.isnan(number):
            n_failed += 1
            continue
        if math.isinf(number):
            raise ValueError(f"infinite value in metric values: {value!r}")
        valid.append(number)
    return np.asarray(valid, dtype=float), n_failed


def _resolve_statistic(statistic: str | Callable[..., Any]) -> Callable[[np.ndarray], np.ndarray]:
    """Return a function mapping a (resamples, n) array to one statistic per row."""
    if callable(statistic):
        return lambda block: np.asarray(statistic(block, axis=1), dtype=float)
    if statistic == "mean":
        return lambda block: block.mean(axis=1)
    if statistic == "median":
        return lambda block: np.median(block, axis=1)
    raise ValueError(f"unknown statistic {statistic!r}; use 'mean', 'median' or a callable(x, axis)")


def _bootstrap_distribution(
    values: np.ndarray,
    stat: Callable[[np.ndarray], np.ndarray],
    *,
    n_resamples: int,
    rng: np.random.Generator,
) -> np.ndarray:
    """Statistic of ``n_resamples`` resamples with replacement (vectorised, in memory-bounded blocks)."""
    n = values.shape[0]
    block = max(1, _MAX_BLOCK_ELEMENTS // max(n, 1))
    out = np.empty(n_resamples, dtype=float)
    for start in range(0, n_resamples, block):
        stop = min(start + block, n_resamples)
        idx = rng.integers(0, n, size=(stop - start, n))
        out[start:stop] = stat(values[idx])
    return out


def _check_confidence(confidence: float) -> None:
    if not 0.0 < confidence < 1.0:
        raise ValueError(f"confidence must be in (0, 1), got {confidence}")


def _check_resamples(n_resamples: int) -> None:
    if n_resamples < 1:
        raise ValueError(f"n_resamples must be >= 1, got {n_resamples}")


def bootstrap_ci(
    values: Sequence[float] | np.ndarray,
    *,
    statistic: str | Callable[..., Any] = "mean",
    n_resamples: int = 2000,
    confidence: float = 0.95,
    seed: int = 0,
) -> tuple[float, float]:
    r"""Percentile-bootstrap confidence interval of a statistic.

    Draw ``n_resamples`` samples of size ``n`` with replacement, compute the statistic
    :math:`\hat\theta^*_b` of each, and return the empirical quantiles

    .. math:: \left(Q_{\alpha/2}(\hat\theta^*),\; Q_{1-\alpha/2}(\hat\theta^*)\right),
              \quad \alpha = 1 - \text{confidence}.

    Args:
        values: the valid values (no ``None``/``NaN``; use :func:`summarize` for data with failures).
        statistic: ``"mean"`` (default), ``"median"`` or a callable ``f(array, axis=1)``.
        n_resamples: number of bootstrap resamples.
        confidence: confidence level in (0, 1).
        seed: seed of the random generator (deterministic output).

    Returns:
        ``(low, high)`` with ``low <= high``. For a single value ``v`` returns ``(v, v)``.

    Raises:
        ValueError: if ``values`` is empty or contains ``NaN``/``None``/infinity.
    """
    _check_confidence(confidence)
    _check_resamples(n_resamples)
    arr, n_failed = clean_values(values)
    if n_failed:
        raise ValueError("bootstrap_ci got None/NaN values; drop failures first (see summarize)")
    if arr.size == 0:
        raise ValueError("bootstrap_ci needs at least one value")
    stat = _resolve_statistic(statistic)
    if arr.size == 1:
        v = float(stat(arr[None, :])[0])
        return v, v
    rng = np.random.default_rng(seed)
    dist = _bootstrap_distribution(arr, stat, n_resamples=n_resamples, rng=rng)
    alpha = 1.0 - confidence
    low, high = np.quantile(dist, [alpha / 2.0, 1.0 - alpha / 2.0])
    return float(low), float(high)


def summarize(
    values: Sequence[float | None],
    *,
    kinds: Sequence[str | None] | None = None,
    partial: Sequence[bool] | None = None,
    n_resamples: int = 2000,
    confidence: float = 0.95,
    seed: int = 0,
) -> Aggregate:
    r"""Mean over items with sample size, failure counts (per kind) and a bootstrap CI.

    .. math:: \bar x = \frac{1}{n} \sum_{i \in V} x_i, \qquad V = \{i : x_i \ne \text{None}, \text{NaN}\}

    ``None``/``NaN`` entries are failures: excluded from the mean and counted in ``n_failed``.
    ``kinds[i]`` (optional, aligned with ``values``) names item i's failure kind
    (:data:`voproshalych_eval.metrics.failures.KINDS`; a missing kind of a failed item counts as
    ``error``): ``not_applicable`` items are counted in ``n_not_applicable`` instead of ``n_failed``;
    ``empty_answer`` on a valid item is only counted; an ``undecided`` item (a tie between judges) is left out of
    the mean and of ``n_failed`` and counted in ``failure_kinds``. ``partial[i]`` marks a valid value given by a
    quorum short of every vote asked (``n_partial``). When no value is valid the result has
    ``value=None`` and no interval.
    """
    vals = list(values)
    ks: list[str | None] = list(kinds) if kinds is not None else [None] * len(vals)
    parts = list(partial) if partial is not None else [False] * len(vals)
    check_consistent_length(("values", vals), ("kinds", ks), ("partial", parts))
    tally: list[str | None] = []
    n_na = n_partial = 0
    kept: list[float | None] = []
    for v, k, p in zip(vals, ks, parts, strict=True):
        missing = _is_missing(v)
        if missing and k == "not_applicable":
            n_na += 1
            tally.append(k)
            continue
        if missing and k == "undecided":  # a tie between judges: no verdict, not a failure, counted apart
            tally.append(k)
            continue
        kept.append(v)
        if missing:
            tally.append(k or "error")
        else:
            tally.append(k if k == "empty_answer" else None)
            n_partial += bool(p)
    arr, n_failed = clean_values(kept)
    kinds_count = count(tally) if kinds is not None else {}
    if arr.size == 0:
        return Aggregate(value=None, n=0, n_failed=n_failed, ci_low=None, ci_high=None, n_partial=0,
                         n_not_applicable=n_na, failure_kinds=kinds_count)
    mean = float(arr.mean())
    low, high = bootstrap_ci(arr, n_resamples=n_resamples, confidence=confidence, seed=seed)
    # Guard against floating-point noise putting the mean a hair outside the interval.
    low, high = min(low, mean), max(high, mean)
    return Aggregate(value=mean, n=int(arr.size), n_failed=n_failed, ci_low=low, ci_high=high, n_partial=n_partial,
                     n_not_applicable=n_na, failure_kinds=kinds_count)


def _paired_differences(
    a: Sequence[float | None], b: Sequence[float | None]
) -> np.ndarray:
    if len(a) != len(b):
        raise ValueError(f"paired inputs must have the same length, got {len(a)} and {len(b)}")
    diffs = [
        float(y) - float(x)  # type: ignore[arg-type]
        for x, y in zip(a, b, strict=True)
        if not _is_missing(x) and not _is_missing(y)
    ]
    arr = np.asarray(diffs, dtype=float)
    if arr.size == 0:
        raise ValueError("no valid pairs (every pair has a failure on at least one side)")
    if not np.all(np.isfinite(arr)):
        raise ValueError("paired inputs contain infinite values")
    return arr


def _diff_ci(diffs: np.ndarray, *, n_resamples: int, seed: int) -> tuple[float, float]:
    low, high = bootstrap_ci(diffs, n_resamples=n_resamples, confidence=1.0 - ALPHA, seed=seed)
    mean = float(diffs.mean())
    return min(low, mean), max(high, mean)


def paired_bootstrap_test(
    a: Sequence[float | None],
    b: Sequence[float | None],
    *,
    n_resamples: int = 10000,
    seed: int = 0,
) -> PairedTestResult:
    r"""Paired bootstrap test of the mean difference ``b - a``.

    With per-item differences :math:`d_i = b_i - a_i` and observed mean :math:`\bar d`, draw
    bootstrap means :math:`\bar d^*_1..\bar d^*_B`; the two-sided p-value of
    :math:`H_0: E[d] = 0` uses the bootstrap distribution shifted to the null:

    .. math:: p = \frac{1 + \#\{b : |\bar d^*_b - \bar d| \ge |\bar d|\}}{B + 1}

    The 95% CI is the percentile interval of :math:`\bar d^*`. Pairs where either side is
    ``None``/``NaN`` are dropped; ``n`` is the number of pairs used. With a single pair, or a
    mean difference of exactly 0, ``p_value`` is 1.0.
    """
    _check_resamples(n_resamples)
    diffs = _paired_differences(a, b)
    observed = float(diffs.mean())
    low, high = _diff_ci(diffs, n_resamples=n_resamples, seed=seed)
    if diffs.size == 1 or observed == 0.0:
        # A single pair carries no evidence; a zero mean difference is never extreme.
        p_value = 1.0
    else:
        rng = np.random.default_rng(seed)
        dist = _bootstrap_distribution(diffs, _resolve_statistic("mean"), n_resamples=n_resamples, rng=rng)
        extreme = np.abs(dist - observed) >= abs(observed) - 1e-12
        p_value = float((1 + int(extreme.sum())) / (n_resamples + 1))
    p_value = min(1.0, p_value)
    return PairedTestResult(
        mean_diff=observed,
        ci_low=low,
        ci_high=high,
        p_value=p_value,
        n=int(diffs.size),
        significant=p_value < ALPHA,
        method="paired_bootstrap",
    )


def paired_permutation_test(
    a: Sequence[float | None],
    b: Sequence[float | None],
    *,
    n_resamples: int = 10000,
    seed: int = 0,
) -> PairedTestResult:
    r"""Paired sign-flip permutation test of the mean difference ``b - a``.

    Under :math:`H_0` the per-item differences :math:`d_i = b_i - a_i` are symmetric around 0,
    so each sign can be flipped. With :math:`T(s) = \frac1n \sum_i s_i d_i`, :math:`s_i \in \{\pm1\}`:

    .. math:: p = \Pr_s\left[|T(s)| \ge |\bar d|\right]

    If ``2**n <= n_resamples`` all sign vectors are enumerated (exact test,
    ``method="paired_permutation_exact"``); otherwise ``n_resamples`` random sign vectors are drawn
    and :math:`p = (1 + \#\text{extreme}) / (B + 1)` (``method="paired_permutation"``).
    The CI is the 95% percentile-bootstrap interval of the mean difference. Pairs where either side
    is ``None``/``NaN`` are dropped; ``n`` is the number of pairs used.
    """
    _check_resamples(n_resamples)
    diffs = _paired_differences(a, b)
    n = int(diffs.size)
    observed = float(diffs.mean())
    low, high = _diff_ci(diffs, n_resamples=n_resamples, seed=seed)
    threshold = abs(observed) - 1e-12 * max(1.0, float(np.abs(diffs).max()))
    if 2**n <= n_resamples:
        signs = np.array(list(product((1.0, -1.0), repeat=n)), dtype=float)
        stats = signs @ diffs / n
        p_value = float(np.mean(np.abs(stats) >= threshold))
        method = "paired_permutation_exact"
    else:
        rng = np.random.default_rng(seed)
        count = 0
        block = max(1, _MAX_BLOCK_ELEMENTS // n)
        for start in range(0, n_resamples, block):
            size = min(block, n_resamples - start)
            signs = rng.choice(np.array([-1.0, 1.0]), size=(size, n))
            stats = signs @ diffs / n
            count += int(np.sum(np.abs(stats) >= threshold))
        p_value = (1 + count) / (n_resamples + 1)
        method = "paired_permutation"
    p_value = min(1.0, p_value)
    return PairedTestResult(
        mean_diff=observed,
        ci_low=low,
        ci_high=high,
        p_value=p_value,
        n=n,
        significant=p_value < ALPHA,
        method=method,
    )


def _percentile_key(q: float) -> str:
    return f"p{int(q)}" if float(q).is_integer() else f"p{q:g}"


def percentiles(
    values: Sequence[float | None],
    *,
    qs: Sequence[float] = (50, 95, 99),
) -> dict[str, float]:
    """Percentiles (linear interpolation, ``numpy.percentile`` default) of the valid values.

    Keys are ``p50``, ``p95``, ``p99`` for the default ``qs`` (``p99.9`` for ``q=99.9``).
    ``None``/``NaN`` entries are ignored. Raises ``ValueError`` when no value is valid or a ``q``
    is outside [0, 100].
    """
    arr, _ = clean_values(values)
    if arr.size == 0:
        raise ValueError("percentiles need at least one valid value")
    for q in qs:
        if not 0 <= q <= 100:
            raise ValueError(f"percentile must be in [0, 100], got {q}")
    result = np.percentile(arr, list(qs))
    return {_percentile_key(q): float(v) for q, v in zip(qs, result, strict=True)}


#: multiple-comparison corrections :func:`adjust_pvalues` accepts (statsmodels ``multipletests`` names)
CORRECTIONS = {"holm": "Holm–Bonferroni (family-wise error rate)", "fdr_bh": "Benjamini–Hochberg (false discovery rate)"}
#: short names of the corrections (ru, en) for column headers and chart hovers
CORRECTION_LABELS = {"holm": ("Холм", "Holm"), "fdr_bh": ("Бенджамини–Хохберг", "Benjamini–Hochberg")}


def correction_label(method: str, lang: str = "en") -> str:
    """The short name of a correction of :data:`CORRECTIONS` (``holm`` -> ``Holm``)."""
    ru, en = CORRECTION_LABELS.get(method, (method, method))
    return ru if lang == "ru" else en


def adjust_pvalues(p_values: Sequence[float | None], *, method: str = "holm") -> list[float | None]:
    r"""p-values adjusted for testing several metrics at once (``statsmodels.stats.multitest.multipletests``).

    ``holm`` (default) controls the family-wise error rate: with the m raw p-values sorted
    :math:`p_{(1)} \le \dots \le p_{(m)}`,

    .. math:: \tilde p_{(i)} = \min\Bigl(1, \max_{j \le i} (m - j + 1)\, p_{(j)}\Bigr)

    ``fdr_bh`` (Benjamini–Hochberg) controls the false discovery rate instead. ``None`` entries (no test)
    stay ``None`` and do not count in m. The result is in input order; each adjusted value is >= its raw one.

    >>> adjust_pvalues([0.01, 0.04, None, 0.03])
    [0.03, 0.06, None, 0.06]
    """
    if method not in CORRECTIONS:
        raise ValueError(f"unknown correction {method!r}; use one of {', '.join(CORRECTIONS)}")
    idx = [i for i, p in enumerate(p_values) if p is not None and not math.isnan(float(p))]
    out: list[float | None] = [None] * len(p_values)
    if not idx:
        return out
    from statsmodels.stats.multitest import multipletests  # heavy: defers statsmodels

    raw = [float(p_values[i]) for i in idx]  # type: ignore[arg-type]
    for p in raw:
        if not 0.0 <= p <= 1.0:
            raise ValueError(f"p-values must be in [0, 1], got {p}")
    adjusted = multipletests(raw, alpha=ALPHA, method=method)[1]
    for i, v in zip(idx, adjusted, strict=True):
        out[i] = round(float(v), 15)
    return out


@dataclass(frozen=True)
class EffectSize:
    """Standardised paired effect size (Cohen's :math:`d_z`) with a percentile-bootstrap CI."""

    d_z: float | None
    ci_low: float | None
    ci_high: float | None
    n: int

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def paired_effect_size(
    a: Sequence[float | None],
    b: Sequence[float | None],
    *,
    n_resamples: int = 2000,
    confidence: float = 0.95,
    seed: int = 0,
) -> EffectSize:
    r"""Cohen's :math:`d_z` of the paired differences :math:`d_i = b_i - a_i` with a bootstrap CI.

    .. math:: d_z = \frac{\bar d}{s_d}, \qquad s_d = \sqrt{\tfrac{1}{n-1}\sum_i (d_i - \bar d)^2}

    Unit-free, so metrics on different scales (shares, 1–5 scores, BLEU points) compare; by convention
    |d_z| ≈ 0.2 small, 0.5 medium, 0.8 large. Pairs with a failure on either side are dropped. ``None``
    (no effect size) with fewer than 2 pairs or when every difference is the same (``s_d = 0``); the CI is
    the percentile interval over resamples whose :math:`s_d > 0`.
    """
    _check_confidence(confidence)
    _check_resamples(n_resamples)
    diffs = _paired_differences(a, b)
    n = int(diffs.size)
    sd = float(diffs.std(ddof=1)) if n >= 2 else 0.0
    tiny = 1e-12 * max(1.0, float(np.abs(diffs).max()))  # rounding noise is not spread
    if n < 2 or sd <= tiny:
        return EffectSize(None, None, None, n)
    dz = float(diffs.mean()) / sd
    rng = np.random.default_rng(seed)
    idx = rng.integers(0, n, size=(n_resamples, n))
    res = diffs[idx]
    sds = res.std(axis=1, ddof=1)
    ok = sds > tiny
    if not ok.any():
        return EffectSize(dz, None, None, n)
    dist = res.mean(axis=1)[ok] / sds[ok]
    alpha = 1.0 - confidence
    low, high = np.quantile(dist, [alpha / 2.0, 1.0 - alpha / 2.0])
    return EffectSize(dz, min(float(low), dz), max(float(high), dz), n)


def proportion_ci(hits: int, n: int, *, confidence: float = 0.95) -> tuple[float, float] | tuple[None, None]:
    r"""Wilson score interval of a proportion ``hits / n`` (``statsmodels.stats.proportion.proportion_confint``,
    ``method="wilson"``).

    .. math:: \frac{\hat p + z^2/2n \pm z\sqrt{\hat p(1-\hat p)/n + z^2/4n^2}}{1 + z^2/n}

    ``(None, None)`` when ``n == 0``. Unlike the normal approximation it stays inside [0, 1] and is not
    degenerate at ``hits == n`` (a perfect score on 30 items is [0.886, 1.0], not [1, 1]).
    """
    _check_confidence(confidence)
    if n < 0 or hits < 0 or hits > n:
        raise ValueError(f"need 0 <= hits <= n, got hits={hits}, n={n}")
    if n == 0:
        return None, None
    from statsmodels.stats.proportion import proportion_confint  # heavy: defers statsmodels

    lo, hi = proportion_confint(int(hits), int(n), alpha=1 - confidence, method="wilson")
    # at hits == n (0) the Wilson bound is exactly 1 (0); the closed form leaves a rounding error
    return (0.0 if hits == 0 else float(max(0.0, lo))), (1.0 if hits == n else float(min(1.0, hi)))
@dataclass(frozen=True)
class TwoSampleTestResult:
    """Result of comparing the means of two independent samples (``b`` minus ``a``)."""

    mean_diff: float
    ci_low: float
    ci_high: float
    p_value: float
    n_a: int
    n_b: int
    significant: bool
    method: str

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def two_sample_permutation_test(
    a: Sequence[float | None],
    b: Sequence[float | None],
    *,
    n_resamples: int = 10000,
    seed: int = 0,
) -> TwoSampleTestResult:
    r"""Permutation test of the difference of means of two independent samples, :math:`\bar b - \bar a`.

    Under :math:`H_0` the labels ``a`` / ``b`` are exchangeable: the pooled values are reshuffled
    ``n_resamples`` times and :math:`p = (1 + \#\{|\bar b^* - \bar a^*| \ge |\bar b - \bar a|\}) / (B + 1)`.
    The CI is the 95% percentile-bootstrap interval of the difference (each sample resampled on its own).
    For 0/1 values it compares two rates (e.g. the effective answered rate before vs after a change).
    Failures (``None``/``NaN``) are dropped; each sample needs at least one value.
    """
    _check_resamples(n_resamples)
    xa, _ = clean_values(a)
    xb, _ = clean_values(b)
    if xa.size == 0 or xb.size == 0:
        raise ValueError(f"both samples need values (got {xa.size} and {xb.size})")
    observed = float(xb.mean() - xa.mean())
    rng = np.random.default_rng(seed)
    pooled = np.concatenate([xa, xb])
    threshold = abs(observed) - 1e-12 * max(1.0, float(np.abs(pooled).max()))
    count = 0
    block = max(1, _MAX_BLOCK_ELEMENTS // pooled.size)
    for start in range(0, n_resamples, block):
        size = min(block, n_resamples - start)
        perm = rng.permuted(np.broadcast_to(pooled, (size, pooled.size)), axis=1)
        stats = perm[:, xa.size:].mean(axis=1) - perm[:, :xa.size].mean(axis=1)
        count += int(np.sum(np.abs(stats) >= threshold))
    p_value = (1 + count) / (n_resamples + 1)
    boot = (xb[rng.integers(0, xb.size, size=(n_resamples, xb.size))].mean(axis=1)
            - xa[rng.integers(0, xa.size, size=(n_resamples, xa.size))].mean(axis=1))
    low, high = np.quantile(boot, [0.025, 0.975])
    return TwoSampleTestResult(observed, min(float(low), observed), max(float(high), observed), p_value,
                               int(xa.size), int(xb.size), p_value < ALPHA, "two_sample_permutation")
