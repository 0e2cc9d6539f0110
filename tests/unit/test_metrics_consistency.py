"""Tests of voproshalych_eval.metrics.consistency."""

from __future__ import annotations

import math

import numpy as np
import pytest

from voproshalych_eval.metrics.consistency import (
    exact_agreement_rate,
    exact_match_rate,
    exact_match_with_reference,
    flip_rate,
    mean_pairwise_cosine,
    normalize_whitespace,
    score_std_per_item,
)


def test_normalize_whitespace() -> None:
    assert normalize_whitespace("  Стипендия\n  выплачивается\t25-го ") == "Стипендия выплачивается 25-го"


def test_exact_match_rate_hand_computed() -> None:
    repeats = [
        ["Ответ А", "Ответ  А", "Ответ А\n"],  # all 3 pairs equal after normalisation -> 1
        ["x", "y", "x"],  # 1 of 3 pairs -> 1/3
        ["p", "q"],  # 0
    ]
    assert exact_match_rate(repeats) == pytest.approx((1 + 1 / 3 + 0) / 3)
    assert exact_match_rate([["a", "a"]]) == 1.0
    # Case is significant: "exact" means exact.
    assert exact_match_rate([["Да", "да"]]) == 0.0


def test_exact_match_rate_is_self_consistency_not_reference_agreement() -> None:
    # Repeats agree perfectly with each other but never with the reference.
    repeats = [["Неверно", "Неверно"], ["Тоже неверно", "Тоже неверно"]]
    references = ["Верный ответ", "Другой верный ответ"]
    assert exact_match_rate(repeats) == 1.0
    assert exact_match_with_reference([r[0] for r in repeats], references) == 0.0
    assert "SELF-consistency" in (exact_match_rate.__doc__ or "")


def test_exact_match_rate_errors() -> None:
    with pytest.raises(ValueError):
        exact_match_rate([])
    with pytest.raises(ValueError):
        exact_match_rate([["only one"]])


def test_exact_match_with_reference() -> None:
    assert exact_match_with_reference(["a  b", "c"], ["a b", "d"]) == 0.5
    with pytest.raises(ValueError):
        exact_match_with_reference(["a"], [])
    with pytest.raises(ValueError):
        exact_match_with_reference([], [])


def test_mean_pairwise_cosine_hand_computed() -> None:
    item1 = np.array([[1.0, 0.0], [2.0, 0.0], [5.0, 0.0]])  # all same direction -> 1
    item2 = np.array([[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]])  # pairs: 0, 1/sqrt2, 1/sqrt2
    expected2 = (0 + 2 / math.sqrt(2)) / 3
    assert mean_pairwise_cosine([item1]) == pytest.approx(1.0)
    assert mean_pairwise_cosine([item1, item2]) == pytest.approx((1 + expected2) / 2)
    opposite = np.array([[1.0, 0.0], [-1.0, 0.0]])
    assert mean_pairwise_cosine([opposite]) == pytest.approx(-1.0)


def test_mean_pairwise_cosine_range_random() -> None:
    rng = np.random.default_rng(0)
    items = [rng.normal(size=(rng.integers(2, 6), 12)) for _ in range(20)]
    value = mean_pairwise_cosine(items)
    assert -1.0 <= value <= 1.0


def test_mean_pairwise_cosine_errors() -> None:
    with pytest.raises(ValueError):
        mean_pairwise_cosine([])
    with pytest.raises(ValueError):
        mean_pairwise_cosine([np.array([[1.0, 0.0]])])
    with pytest.raises(ValueError, match="zero"):
        mean_pairwise_cosine([np.array([[1.0, 0.0], [0.0, 0.0]])])
    with pytest.raises(ValueError):
        mean_pairwise_cosine([np.array([1.0, 0.0])])


def test_score_std_per_item() -> None:
    stds = score_std_per_item([[4, 4, 4], [1, 5], [3, None, float("nan")], [2.0, None, 4.0]])
    assert stds[0] == 0.0
    assert stds[1] == pytest.approx(2.0)
    assert stds[2] is None
    assert stds[3] == pytest.approx(1.0)
    assert all(s is None or s >= 0 for s in stds)
    sample = score_std_per_item([[1, 5]], ddof=1)
    assert sample[0] == pytest.approx(math.sqrt(8))


def test_flip_rate() -> None:
    verdicts = [[True, True, True], [True, False, True], [False, None, False], [None, True], [False, False]]
    # Evaluable items: 1, 2, 3, 5 -> one flips.
    assert flip_rate(verdicts) == pytest.approx(1 / 4)
    assert flip_rate([[True, False]]) == 1.0
    with pytest.raises(ValueError):
        flip_rate([[None, True]])


def test_exact_agreement_rate() -> None:
    scores = [[5, 5, 5], [4, 5, 4], [3, None, 3], [2], [0.5, 0.5000001]]
    assert exact_agreement_rate(scores) == pytest.approx(2 / 4)
    assert exact_agreement_rate(scores, atol=1e-3) == pytest.approx(3 / 4)
    with pytest.raises(ValueError):
        exact_agreement_rate([[1.0], [None, 2.0]])
