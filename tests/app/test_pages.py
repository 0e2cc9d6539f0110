"""AppTest: every page renders without an exception, in Russian and in English."""

from __future__ import annotations

import pytest
from streamlit.testing.v1 import AppTest

from voproshalych_eval.config import PROJECT_ROOT
from voproshalych_eval.ui.pages import existing_pages

APP = str(PROJECT_ROOT / "app.py")

PAGE_FILES = [p.file for p in existing_pages()]


@pytest.mark.parametrize("lang", ["ru", "en"])
@pytest.mark.parametrize("page", PAGE_FILES)
def test_page_renders(demo_engine, page: str, lang: str) -> None:  # type: ignore[no-untyped-def]
    at = AppTest.from_file(APP, default_timeout=120)
    at.session_state["ui_language"] = lang
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    at.switch_page(page).run()
    assert not at.exception, [e.value for e in at.exception]
    assert at.title, f"{page} has no title"


def test_overview_shows_counts(demo_engine) -> None:  # type: ignore[no-untyped-def]
    at = AppTest.from_file(APP, default_timeout=120).run()
    labels = {m.label: m.value for m in at.metric}
    assert int(labels["Чанков в базе знаний"]) >= 150


@pytest.fixture
def online_and_offline_runs(engine):  # type: ignore[no-untyped-def]
    """Two finished Tier 1 runs on one new dataset, the second offline; deleted afterwards."""
    import uuid

    from sqlalchemy import text as sql

    from voproshalych_eval.engine import runs
    from voproshalych_eval.metrics.statistics import summarize

    dataset = "pages_" + uuid.uuid4().hex[:6]
    ids = []
    for shift, offline in ((0.0, False), (0.3, True)):
        vals = [min(1.0, (i % 7) / 10 + shift) for i in range(20)]
        run = runs.create_run(engine, "tier1", models={"embedder": "emb"}, dataset_name=dataset, offline=offline,
                              dataset_hash=(dataset * 64)[:64], n_items_total=20, label=f"pages {shift}")
        runs.record_items(engine, run.id, [(f"q{i:02d}", {"metrics_chunk": {"mrr": v}}, "done", None)
                                           for i, v in enumerate(vals)])
        runs.finish_run(engine, run.id, {"chunk": {"mrr": summarize(vals, n_resamples=200).to_dict()}})
        ids.append(run.id)
    yield dataset, ids
    with engine.begin() as conn:
        conn.execute(sql("DELETE FROM eval.runs WHERE id = ANY(:ids)"), {"ids": ids})


@pytest.mark.parametrize("lang", ["ru", "en"])
def test_runs_page_marks_offline_runs_resets_filters_and_compares_with_a_bar(
        online_and_offline_runs, lang: str) -> None:  # type: ignore[no-untyped-def]
    import json

    dataset, (online, offline) = online_and_offline_runs
    at = AppTest.from_file(APP, default_timeout=120)
    at.session_state["ui_language"] = lang
    at.run()
    at.switch_page("pages/runs.py").run()
    at.multiselect(key="runs_f_dataset").set_value([dataset]).run()
    at.selectbox(key="runs_h_metric").set_value("chunk.mrr").run()
    assert not at.exception, [e.value for e in at.exception]
    # the history chart: the offline run on its own grey line, named offline; the baseline says it is for online runs
    chart = next(json.loads(c.proto.spec) for c in at.get("plotly_chart")
                 if json.loads(c.proto.spec)["layout"].get("yaxis", {}).get("title", {}).get("text", "").startswith("MRR"))
    off_word = "офлайн — не сравнивается" if lang == "ru" else "offline — not compared"
    names = [t["name"] for t in chart["data"]]
    assert sum(off_word in n for n in names) == 1 and len(names) == 2, names
    assert any(("только для онлайн-запусков" if lang == "ru" else "online runs only") in a.get("text", "")
               for a in chart["layout"].get("annotations", []))
    assert json.loads(at.get("plotly_chart")[0].proto.config)["displaylogo"] is False  # the app's chart config
    # Compare: a progress bar with the count of metrics instead of a spinner
    at.button(key="runs_cmp_go").click().run()
    assert not at.exception, [e.value for e in at.exception]
    done = "Сравнено метрик" if lang == "ru" else "Metrics compared"
    assert any(b.value == 100 and b.text.startswith(done) for b in at.main.progress), [b.text for b in at.main.progress]
    # no run matches: the empty state carries the button that resets the filters
    at.multiselect(key="runs_f_status").set_value(["failed"]).run()
    reset = "Сбросить фильтры" if lang == "ru" else "Reset the filters"
    buttons = [b for b in at.main.button if b.label == reset]
    assert buttons, [b.label for b in at.main.button]
    buttons[0].click().run()
    assert not at.exception, [e.value for e in at.exception]
    assert at.multiselect(key="runs_f_status").value == [] and at.multiselect(key="runs_f_dataset").value == []
