"""AppTest: the Real users page runs the analyses on the demo log and renders its tabs: the run picker shows
the run just made with its verdict, the view survives the UMAP rerun, tables pick topics on the map, and
every chart is drawn with the app's chart config and translated axis titles."""

from __future__ import annotations

import json
from typing import Any

from streamlit.testing.v1 import AppTest

from tests.support.app_jobs import started_job
from voproshalych_eval.config import PROJECT_ROOT
from voproshalych_eval.tiers import projection_refine


def test_real_users_page_runs(demo_engine) -> None:  # type: ignore[no-untyped-def]
    at = AppTest.from_file(str(PROJECT_ROOT / "app.py"), default_timeout=300)
    at.session_state["ui_language"] = "en"
    at.run()
    at.switch_page("pages/real_users.py").run()
    assert not at.exception, [e.value for e in at.exception]
    # the run form sits at the top of the main area, not in the sidebar
    assert "ru_run" in {b.key for b in at.main.button}
    assert "ru_run" not in {b.key for b in at.sidebar.button}
    at.number_input(key="ru_ktopics").set_value(8)
    at.button(key="ru_run").click().run()
    assert not at.exception, [e.value for e in at.exception]
    # the analyses run as a background job of the engine; wait for it, then rerun the page
    job = started_job(at, "ru_run_id")
    assert job is not None and job.wait(300).status == "done", job.progress
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    assert [t.label for t in at.tabs] == ["Chunk utilization", "Topics & coverage gaps", "Bot answers", "Domain"]
    # the picker shows the run just made, led by its verdict against the baselines
    run_id = at.session_state["ru_run_id"]
    assert at.selectbox(key="pick_ru_run_id").value == run_id
    assert at.selectbox(key="pick_ru_run_id").options[0].endswith(f"#{run_id}")  # newest first, with its id
    leads = [e.value for e in (*at.success, *at.warning, *at.error, *at.info)]
    assert any("Verdict against the baselines" in v for v in leads), leads
    # only the open tab is drawn: the first (utilization) by default, the topics' gap chart is not built
    assert not any(f["layout"].get("title", {}).get("text") == "Gap score" for f in _figures(at))
    labels = {m.label for m in at.metric}
    assert "Chunk coverage" in labels and "Topics" not in labels  # labels from the metric catalog
    captions = " ".join(c.value for c in at.caption)
    assert "n = " in captions
    # every chart has the app's toolbar config; the gap chart's axis is translated, its legend outside
    _open_view(at, "topics", "Topics & coverage gaps")
    figures = _figures(at)
    assert figures and all(json.loads(el.proto.config).get("displaylogo") is False for el in at.get("plotly_chart"))
    gap = next(f for f in figures if f["layout"].get("title", {}).get("text") == "Gap score")
    assert gap["layout"]["xaxis"]["title"]["text"] == "gap score"
    assert gap["layout"]["xaxis"]["range"][0] == 0 and gap["layout"]["modebar"]["orientation"] == "v"
    labels = {m.label for m in at.metric}
    assert "Topics" in labels and "Chunk coverage" not in labels
    assert {"Effective answered share", "Answered share", "Topic stability (ARI)"} <= labels
    assert "×" in " ".join(str(d.value.to_csv()) for d in at.dataframe)  # examples carry repeat counts
    assert not at.error, [e.value for e in at.error]
    # the reports are written on a click, in the UI language (not on every rerun)
    assert {b.proto.label for b in at.get("download_button")} >= {"⬇ Report (Markdown)", "⬇ Report (HTML)"}
    # the bot-answer rules are shown and editable; applying them reclassifies without a new run
    _open_view(at, "answers", "Bot answers")
    assert "Declines in disguise" in {m.label for m in at.metric}
    res = at.session_state["ru_result"]
    before = res.answers.metrics()["effective_answered_rate"]
    at.button(key="ru_rules_apply").click().run()
    assert not at.exception, [e.value for e in at.exception]
    assert at.session_state["ru_result"].answers.metrics()["effective_answered_rate"] == before
    assert at.session_state["ru_answer_rules"].to_dict()["patterns"]

    _open_view(at, "topics", "Topics & coverage gaps")
    # what changed shows on the page: the summary, the change table and the monthly chart
    assert "What changed" in [h.value for h in at.subheader]
    assert any("Topic status: binomial test" in c.value for c in at.caption)
    # rename a topic on the page: stored with its centroid for later runs (cleaned up after)
    from voproshalych_eval.analytics import topic_memory as tm

    model = res.embeddings.model
    try:
        clusters = res.topics.topics[res.topics.topics["kind"] == "cluster"]
        at.multiselect(key="ru_name_pick").set_value([int(clusters["topic"].iloc[0])]).run()
        at.text_input(key="ru_name_text").set_value("Моя тема").run()
        at.button(key="ru_name_rename").click().run()
        assert not at.exception, [e.value for e in at.exception]
        assert any("Saved" in s.value for s in at.success)
        assert [n.name for n in tm.list_names(demo_engine, model)] == ["Моя тема"]
    finally:
        tm.forget(demo_engine, [n.id for n in tm.list_names(demo_engine, model)])

    # the topics view is open (a click on its tab); building the map reruns the page and keeps it open
    at.session_state["ru_view"] = "Topics & coverage gaps"
    at.run()
    # a row picked in the gap table before the map exists: its topic is highlighted once the map is built
    gaps = res.topics.gaps
    at.session_state["tbl_ru_gaps"] = {"selection": {"rows": [0], "columns": []}}
    at.run()
    # the topic map stays after reruns; a search and a topic highlight their questions
    at.button(key="ru_map").click().run()
    assert not at.exception, [e.value for e in at.exception]
    # the first picture at once: PCA, stated under the map, while UMAP refines in the background
    assert any(c.value.startswith("Showing the PCA projection") for c in at.caption), [c.value for c in at.caption]
    pca_map = next(f for f in _figures(at) if f["layout"].get("title", {}).get("text", "").startswith("Questions"))
    assert pca_map["layout"]["xaxis"]["title"]["text"] == "PCA-1"
    ref = projection_refine.get(at.session_state["ru_topic_map_projection__refine"])
    assert ref is not None and ref.wait(600).error is None, ref.error
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    assert any(c.value.startswith("Showing the UMAP projection") for c in at.caption), [c.value for c in at.caption]
    assert at.session_state["ru_view"] == "Topics & coverage gaps"  # the open tab, not the first one
    assert at.selectbox(key="ru_map_topic").value == int(gaps["topic"].iloc[0])
    topic_map = next(f for f in _figures(at) if f["layout"].get("title", {}).get("text", "").startswith("Questions"))
    assert topic_map["layout"]["legend"]["x"] > 1  # 30 topic names in a column right of the map, not over it
    # a row picked in the topic table moves the highlight to its topic
    topics = res.topics.topics
    at.session_state["tbl_ru_topics"] = {"selection": {"rows": [1], "columns": []}}
    at.run()
    assert at.selectbox(key="ru_map_topic").value == int(topics["topic"].iloc[1])
    at.selectbox(key="ru_map_topic").set_value(None).run()
    at.text_input(key="ru_map_search").set_value("стипенд").run()
    assert not at.exception, [e.value for e in at.exception]
    hits = [c.value for c in at.caption if c.value.startswith("Highlighted questions:")]
    assert len(hits) == 1 and not hits[0].startswith("Highlighted questions: 0 ")
    # the matches are drawn in the contrast colour with their own legend entry
    umap_map = next(f for f in _figures(at) if f["layout"].get("title", {}).get("text", "").startswith("Questions"))
    (matches,) = [tr for tr in umap_map["data"] if str(tr.get("name", "")).startswith("highlighted (")]
    assert matches["marker"]["color"] == "#000000" and umap_map["layout"]["xaxis"]["title"]["text"] == "UMAP-1"
    assert at.session_state["ru_topic_map"][0] == res.run_id


def _open_view(at: AppTest, name: str, label: str) -> None:
    """Open a tab of the page as a click on it does (its label is the widget's value), and draw it."""
    at.session_state["ru_view"] = label
    at.session_state["ru_view__view"] = name
    at.run()
    assert not at.exception, [e.value for e in at.exception]


def _figures(at: AppTest) -> list[dict[str, Any]]:
    return [json.loads(el.proto.spec) for el in at.get("plotly_chart")]
