"""The unpaired permutation test used by the re-check of addressed gaps."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from voproshalych_eval.metrics.statistics import two_sample_permutation_test


def test_difference_of_rates_and_agreement_with_scipy() -> None:
    a = [0.0] * 30 + [1.0] * 10  # 25% answered before
    b = [0.0] * 10 + [1.0] * 30  # 75% after
    res = two_sample_permutation_test(a, b, n_resamples=5000)
    assert res.mean_diff == pytest.approx(0.5)
    assert res.ci_low <= 0.5 <= res.ci_high and res.n_a == res.n_b == 40
    ref = stats.permutation_test((np.array(b), np.array(a)), lambda x, y: x.mean() - y.mean(), n_resamples=5000,
                                 permutation_type="independent", random_state=0)
    assert res.significant and res.p_value < 0.01 and ref.pvalue < 0.01


def test_no_difference_and_failures_dropped() -> None:
    res = two_sample_permutation_test([1.0, 0.0, 1.0, None], [0.0, 1.0, 1.0], n_resamples=2000)
    assert res.mean_diff == pytest.approx(0.0) and res.n_a == 3 and not res.significant and res.p_value > 0.5
    with pytest.raises(ValueError, match="both samples"):
        two_sample_permutation_test([None], [1.0])
