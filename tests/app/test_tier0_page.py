"""AppTest: the Tier 0 page runs the metrics and builds a small projection without an exception."""

from __future__ import annotations

import json

import pytest
from sqlalchemy import text
from streamlit.testing.v1 import AppTest

from tests.support.app_jobs import started_job
from voproshalych_eval.config import PROJECT_ROOT
from voproshalych_eval.tiers import projection_refine


def wait_for_umap(at: AppTest) -> None:
    """Wait for the map's background UMAP fit (if any), then rerun the page as its poll would."""
    ref = projection_refine.get(at.session_state["tier0_projection__refine"]) \
        if "tier0_projection__refine" in at.session_state else None
    if ref is not None:
        assert ref.wait(300).done and ref.error is None, ref.error
    at.run()
    assert not at.exception, [e.value for e in at.exception]


@pytest.mark.parametrize("lang", ["ru", "en"])
def test_tier0_page_run_and_project(demo_engine, lang: str) -> None:  # type: ignore[no-untyped-def]
    at = AppTest.from_file(str(PROJECT_ROOT / "app.py"), default_timeout=180)
    at.session_state["ui_language"] = lang
    at.run()
    at.switch_page("pages/tier0_embeddings.py").run()
    assert not at.exception, [e.value for e in at.exception]

    # the run form sits at the top of the main area, not in the sidebar
    main_keys = {b.key for b in at.main.button}
    assert {"t0_run", "t0_project"} <= main_keys
    assert not {"t0_run", "t0_project"} & {b.key for b in at.sidebar.button}
    at.slider(key="t0_nn").set_value(5)
    at.number_input(key="t0_limit").set_value(120)
    at.button(key="t0_run").click().run()
    assert not at.exception, [e.value for e in at.exception]
    # the metrics run as a background job (its steps are the run's items); wait, then rerun the page
    job = started_job(at, "t0_run_id")
    assert job is not None and job.wait(180).status == "done", job.progress
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    assert not at.error, [e.value for e in at.error]
    labels = [m.label for m in at.metric]
    assert any("Trustworthiness" in lab for lab in labels) is False  # no projection yet
    assert len(at.metric) >= 16
    # the run picker shows the run just made and leads it with its verdict
    run_id = at.session_state["t0_run_id"]
    assert at.selectbox(key="pick_t0_run_id").value == run_id
    verdict = "Verdict against the baselines" if lang == "en" else "Вердикт относительно базовых уровней"
    assert any(verdict in str(a.value) for a in [*at.success, *at.warning, *at.error, *at.info])
    # result tables speak the UI language: no raw metric keys in their headers
    headers = [c.get("label") for df in at.dataframe for c in json.loads(df.proto.columns or "{}").values()]
    assert "avg_nn_distance" not in headers and "score" not in headers, headers

    # no stored map of this request (an earlier test may have fitted the same one): the first picture is PCA
    with demo_engine.begin() as conn:
        conn.execute(text("DELETE FROM eval.projections"))
    at.button(key="t0_project").click().run()
    assert not at.exception, [e.value for e in at.exception]
    assert not at.error, [e.value for e in at.error]
    # the first picture at once: PCA of the same points, stated on the page, UMAP refining in the background
    shows_pca = "Showing the PCA projection (120 points in " if lang == "en" else "Показана проекция PCA (120 точек за "
    assert any(c.value.startswith(shows_pca) for c in at.caption), [c.value for c in at.caption]
    (method,) = [m for m in at.metric if m.label == ("Projection" if lang == "en" else "Проекция")]
    assert method.value == ("PCA (first picture)" if lang == "en" else "PCA (первая картинка)")
    assert any('"PCA-1"' in c.proto.spec for c in at.get("plotly_chart"))
    assert any("120" in w.value for w in at.warning)  # the subsample is announced
    wait_for_umap(at)
    # UMAP replaced the picture: named, with its trustworthiness
    shows_umap = "Showing the UMAP projection." if lang == "en" else "Показана проекция UMAP."
    assert any(c.value.startswith(shows_umap) for c in at.caption), [c.value for c in at.caption]
    (trust,) = [m for m in at.metric if m.label == "Trustworthiness@10"]
    assert trust.value != "—"
    assert any('"UMAP-1"' in c.proto.spec for c in at.get("plotly_chart"))
    # the same map again: the stored UMAP projection at once, no PCA step
    at.button(key="t0_project").click().run()
    assert not at.exception, [e.value for e in at.exception]
    (method,) = [m for m in at.metric if m.label == ("Projection" if lang == "en" else "Проекция")]
    assert method.value == ("UMAP (from cache)" if lang == "en" else "UMAP (из кэша)")

    # recolour without recomputing; then a 3D projection
    at.selectbox(key="t0_color").set_value("cluster").run()
    assert not at.exception, [e.value for e in at.exception]
    at.radio(key="t0_dim").set_value(3)
    at.button(key="t0_project").click().run()
    assert not at.exception, [e.value for e in at.exception]
    assert not at.error, [e.value for e in at.error]
    wait_for_umap(at)

    if lang != "en":
        return
    # search highlights matching points; rows picked in the points table are starred (works in 3D too)
    at.text_input(key="t0_search").set_value("стипенд").run()
    assert not at.exception, [e.value for e in at.exception]
    assert any(c.value.startswith("Matching points:") for c in at.caption)
    at.session_state["t0_points"] = {"selection": {"rows": [0, 1], "columns": [], "cells": []}}
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    assert any(m.value.startswith("**Selected points: 2") for m in at.markdown), [m.value for m in at.markdown][-5:]
    assert any('"picked in a table"' in c.proto.spec for c in at.get("plotly_chart")), \
        "rows picked in the points table are starred on the (3D) map"
    # chunks and questions on one map: the modality gap as a number, centred by default, questions coloured
    # by their nearest chunk's page
    at.radio(key="t0_dim").set_value(2)
    at.selectbox(key="t0_source").set_value("both")
    at.button(key="t0_project").click().run()
    # other vectors in the sidebar than in the run: the map says it shows the run's vectors
    assert any("changed since the run" in w.value for w in at.warning)
    at.button(key="t0_run").click().run()
    job = started_job(at, "t0_run_id")
    assert job is not None and job.wait(180).status == "done", job.progress
    at.run()
    at.button(key="t0_project").click().run()
    assert not at.exception, [e.value for e in at.exception]
    assert not at.error, [e.value for e in at.error]
    wait_for_umap(at)
    gap = [m for m in at.metric if m.label.startswith("Modality gap")]
    assert len(gap) == 1 and "=" in gap[0].value
    assert any("after centring" in c.value for c in at.caption)
    at.selectbox(key="t0_color").set_value("kb_page").run()
    assert not at.exception, [e.value for e in at.exception]


def _step_bar_script() -> None:
    import streamlit as st

    from voproshalych_eval.bilingual import text
    from voproshalych_eval.ui.jobs import StepBar

    bar = StepBar("…")
    bar(1, 2, text("UMAP по 300 точкам: эпохи", "UMAP of 300 points: epochs"), 0, 500)
    bar(1, 2, text("UMAP по 300 точкам: эпохи", "UMAP of 300 points: epochs"), 100, 500)
    st.session_state["after_epochs"] = True


@pytest.mark.parametrize(("lang", "expected"), [
    ("ru", "Шаг 1 из 2: UMAP по 300 точкам: эпохи — 100 из 500 · осталось ≈ "),
    ("en", "Step 1 of 2: UMAP of 300 points: epochs — 100 of 500 · ETA ≈ "),
])
def test_step_bar_shows_counts_and_eta(lang: str, expected: str) -> None:
    at = AppTest.from_function(_step_bar_script)
    at.session_state["ui_language"] = lang
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    (bar,) = at.progress
    assert bar.value == 10  # step 1 of 2, a fifth of its epochs done
    assert bar.text.startswith(expected), bar.text


def test_tier0_picker_offers_an_earlier_run(demo_engine) -> None:  # type: ignore[no-untyped-def]
    """An earlier run (another session) is offered by the picker, newest first, its metrics shown from the
    store; its vectors are loaded again on request for the map."""
    from voproshalych_eval.engine import runs
    from voproshalych_eval.engine.executor import run_plan
    from voproshalych_eval.tiers import tier0

    eng = demo_engine
    earlier, _ = run_plan(eng, tier0.build_plan(eng, {"source": "chunks", "k": 3}))
    at = AppTest.from_file(str(PROJECT_ROOT / "app.py"), default_timeout=180)
    at.session_state["ui_language"] = "en"
    at.run()
    at.switch_page("pages/tier0_embeddings.py").run()
    assert not at.exception, [e.value for e in at.exception]
    picker = at.selectbox(key="pick_t0_run_id")
    assert picker.options[0].endswith(f"#{runs.list_runs(eng, tier='tier0', limit=1)[0].id}"), picker.options
    picker.set_value(earlier).run()
    assert not at.exception, [e.value for e in at.exception]
    assert len(at.metric) >= 16
    assert any("not in memory" in i.value for i in at.info)
    at.button(key="t0_reload").click().run()
    assert not at.exception, [e.value for e in at.exception]
    at.number_input(key="t0_limit").set_value(100)
    at.button(key="t0_project").click().run()
    assert not at.exception, [e.value for e in at.exception]
    assert any("Trustworthiness@10" in m.label for m in at.metric)
    wait_for_umap(at)
