"""Cost and latency in the run registry (issue 29 item 8): the Runs page table and its CSV export carry each run's
USD, tokens and latency p50/p95 (where the run measures them; unknown stays empty, never 0)."""

from __future__ import annotations

import csv
import io
import uuid
from typing import Any

import pandas as pd
from streamlit.testing.v1 import AppTest

from voproshalych_eval.config import PROJECT_ROOT
from voproshalych_eval.datasets.files import dataframe_csv
from voproshalych_eval.engine import runs

APP = str(PROJECT_ROOT / "app.py")
METRICS = {"avg_faithfulness": {"value": 0.8, "n": 3},
           "cost_usd": {"total": {"value": 0.0123, "prompt_tokens": 900, "completion_tokens": 100}},
           "generation_latency_p50": {"value": 0.42}, "generation_latency_p95": {"value": 1.9}}


def test_runs_frame_and_its_csv_carry_cost_tokens_and_latency() -> None:
    priced = runs.Run(2, "tier2", "done", metrics=METRICS)
    offline = runs.Run(1, "tier2", "done", metrics={"avg_faithfulness": {"value": 0.5, "n": 3}}, offline=True)
    frame = runs.runs_frame([priced, offline])
    row = frame.iloc[0]
    assert (row["cost_usd"], row["tokens"], row["latency_p50"], row["latency_p95"]) == (0.0123, 1000, 0.42, 1.9)
    assert frame.iloc[1][["cost_usd", "tokens", "latency_p50", "latency_p95"]].isna().all()  # unknown, never 0
    rows = list(csv.DictReader(io.StringIO(dataframe_csv(frame))))
    assert (rows[0]["cost_usd"], rows[0]["tokens"], rows[0]["latency_p50"], rows[0]["latency_p95"]) == ("0.0123", "1000", "0.42", "1.9")
    assert rows[1]["cost_usd"] == "" and rows[1]["latency_p95"] == ""


def test_the_runs_page_table_shows_cost_and_latency(engine: Any) -> None:
    dataset = "cost_" + uuid.uuid4().hex[:6]
    run = runs.create_run(engine, "tier2", models={"generator": "gpt-x"}, dataset_name=dataset,
                          dataset_hash=(dataset * 64)[:64], n_items_total=3, label="cost and latency")
    runs.finish_run(engine, run.id, METRICS)
    try:
        at = AppTest.from_file(APP, default_timeout=120)
        at.session_state["ui_language"] = "en"
        at.run()
        at.switch_page("pages/runs.py").run()
        at.multiselect(key="runs_f_dataset").set_value([dataset]).run()
        assert not at.exception, [e.value for e in at.exception]
        table: pd.DataFrame = next(d.value for d in at.dataframe if "cost_usd" in d.value.columns)
        row = table[table["id"] == run.id].iloc[0]
        assert (row["cost_usd"], row["tokens"], row["latency_p50"], row["latency_p95"]) == (0.0123, 1000, 0.42, 1.9)
        headers = str(at.dataframe[0].proto.columns)  # the headers a person reads (column_config labels)
        assert "Cost, $" in headers and "Tokens" in headers and "p95" in headers, headers
        assert any(b.proto.label == "⬇ CSV" for b in at.get("download_button"))
    finally:
        from sqlalchemy import text as sql

        with engine.begin() as conn:
            conn.execute(sql("DELETE FROM eval.runs WHERE id = :id"), {"id": run.id})
