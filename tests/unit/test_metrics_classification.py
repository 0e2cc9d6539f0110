"""Tests of voproshalych_eval.metrics.classification."""

from __future__ import annotations

import random

import numpy as np
import pytest

from voproshalych_eval.metrics.classification import (
    binary_classification_report,
    cohen_kappa,
    fleiss_kappa,
)

sk_metrics = pytest.importorskip("sklearn.metrics")


def test_report_hand_computed() -> None:
    y_true = [True, True, True, False, False, False, False, True]
    y_pred = [True, False, True, True, False, False, False, True]
    r = binary_classification_report(y_true, y_pred)
    assert r["confusion_matrix"] == {"tp": 3, "fp": 1, "tn": 3, "fn": 1}
    assert r["n"] == 8
    assert r["accuracy"] == pytest.approx(6 / 8)
    assert r["precision"] == pytest.approx(3 / 4)
    assert r["recall"] == pytest.approx(3 / 4)
    assert r["f1_score"] == pytest.approx(3 / 4)
    assert set(r) == {"accuracy", "precision", "recall", "f1_score", "confusion_matrix", "n"}


@pytest.mark.parametrize("seed", range(10))
def test_report_agrees_with_sklearn(seed: int) -> None:
    rng = random.Random(seed)
    n = rng.randint(1, 40)
    y_true = [rng.random() < 0.4 for _ in range(n)]
    y_pred = [rng.random() < 0.5 for _ in range(n)]
    r = binary_classification_report(y_true, y_pred)
    assert r["accuracy"] == pytest.approx(sk_metrics.accuracy_score(y_true, y_pred))
    assert r["precision"] == pytest.approx(sk_metrics.precision_score(y_true, y_pred, zero_division=0))
    assert r["recall"] == pytest.approx(sk_metrics.recall_score(y_true, y_pred, zero_division=0))
    assert r["f1_score"] == pytest.approx(sk_metrics.f1_score(y_true, y_pred, zero_division=0))
    tn, fp, fn, tp = sk_metrics.confusion_matrix(y_true, y_pred, labels=[False, True]).ravel()
    assert r["confusion_matrix"] == {"tp": tp, "fp": fp, "tn": tn, "fn": fn}
    for key in ("accuracy", "precision", "recall", "f1_score"):
        assert 0.0 <= r[key] <= 1.0


def test_report_zero_division() -> None:
    r = binary_classification_report([False, False], [False, False])
    assert r["precision"] == 0.0 and r["recall"] == 0.0 and r["f1_score"] == 0.0
    assert r["accuracy"] == 1.0
    r2 = binary_classification_report([1, 0], [0, 0])
    assert r2["precision"] == 0.0 and r2["recall"] == 0.0


def test_report_accepts_ints_and_numpy_bools() -> None:
    r = binary_classification_report(np.array([1, 0, 1]), list(np.array([True, False, False])))
    assert r["confusion_matrix"] == {"tp": 1, "fp": 0, "tn": 1, "fn": 1}


def test_report_rejects_bad_labels() -> None:
    with pytest.raises(ValueError):
        binary_classification_report([True, None], [True, False])
    with pytest.raises(ValueError):
        binary_classification_report(["yes"], [True])
    with pytest.raises(ValueError):
        binary_classification_report([2], [1])
    with pytest.raises(ValueError):
        binary_classification_report([True], [True, False])
    with pytest.raises(ValueError):
        binary_classification_report([], [])


def test_cohen_kappa_hand_computed() -> None:
    # 2x2 table: both yes 20, a yes/b no 5, a no/b yes 10, both no 15 (n=50).
    a = ["y"] * 20 + ["y"] * 5 + ["n"] * 10 + ["n"] * 15
    b = ["y"] * 20 + ["n"] * 5 + ["y"] * 10 + ["n"] * 15
    p_o = 35 / 50
    p_e = (25 / 50) * (30 / 50) + (25 / 50) * (20 / 50)
    assert cohen_kappa(a, b) == pytest.approx((p_o - p_e) / (1 - p_e))  # 0.4


@pytest.mark.parametrize("seed", range(10))
def test_cohen_kappa_agrees_with_sklearn(seed: int) -> None:
    rng = random.Random(seed)
    labels = [1, 2, 3, 4, 5]
    n = rng.randint(5, 60)
    a = [rng.choice(labels) for _ in range(n)]
    b = [x if rng.random() < 0.6 else rng.choice(labels) for x in a]
    k = cohen_kappa(a, b)
    assert k == pytest.approx(sk_metrics.cohen_kappa_score(a, b))
    assert -1.0 <= k <= 1.0


def test_cohen_kappa_edge_cases() -> None:
    assert cohen_kappa(["a", "b", "a"], ["a", "b", "a"]) == 1.0
    assert cohen_kappa([True, False], [False, True]) == pytest.approx(-1.0)
    # Both raters constant and equal: defined as 1.0 (sklearn gives NaN).
    assert cohen_kappa(["pass"] * 4, ["pass"] * 4) == 1.0
    # Constant but different raters: p_e = 0, p_o = 0 -> 0.
    assert cohen_kappa(["x"] * 3, ["y"] * 3) == 0.0
    with pytest.raises(ValueError):
        cohen_kappa([1], [1, 2])
    with pytest.raises(ValueError):
        cohen_kappa([], [])


def _expand(counts: list[list[int]]) -> list[list[int]]:
    return [[cat for cat, c in enumerate(row, start=1) for _ in range(c)] for row in counts]


def test_fleiss_kappa_wikipedia_example() -> None:
    # Fleiss' kappa example from Wikipedia: 10 items, 14 raters, 5 categories; kappa = 0.210.
    counts = [
        [0, 0, 0, 0, 14],
        [0, 2, 6, 4, 2],
        [0, 0, 3, 5, 6],
        [0, 3, 9, 2, 0],
        [2, 2, 8, 1, 1],
        [7, 7, 0, 0, 0],
        [3, 2, 6, 3, 0],
        [2, 5, 3, 2, 2],
        [6, 5, 2, 1, 0],
        [0, 2, 2, 3, 7],
    ]
    ratings = _expand(counts)
    assert all(len(r) == 14 for r in ratings)
    assert fleiss_kappa(ratings) == pytest.approx(0.20993, abs=5e-5)
    assert round(fleiss_kappa(ratings), 3) == 0.210


def test_fleiss_kappa_edge_cases() -> None:
    assert fleiss_kappa([["a", "a"], ["b", "b"], ["a", "a"]]) == pytest.approx(1.0)
    assert fleiss_kappa([["a", "a", "a"], ["a", "a", "a"]]) == 1.0
    # Two raters: Fleiss' kappa equals Scott's pi; here perfect disagreement pattern.
    k = fleiss_kappa([["a", "b"], ["b", "a"]])
    assert k == pytest.approx(-1.0)
    with pytest.raises(ValueError):
        fleiss_kappa([])
    with pytest.raises(ValueError):
        fleiss_kappa([["a"]])
    with pytest.raises(ValueError):
        fleiss_kappa([["a", "b"], ["a"]])
