"""AppTest: the leaderboard's per-item diff of two configurations (issue 29 item 8) — pick two rows (A, B; the two
best by default) and "Diff per item" shows both runs' values side by side with B − A, through the Runs page's
comparison code (``runs.compare_runs`` → ``ui.item_diff_view``)."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from typing import Any

import pytest
from streamlit.testing.v1 import AppTest

from voproshalych_eval.config import PROJECT_ROOT
from voproshalych_eval.engine import runs
from voproshalych_eval.metrics.statistics import summarize

APP = str(PROJECT_ROOT / "app.py")


@pytest.fixture
def two_configs(engine: Any) -> Iterator[tuple[int, int, str, dict[int, list[float]]]]:
    dataset = "lbdiff_" + uuid.uuid4().hex[:6]
    ids, values = [], {}
    for emb, shift in (("emb-low", 0.0), ("emb-high", 0.3)):
        vals = [round(min(1.0, (i % 5) / 10 + shift * (i % 2)), 3) for i in range(12)]
        run = runs.create_run(engine, "tier1", models={"embedder": emb}, dataset_name=dataset,
                              dataset_hash=(dataset * 64)[:64], n_items_total=12, label=emb)
        runs.record_items(engine, run.id, [
            (f"q{i:02d}", {"question": f"Вопрос {i}?", "metrics_chunk": {"mrr": v}}, "done", None) for i, v in enumerate(vals)])
        runs.finish_run(engine, run.id, {"chunk": {"mrr": summarize(vals, n_resamples=200).to_dict()}})
        ids.append(run.id)
        values[run.id] = vals
    yield ids[0], ids[1], dataset, values
    from sqlalchemy import text as sql

    with engine.begin() as conn:
        conn.execute(sql("DELETE FROM eval.runs WHERE id = ANY(:ids)"), {"ids": ids})


@pytest.mark.parametrize("lang", ["en", "ru"])
def test_two_leaderboard_rows_diff_item_by_item(engine: Any, two_configs: tuple, lang: str) -> None:  # type: ignore[type-arg]
    low, high, dataset, values = two_configs
    at = AppTest.from_file(APP, default_timeout=120)
    at.session_state["ui_language"] = lang
    at.run()
    at.switch_page("pages/runs.py").run()
    at.multiselect(key="runs_f_dataset").set_value([dataset]).run()
    assert not at.exception, [e.value for e in at.exception]
    # the two best configurations by default: A = rank 1 (the higher run), B = rank 2
    assert at.selectbox(key="runs_lb_a").value == high and at.selectbox(key="runs_lb_b").value == low
    assert not [d for d in at.dataframe if "diff" in d.value.columns]  # nothing computed before the click
    at.button(key="runs_lb_diff").click().run()
    assert not at.exception, [e.value for e in at.exception]
    diff = next(d for d in at.dataframe if {"a", "b", "diff", "change"} <= set(d.value.columns))
    table = diff.value.set_index("item_key")
    changed = [f"q{i:02d}" for i in range(12) if values[high][i] != values[low][i]]  # same items hidden by default
    assert sorted(table.index) == sorted(changed) and changed
    for key in changed:
        i = int(key[1:])
        assert table.loc[key, "a"] == values[high][i] and table.loc[key, "b"] == values[low][i]
        assert abs(table.loc[key, "diff"] - (values[low][i] - values[high][i])) < 1e-9
    worse = "хуже" if lang == "ru" else "worse"
    assert set(table["change"]) == {worse}  # B (rank 2) is below A on every changed item
    headers = str(diff.proto.columns)
    assert "A: #1" in headers and "B: #2" in headers, headers  # the columns name the configurations
    # another pair: B follows, the old diff is not shown for it
    at.selectbox(key="runs_lb_a").set_value(low).run()
    assert at.selectbox(key="runs_lb_b").value == high
    assert not [d for d in at.dataframe if "diff" in d.value.columns and "change" in d.value.columns]
