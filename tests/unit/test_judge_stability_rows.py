"""The per-model rows of a judge stability run (what the Judges page tabulates)."""

from __future__ import annotations

import math

import pandas as pd

from voproshalych_eval.tiers.judge_stability import repeat_rows


def test_repeat_rows_one_row_per_item_and_model() -> None:
    items = pd.DataFrame([
        {"item_key": "q1", "status": "done", "question": "Когда сессия?",
         "scores": {"m1": [1.0, 3.0, None], "m2": [2.0]}},
        {"item_key": "q2", "status": "failed", "question": None, "scores": None},
    ])
    rows = repeat_rows(items)
    assert list(rows["model"]) == ["m1", "m2"]
    m1, m2 = rows.to_dict("records")
    assert math.isclose(m1["std"], 1.0)  # population std of 1 and 3; the failed repeat is not a score
    assert m1["n_failed_calls"] == 1
    assert m2["std"] is None or pd.isna(m2["std"])  # one valid score: no spread
    assert m2["n_failed_calls"] == 0


def test_repeat_rows_of_no_items_is_empty() -> None:
    assert repeat_rows(pd.DataFrame(columns=["item_key", "status", "scores"])).empty
