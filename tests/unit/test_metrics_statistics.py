"""Tests of voproshalych_eval.metrics.statistics."""

from __future__ import annotations

import math

import numpy as np
import pytest

from voproshalych_eval.metrics.statistics import (
    Aggregate,
    PairedTestResult,
    bootstrap_ci,
    clean_values,
    paired_bootstrap_test,
    paired_permutation_test,
    percentiles,
    summarize,
)


def test_clean_values_counts_none_and_nan_as_failures() -> None:
    arr, n_failed = clean_values([1.0, None, float("nan"), 0.5, np.nan])
    assert arr.tolist() == [1.0, 0.5]
    assert n_failed == 3


def test_clean_values_rejects_infinity() -> None:
    with pytest.raises(ValueError, match="infinite"):
        clean_values([1.0, float("inf")])


def test_bootstrap_ci_single_value_and_empty() -> None:
    assert bootstrap_ci([0.7]) == (0.7, 0.7)
    with pytest.raises(ValueError):
        bootstrap_ci([])
    with pytest.raises(ValueError):
        bootstrap_ci([1.0, None])  # type: ignore[list-item]


def test_bootstrap_ci_constant_values() -> None:
    assert bootstrap_ci([0.3] * 10) == pytest.approx((0.3, 0.3))


def test_bootstrap_ci_deterministic_and_contains_mean() -> None:
    rng = np.random.default_rng(42)
    values = rng.uniform(0, 1, size=200)
    ci1 = bootstrap_ci(values, seed=1)
    ci2 = bootstrap_ci(values, seed=1)
    assert ci1 == ci2
    low, high = ci1
    assert low <= values.mean() <= high
    assert 0.0 <= low <= high <= 1.0
    # Width close to the normal approximation 2 * 1.96 * sd / sqrt(n).
    expected_width = 2 * 1.96 * values.std(ddof=1) / math.sqrt(values.size)
    assert (high - low) == pytest.approx(expected_width, rel=0.15)


def test_bootstrap_ci_higher_confidence_is_wider() -> None:
    values = np.random.default_rng(0).normal(size=100)
    l90, h90 = bootstrap_ci(values, confidence=0.90)
    l99, h99 = bootstrap_ci(values, confidence=0.99)
    assert l99 <= l90 and h90 <= h99


def test_bootstrap_ci_median_and_callable() -> None:
    values = [1.0, 2.0, 3.0, 4.0, 100.0]
    low, high = bootstrap_ci(values, statistic="median")
    assert 1.0 <= low <= high <= 100.0
    low2, high2 = bootstrap_ci(values, statistic=np.median)
    assert (low2, high2) == (low, high)
    with pytest.raises(ValueError):
        bootstrap_ci(values, statistic="mode")


def test_bootstrap_ci_bad_arguments() -> None:
    with pytest.raises(ValueError):
        bootstrap_ci([1.0, 2.0], confidence=1.0)
    with pytest.raises(ValueError):
        bootstrap_ci([1.0, 2.0], n_resamples=0)


def test_bootstrap_ci_large_input_blocks() -> None:
    values = np.random.default_rng(3).uniform(size=5000)
    low, high = bootstrap_ci(values, n_resamples=1000)
    assert low < values.mean() < high


def test_summarize_excludes_failures() -> None:
    agg = summarize([1.0, 0.0, None, 1.0, float("nan")])
    assert isinstance(agg, Aggregate)
    assert agg.value == pytest.approx(2 / 3)
    assert agg.n == 3
    assert agg.n_failed == 2
    assert agg.n_total == 5
    assert agg.ci_low is not None and agg.ci_high is not None
    assert 0.0 <= agg.ci_low <= agg.value <= agg.ci_high <= 1.0


def test_summarize_all_failed_and_empty() -> None:
    agg = summarize([None, None])
    assert agg == Aggregate(value=None, n=0, n_failed=2, ci_low=None, ci_high=None)
    assert summarize([]) == Aggregate(value=None, n=0, n_failed=0, ci_low=None, ci_high=None)


def test_summarize_single_value() -> None:
    agg = summarize([0.4, None])
    assert agg.value == agg.ci_low == agg.ci_high == 0.4
    assert agg.n == 1 and agg.n_failed == 1


def test_aggregate_to_dict() -> None:
    agg = summarize([0.2, 0.4])
    d = agg.to_dict()
    assert set(d) == {"value", "n", "n_failed", "ci_low", "ci_high", "n_partial", "n_not_applicable", "failure_kinds"}
    assert d["value"] == pytest.approx(0.3)
    assert d["n"] == 2


def test_paired_tests_detect_clear_difference() -> None:
    rng = np.random.default_rng(0)
    a = rng.uniform(0.3, 0.5, size=60)
    b = a + 0.2 + rng.normal(0, 0.02, size=60)
    for fn in (paired_bootstrap_test, paired_permutation_test):
        res = fn(list(a), list(b), n_resamples=2000)
        assert isinstance(res, PairedTestResult)
        assert res.mean_diff == pytest.approx(float(np.mean(b - a)))
        assert res.mean_diff > 0
        assert res.ci_low <= res.mean_diff <= res.ci_high
        assert res.ci_low > 0
        assert 0.0 < res.p_value < 0.01
        assert res.significant
        assert res.n == 60


def test_paired_tests_no_difference() -> None:
    rng = np.random.default_rng(1)
    a = rng.uniform(size=50)
    noise = rng.normal(0, 0.1, size=50)
    b = a + noise - noise.mean()  # mean difference exactly ~0
    for fn in (paired_bootstrap_test, paired_permutation_test):
        res = fn(list(a), list(b), n_resamples=2000)
        assert res.p_value > 0.5
        assert not res.significant
        assert 0.0 <= res.p_value <= 1.0


def test_paired_tests_identical_inputs() -> None:
    a = [0.1, 0.5, 0.9, 0.3]
    for fn in (paired_bootstrap_test, paired_permutation_test):
        res = fn(a, a)
        assert res.mean_diff == 0.0
        assert res.p_value == 1.0
        assert not res.significant


def test_paired_tests_drop_failed_pairs() -> None:
    a = [1.0, None, 3.0, 4.0, float("nan")]
    b = [2.0, 5.0, None, 6.0, 1.0]
    for fn in (paired_bootstrap_test, paired_permutation_test):
        res = fn(a, b)
        assert res.n == 2
        assert res.mean_diff == pytest.approx(1.5)


def test_paired_tests_errors() -> None:
    for fn in (paired_bootstrap_test, paired_permutation_test):
        with pytest.raises(ValueError):
            fn([1.0, 2.0], [1.0])
        with pytest.raises(ValueError):
            fn([None], [1.0])


def test_paired_bootstrap_single_pair_is_not_significant() -> None:
    res = paired_bootstrap_test([0.0], [1.0])
    assert res.p_value == 1.0 and not res.significant


def test_paired_permutation_exact_matches_scipy() -> None:
    scipy_stats = pytest.importorskip("scipy.stats")
    a = np.array([0.61, 0.72, 0.55, 0.80, 0.47, 0.66, 0.59, 0.70])
    b = np.array([0.68, 0.75, 0.52, 0.88, 0.55, 0.71, 0.66, 0.69])
    res = paired_permutation_test(list(a), list(b), n_resamples=10000)
    assert res.method == "paired_permutation_exact"
    ref = scipy_stats.permutation_test(
        (b - a,),
        lambda d, axis: np.mean(d, axis=axis),
        permutation_type="samples",
        n_resamples=np.inf,
        alternative="two-sided",
    )
    assert res.p_value == pytest.approx(ref.pvalue, abs=1e-12)


def test_paired_permutation_exact_hand_computed() -> None:
    # d = (1, 1, 1): of the 8 sign vectors only (+,+,+) and (-,-,-) reach |mean| >= 1.
    res = paired_permutation_test([0, 0, 0], [1, 1, 1])
    assert res.method == "paired_permutation_exact"
    assert res.p_value == pytest.approx(2 / 8)


def test_paired_permutation_monte_carlo_close_to_exact() -> None:
    rng = np.random.default_rng(5)
    a = rng.uniform(size=12)
    b = a + rng.normal(0.05, 0.1, size=12)
    exact = paired_permutation_test(list(a), list(b), n_resamples=5000)
    assert exact.method == "paired_permutation_exact"
    mc = paired_permutation_test(list(a), list(b), n_resamples=4000)
    assert mc.method == "paired_permutation"
    assert mc.p_value == pytest.approx(exact.p_value, abs=0.03)


def test_percentiles_keys_and_values() -> None:
    values = list(range(1, 101))
    p = percentiles(values)
    assert set(p) == {"p50", "p95", "p99"}
    assert p["p50"] == pytest.approx(np.percentile(values, 50))
    assert p["p95"] == pytest.approx(np.percentile(values, 95))
    assert p["p99"] == pytest.approx(np.percentile(values, 99))
    assert p["p50"] <= p["p95"] <= p["p99"]


def test_percentiles_custom_qs_and_failures() -> None:
    p = percentiles([1.0, None, 3.0], qs=(0, 100, 99.9))
    assert p == {"p0": 1.0, "p100": 3.0, "p99.9": pytest.approx(2.998)}
    with pytest.raises(ValueError):
        percentiles([None])
    with pytest.raises(ValueError):
        percentiles([1.0], qs=(101,))


def test_summarize_counts_failure_kinds_partial_and_not_applicable() -> None:
    values = [1.0, 0.0, None, None, None, 0.5, None]
    kinds = [None, "empty_answer", "transport", "parse", "not_applicable", None, None]
    partial = [False, False, False, False, False, True, False]
    agg = summarize(values, kinds=kinds, partial=partial, n_resamples=100)
    assert agg.value == pytest.approx(0.5)  # the empty answer is scored 0, never left out
    assert (agg.n, agg.n_failed, agg.n_not_applicable, agg.n_partial) == (3, 3, 1, 1)
    fk = agg.failure_kinds
    assert (fk["transport"], fk["parse"], fk["error"], fk["not_applicable"], fk["empty_answer"]) == (1, 1, 1, 1, 1)
    assert agg.n_total == 7
    with pytest.raises(ValueError, match="differ in length"):
        summarize([1.0], kinds=[None, None])


def test_holm_and_bh_adjusted_pvalues_by_hand() -> None:
    from voproshalych_eval.metrics.statistics import adjust_pvalues

    raw = [0.01, 0.04, 0.03, 0.20]
    # Holm: sorted 0.01, 0.03, 0.04, 0.20 -> 4*0.01, 3*0.03, 2*0.04 (monotone max), 1*0.20
    assert adjust_pvalues(raw) == pytest.approx([0.04, 0.09, 0.09, 0.20])
    # Benjamini–Hochberg: p_(i) * m / i, monotone from the top: 0.04, 0.0533, 0.0533, 0.20
    assert adjust_pvalues(raw, method="fdr_bh") == pytest.approx([0.04, 0.16 / 3, 0.16 / 3, 0.20])
    assert adjust_pvalues([None, 0.5]) == [None, 0.5]
    with pytest.raises(ValueError, match="unknown correction"):
        adjust_pvalues(raw, method="bonferroni-ish")


def test_paired_effect_size_is_cohens_dz() -> None:
    from voproshalych_eval.metrics.statistics import paired_effect_size

    a = [0.1, 0.2, 0.3, 0.4, 0.5, 0.6]
    b = [0.2, 0.25, 0.45, 0.5, 0.55, 0.8]
    d = np.subtract(b, a)
    eff = paired_effect_size(a, b, n_resamples=500)
    assert eff.d_z == pytest.approx(d.mean() / d.std(ddof=1)) and eff.n == 6
    assert eff.ci_low <= eff.d_z <= eff.ci_high
    assert paired_effect_size([0.1, 0.2], [0.2, 0.3]).d_z is None  # every difference equal: s_d = 0
