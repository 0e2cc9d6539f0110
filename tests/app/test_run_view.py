"""AppTest of the run view (issue 29): which run a page shows (the run just made, else the link's, else the latest
of the page's plan — not the newest dataset's), the dataset picker of the result block, the URL as the view's
state (run, dataset, tab, language) and a real-users analysis reopened from the store in a new session."""

from __future__ import annotations

import uuid

import pandas as pd
from streamlit.testing.v1 import AppTest

from tests.support.plans import run as run_plan
from voproshalych_eval.config import PROJECT_ROOT
from voproshalych_eval.datasets.store import Dataset, content_hash, get_dataset, store

APP = str(PROJECT_ROOT / "app.py")


def _open(path: str, *, lang: str | None = None, **query: object) -> AppTest:
    """A new browser session opening ``path`` with the link's query parameters."""
    at = AppTest.from_file(APP, default_timeout=240)
    if lang is not None:
        at.query_params["lang"] = lang
    for k, v in query.items():
        at.query_params[k] = str(v)
    at.run()
    at.switch_page(path).run()
    assert not at.exception, [e.value for e in at.exception]
    return at


def _tier2(engine, dataset: str, n: int = 2) -> int:  # type: ignore[no-untyped-def]
    return run_plan(engine, "tier2", {"dataset": dataset, "limit": n, "offline": True}).run.id


def _copy_golden(engine, n: int = 1) -> Dataset:  # type: ignore[no-untyped-def]
    recs = [dict(r) for r in get_dataset(engine, "demo_golden", "golden").records[:n]]
    return store(engine, Dataset("rv_new_" + uuid.uuid4().hex[:6], "golden", recs, content_hash(recs), source="test"))


def test_a_new_dataset_never_hides_the_runs_of_the_plan(demo_engine) -> None:  # type: ignore[no-untyped-def]
    earlier = _tier2(demo_engine, "demo_golden")
    _copy_golden(demo_engine)  # a dataset generated since: the newest, with no run
    at = _open("pages/tier2_generation.py", lang="en")
    assert at.selectbox(key="pick_tier2_run_id").value == earlier  # the latest run of the plan, not "no run yet"
    assert not [i.value for i in at.info if "No runs yet" in i.value]
    # the page's URL now names the run shown and the language
    assert at.query_params["run"] == str(earlier) and at.query_params["lang"] == "en"
    # and the run form starts from that run's dataset, not from the newest one
    form_pick = next(s for s in at.selectbox if s.label == "Dataset")
    assert form_pick.value == "demo_golden", form_pick.value


def test_the_link_opens_the_same_run_dataset_and_language(demo_engine) -> None:  # type: ignore[no-untyped-def]
    other = _copy_golden(demo_engine, n=2)
    older = _tier2(demo_engine, "demo_golden")
    on_other = _tier2(demo_engine, other.name)
    _tier2(demo_engine, "demo_golden")  # the newest run: shown without a link
    at = _open("pages/tier2_generation.py", lang="en", run=older)
    assert at.selectbox(key="pick_tier2_run_id").value == older
    ds_pick = at.selectbox(key="pickds_tier2_run_id")  # the dataset picker defaults to the run's dataset
    labels = dict(zip(ds_pick.options, ds_pick.options, strict=True))
    assert any(o.startswith("demo_golden") and "items" in o for o in labels), labels
    assert any(other.name in o and "2 items" in o and "golden" in o for o in labels), labels  # name@version · n · kind
    captions = " ".join(c.value for c in at.caption)
    assert "more run" in captions and "on other datasets" in captions
    assert at.title[0].value.startswith("Tier 2")  # English, from the link
    # picking the other dataset shows its latest run, and the URL follows
    at.selectbox(key="pickds_tier2_run_id").set_value(other.id).run()
    assert at.selectbox(key="pick_tier2_run_id").value == on_other
    assert at.query_params["run"] == str(on_other)
    # a Russian link opens in Russian
    ru = _open("pages/tier2_generation.py", lang="ru", run=on_other)
    assert ru.selectbox(key="pick_tier2_run_id").value == on_other
    assert ru.title[0].value.startswith("Tier 2 · Генерация")


def test_the_run_just_made_beats_the_link(demo_engine) -> None:  # type: ignore[no-untyped-def]
    from tests.support.app_jobs import started_job

    linked = _tier2(demo_engine, "demo_golden")
    at = _open("pages/tier2_generation.py", lang="en", run=linked)
    assert at.selectbox(key="pick_tier2_run_id").value == linked
    at.checkbox(key="t2_offline").check()
    at.button(key="t2_run").click().run()
    job = started_job(at, "tier2_run_id")
    assert job is not None and job.wait(240).status in ("done", "done_with_failures"), job.progress
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    assert at.selectbox(key="pick_tier2_run_id").value == job.run_id != linked
    assert at.query_params["run"] == str(job.run_id)


def test_a_real_users_analysis_reopens_from_the_store(demo_engine) -> None:  # type: ignore[no-untyped-def]
    ran = run_plan(demo_engine, "real_users", {"k_topics": 6})
    res = ran.plan.outputs["result"]
    # a new session of a restarted app: no job of this run in memory, nothing in the session
    at = _open("pages/real_users.py", lang="en", run=ran.run.id, ru_view="topics")
    assert at.selectbox(key="pick_ru_run_id").value == ran.run.id
    assert "ru_rebuild" not in {b.key for b in at.button}  # no "recompute" offered: read from the store
    shown = at.session_state["ru_result"]
    assert shown.run_id == ran.run.id
    pd.testing.assert_frame_equal(shown.topics.topics, res.topics.topics)
    assert shown.embeddings.vectors.shape == res.embeddings.vectors.shape
    assert at.query_params["ru_view"] == "topics"  # the tab from the link
    assert any(d.value.shape[0] == len(res.topics.gaps) for d in at.dataframe)


def test_filters_and_the_item_come_from_the_link_and_selections_stay_with_their_run(demo_engine) -> None:  # type: ignore[no-untyped-def]
    first = _tier2(demo_engine, "demo_golden", n=3)
    second = _tier2(demo_engine, "demo_golden", n=3)
    from voproshalych_eval.engine import runs

    heads = {str(runs.run_items(demo_engine, r)["item_key"].iloc[0]) for r in (first, second)}  # each picker's default
    linked = next(str(k) for k in runs.run_items(demo_engine, first)["item_key"] if str(k) not in heads)
    at = _open("pages/tier2_generation.py", lang="en", run=first, item=linked, low="faithfulness")
    assert at.selectbox(key="pick_tier2_run_id").value == first
    assert at.selectbox(key="t2_lowcol").value == "faithfulness"  # the filter from the link
    at.selectbox(key="t2_lowcol").set_value("—").run()
    assert at.query_params["low"] == "—"
    assert at.selectbox(key="t2_item").value == linked  # the item from the link
    # another run: the item picked on the first one is not carried over, and the URL forgets it
    at.selectbox(key="pick_tier2_run_id").set_value(second).run()
    assert not at.exception, [e.value for e in at.exception]
    assert at.query_params["run"] == str(second)
    assert at.selectbox(key="t2_item").value != linked
    assert at.query_params.get("item") != linked
