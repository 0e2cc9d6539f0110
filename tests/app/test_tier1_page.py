"""AppTest: the Tier 1 page runs the benchmark on the demo and shows the summary."""

from __future__ import annotations

from streamlit.testing.v1 import AppTest

from tests.support.app_jobs import started_job
from voproshalych_eval.config import PROJECT_ROOT
from voproshalych_eval.engine import executor

APP = str(PROJECT_ROOT / "app.py")


def _page(language: str) -> AppTest:
    at = AppTest.from_file(APP, default_timeout=180)
    at.session_state["ui_language"] = language
    at.run()
    at.switch_page("pages/tier1_retrieval.py").run()
    assert not at.exception, [e.value for e in at.exception]
    return at


def _run_and_wait(at: AppTest) -> executor.Job:
    """Press Run; the run executes in a background job (off the script thread): wait for it, rerun the page."""
    at.button(key="t1_run").click().run()
    assert not at.exception, [e.value for e in at.exception]
    job = started_job(at, "t1_run_id")
    assert job is not None and job.wait(180).status == "done", job.progress
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    return job


def test_run_from_the_page_shows_summary(demo_engine) -> None:  # type: ignore[no-untyped-def]
    at = _page("en")
    _run_and_wait(at)
    assert not at.error, [e.value for e in at.error]
    labels = {m.label for m in at.metric}
    assert {"MRR", "Hit Rate@5", "NDCG@10"} <= labels
    run_id = at.session_state["t1_run_id"]
    assert at.selectbox(key="pick_t1_run_id").value == run_id  # the page shows the run it just made
    assert any(f"#{run_id}" in s.value for s in at.subheader)
    # the failures filter and the threshold tab render too
    at.radio(key="t1_filter").set_value("failk").run()
    assert not at.exception, [e.value for e in at.exception]


def test_comparison_shows_every_run_it_started_and_opens_the_best(demo_engine) -> None:  # type: ignore[no-untyped-def]
    import json

    from tests.support.plans import tier1

    base = tier1(demo_engine, "demo_golden", retriever="vector", embedder="use-multilingual", k=10, n_resamples=200)
    at = AppTest.from_file(APP, default_timeout=180)
    at.session_state["ui_language"] = "en"
    at.session_state["pick_t1_run_id"] = base.run_id
    at.run()
    at.switch_page("pages/tier1_retrieval.py").run()
    assert at.selectbox(key="pick_t1_run_id").value == base.run_id
    at.session_state["t1_view"] = "Comparison"
    at.session_state["t1_view__view"] = "compare"
    at.run()
    at.multiselect(key="t1_cmp_cfg").set_value([("fts", None), ("hybrid", "use-multilingual")]).run()
    at.button(key="t1_cmp_run").click().run()
    assert not at.exception, [e.value for e in at.exception]
    keys = list(at.session_state["t1_cmp_ids"])  # the jobs' keys: their runs exist once their plans are built
    assert len(keys) == 2
    started = []
    for key in keys:
        job = executor.get_job(key)
        assert job is not None and job.wait(180).status == "done", job.progress
        started.append(job.run_id)
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    # the comparison shows the page's run and every run it started, without adding them by hand
    assert set(at.multiselect(key="t1_cmp_runs").value) == {base.run_id, *started}
    charts = [{str(t.get("name")) for t in json.loads(c.proto.spec)["data"]} for c in at.get("plotly_chart")]
    names = next(n for n in charts if any(f"#{base.run_id}" in x for x in n))
    assert all(any(f"#{rid}" in n for n in names) for rid in (base.run_id, *started)), names
    # the view kept its place across the reruns
    assert at.session_state["t1_view__view"] == "compare"
    from voproshalych_eval.engine import runs

    mrr = {rid: runs.get_run(demo_engine, rid).metrics["chunk"]["mrr"]["value"] for rid in (base.run_id, *started)}
    best_id = max(mrr, key=lambda r: mrr[r])
    has_button = any(b.key == "t1_open_best" for b in at.button)
    assert has_button == (best_id != base.run_id), mrr
    if has_button:
        at.button(key="t1_open_best").click().run()
        assert not at.exception, [e.value for e in at.exception]
        assert at.selectbox(key="pick_t1_run_id").value == best_id
        assert at.session_state["t1_view__view"] == "questions"  # the best run's per-question detail is open


def test_hnsw_line_and_picker_of_the_chosen_dataset(demo_engine) -> None:  # type: ignore[no-untyped-def]
    """An HNSW run's line speaks words (catalog label, share by kind), never ``recall@10_vs_exact``; the picker
    lists the runs of the chosen dataset only, newest first."""
    from voproshalych_eval.datasets.store import list_datasets
    from voproshalych_eval.engine import runs

    at = _page("ru")
    at.checkbox(key="t1_hnsw").check().run()
    job = _run_and_wait(at)
    line = next(i.value for i in at.info if i.value.startswith("HNSW: "))
    assert "Recall@10 HNSW к точному поиску = " in line and "_vs_exact" not in line and "ef_construction = " in line, line
    # a run of another dataset is not offered beside the chosen dataset's runs
    other = runs.create_run(demo_engine, "tier1", dataset_name=f"other-golden-{job.run_id}", n_items_total=0).id
    runs.finish_run(demo_engine, other, {}, status="cancelled")
    at.run()
    chosen = next(d["name"] for d in list_datasets(demo_engine, "golden")
                  if at.selectbox(key="t1_dataset").value.endswith(f"(#{d['id']})"))
    picker = at.selectbox(key="pick_t1_run_id")
    wanted = [r.id for r in runs.list_runs(demo_engine, tier="tier1", limit=50, dataset_name=chosen)]
    assert list(picker.options) and len(picker.options) == len(wanted)
    assert [int(o.rsplit("#", 1)[1]) for o in picker.options] == wanted == sorted(wanted, reverse=True)
    assert other not in wanted and other in [r.id for r in runs.list_runs(demo_engine, tier="tier1", limit=50)]
