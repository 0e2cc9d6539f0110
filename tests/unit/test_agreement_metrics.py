"""Agreement metrics against hand-computed values and reference libraries."""

from __future__ import annotations

import math

import pytest
from sklearn.metrics import cohen_kappa_score

from voproshalych_eval.metrics.agreement import (
    agreement_report,
    bias,
    confusion,
    krippendorff_alpha,
    paired_difference_ci,
    spearman,
    weighted_kappa,
)


def test_krippendorff_alpha_nominal_hand_computed() -> None:
    # coincidences: o00=2, o01=o10=1, o11=4; n0=3, n1=5, n=8
    # D_o = 2/8, D_e = 2*3*5 / (8*7) = 30/56 -> alpha = 1 - (2/8)/(30/56) = 16/30
    assert krippendorff_alpha([[0, 0, 1, 1], [0, 1, 1, 1]], level="nominal") == pytest.approx(16 / 30)


def test_krippendorff_alpha_missing_and_constant() -> None:
    assert krippendorff_alpha([[1, 2, None, 4], [1, 2, 3, 4]], level="ordinal") == pytest.approx(1.0)
    assert math.isnan(krippendorff_alpha([[3, 3, 3], [3, 3, 3]]))
    with pytest.raises(ValueError, match="two raters"):
        krippendorff_alpha([[1, 2, 3]])


def test_weighted_kappa_matches_sklearn_and_spearman() -> None:
    h, j = [1, 2, 3, 4, 5, 3, 2], [1, 3, 3, 5, 5, 2, 2]
    assert weighted_kappa(h, j) == pytest.approx(cohen_kappa_score(h, j, weights="quadratic"))
    assert spearman([1, 2, 3, 4], [10, 20, 30, 40]) == pytest.approx(1.0)
    assert math.isnan(spearman([1, 1, 1], [1, 2, 3]))


def test_bias_and_confusion() -> None:
    b = bias([0, 0, 1, 1], [1, 1, 1, 1], n_resamples=200)
    assert b["mean"] == pytest.approx(0.5) and b["n"] == 4 and b["ci"][0] <= 0.5 <= b["ci"][1]
    c = confusion([0, 0, 1, 1], [1, 0, 1, 1])
    assert c["labels"] == [0, 1] and c["matrix"] == [[1, 1], [0, 2]]
    with pytest.raises(ValueError, match="None/NaN"):
        bias([0, 1], [float("nan"), 1])


def test_agreement_report_binary_and_paired_difference() -> None:
    human = [0, 1] * 20
    judge_good = list(human)
    judge_bad = [1] * 40
    r = agreement_report(human, judge_good, kind="binary", n_resamples=200)
    assert r["n"] == 40 and r["kappa"]["value"] == pytest.approx(cohen_kappa_score(human, judge_good))
    assert r["bias"]["mean"] == 0 and r["confusion"]["matrix"] == [[20, 0], [0, 20]]
    r2 = agreement_report(human, judge_bad, kind="binary", n_resamples=200)
    assert r2["bias"]["mean"] == pytest.approx(0.5) and r2["bias"]["ci"][0] > 0
    d = paired_difference_ci(human, judge_bad, judge_good, statistic="kappa", n_resamples=200)
    assert d["delta"] == pytest.approx(1.0) and d["significant"]
    same = paired_difference_ci(human, judge_good, judge_good, statistic="kappa", n_resamples=200)
    assert same["delta"] == 0 and not same["significant"]


def test_agreement_report_ordinal_has_alpha_and_per_topic() -> None:
    human = [1, 2, 3, 4, 5] * 4
    judge = [min(5, v + 1) for v in human]
    r = agreement_report(human, judge, kind="ordinal", topics=["a"] * 10 + ["b"] * 10, n_resamples=200)
    assert r["main"] == "alpha" and r["alpha"]["value"] is not None and r["bias"]["mean"] > 0
    assert set(r["per_topic"]) == {"a", "b"} and r["per_topic"]["a"]["n"] == 10
