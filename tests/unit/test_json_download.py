"""JSON downloads in the app go through the one JSON cleaner: valid JSON, numbers stay numbers."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd

from voproshalych_eval.ui.widgets import csv_download, json_file


def test_json_download_is_valid_json_with_numpy_pandas_and_missing_values() -> None:
    obj = {"mrr": np.float32(0.5), "n": np.int64(7), "nan": float("nan"), "inf": np.float64("inf"),
           "flags": np.array([True, False]), "when": pd.Timestamp("2025-10-01T12:00:00Z"), "nat": pd.NaT,
           "rows": pd.DataFrame({"k": [1, 2], "v": [0.25, np.nan]}), "text": "Стипендия"}
    raw = json_file(obj).decode("utf-8")
    assert "NaN" not in raw and "Infinity" not in raw and "Стипендия" in raw  # strict JSON, UTF-8 kept
    back = json.loads(raw)
    assert back == {"mrr": 0.5, "n": 7, "nan": None, "inf": None, "flags": [True, False],
                    "when": "2025-10-01T12:00:00+00:00", "nat": None,
                    "rows": [{"k": 1, "v": 0.25}, {"k": 2, "v": None}], "text": "Стипендия"}
    assert isinstance(back["n"], int) and isinstance(back["mrr"], float)  # not "7" / "0.5" strings


def test_csv_download_is_written_on_demand_masked_as_decided_and_without_live_formulas() -> None:
    df = pd.DataFrame({"question": ["=HYPERLINK(\"http://x\")", "почта ivan.petrov@example.com"], "n": [1, 2]})
    masked = csv_download(df, masked=True)
    plain = csv_download(df, masked=False)
    assert callable(masked) and callable(plain)  # Streamlit calls it when the button is pressed
    text = masked().decode("utf-8")
    assert "ivan.petrov@example.com" not in text and "ivan.petrov@example.com" in plain().decode("utf-8")
    assert "'=HYPERLINK" in text  # the formula cell is neutralised (a leading apostrophe)
    assert not any(line.startswith("=") for line in text.splitlines())
