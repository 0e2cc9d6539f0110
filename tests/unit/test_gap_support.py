"""The offline support heuristic of the gap diagnosis."""

from __future__ import annotations

import pytest

from voproshalych_eval.tiers.gap_diagnosis import support


def test_support_formula() -> None:
    assert support(["стипендия", "размер"], {"стипендия", "отличник"}, 0.6) == pytest.approx(0.5 * 0.5 + 0.5 * 0.6)
    assert support(["a", "a", "b"], {"a", "b"}, 0.0) == pytest.approx(0.5)  # repeated terms count once
    assert support([], {"a"}, 0.8) == pytest.approx(0.4)
