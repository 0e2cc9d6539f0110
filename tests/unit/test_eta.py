"""The run's ETA from measured item rates (issue 29): setup excluded, changes of pace followed, stalls counted."""

from __future__ import annotations

import pytest

from voproshalych_eval.engine.eta import ItemRateEta
from voproshalych_eval.engine.executor import Progress


def _feed(seq: list[tuple[float, int]]) -> ItemRateEta:
    est = ItemRateEta()
    for t, n in seq:
        est.observe(t, n)
    return est


def test_setup_time_is_not_a_rate() -> None:
    """60 s of setup, then 1 item/s for 100 items: after 10 items 90 s are left, not 90 × 70/10 = 630 s."""
    seq = [(60.0 + i, i) for i in range(1, 11)]
    est = _feed(seq)
    assert est.eta(70.0, 90) == pytest.approx(90.0, rel=0.05)
    old = Progress(run_id=1, total=100, done=10, elapsed_s=70.0)  # what the start-based rate gave
    assert 90 / old.rate > 5 * 90  # the 5–20× error the estimator replaces


def test_a_slow_down_is_followed_within_a_few_items() -> None:
    """50 quick items (0.1 s each: cached), then LLM-bound items at 5 s each: after 10 slow ones the ETA of the
    40 left is about 200 s (a whole-run mean would say ~ 50 × 55/60 ≈ 46 s)."""
    seq = [(0.1 * i, i) for i in range(1, 51)] + [(5.0 + 5.0 * j, 50 + j) for j in range(1, 11)]
    est = _feed(seq)
    now = seq[-1][0]
    assert est.eta(now, 40) == pytest.approx(200.0, rel=0.25)


def test_corrected_as_the_run_goes() -> None:
    """A synthetic progress sequence with a change of pace mid-run: every estimate after the change settles
    within 25 % of the true time left once a window of items at the new pace is seen."""
    total = 200
    times, t = [], 2.0
    for i in range(1, total + 1):
        t += 0.5 if i <= 100 else 2.0
        times.append(t)
    est = ItemRateEta()
    errors = []
    for i, ti in enumerate(times, 1):
        est.observe(ti, i)
        left = total - i
        if i >= 140 and left:
            errors.append(abs(est.eta(ti, left) - (times[-1] - ti)) / (times[-1] - ti))
    assert max(errors) < 0.25


def test_a_stall_makes_the_estimate_grow() -> None:
    est = _feed([(float(i), i) for i in range(1, 11)])
    assert est.eta(10.0, 10) == pytest.approx(10.0, rel=0.05)
    assert est.eta(40.0, 10) > 2 * est.eta(10.0, 10)  # 30 s without a finished item


def test_no_estimate_from_one_point_and_zero_when_done() -> None:
    est = _feed([(5.0, 1)])
    assert est.eta(6.0, 9) is None
    assert est.eta(6.0, 0) == 0.0
    assert Progress(run_id=1, total=3, done=3).eta_s == 0.0
    assert Progress(run_id=1, total=3, done=1).eta_s is None
