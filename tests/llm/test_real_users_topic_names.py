"""Topic names on Real users (issue 29 item 6): with an LLM configured the topics get the model's label by
default (marked as written by the model), the gap table shows three example questions inline beside the name,
and names are phrases, not lemma lists."""

from __future__ import annotations

from pathlib import Path

from streamlit.testing.v1 import AppTest

from tests.support.plans import real_users
from tests.support.scripted_openai import ScriptedOpenAI


def test_gap_table_has_llm_labels_by_default_and_three_examples(demo_engine, scripted_openai_env: ScriptedOpenAI) -> None:  # type: ignore[no-untyped-def]
    scripted_openai_env.responder = lambda body: "Тема от модели"
    res = real_users(demo_engine, k_topics=5, label="topic names")
    at = AppTest.from_file(str(Path(__file__).resolve().parents[2] / "app.py"), default_timeout=300)
    at.session_state["ui_language"] = "en"
    at.session_state["pick_ru_run_id"] = res.run_id
    at.session_state["ru_result"] = res
    at.session_state["ru_view__view"] = "topics"
    at.run()
    at.switch_page("pages/real_users.py").run()
    assert not at.exception, [e.value for e in at.exception]
    gaps = next(df.value for df in at.dataframe if "gap_score" in df.value.columns)
    assert "llm_label" in gaps.columns and set(gaps["llm_label"].dropna()) == {"Тема от модели"}
    assert list(gaps.columns).index("examples") == list(gaps.columns).index("name") + 1
    assert all(len(str(e).split(" | ")) <= 3 for e in gaps["examples"])
    assert any("written by the model" in c.value for c in at.caption), [c.value for c in at.caption]
    # keyphrases or shortened questions, never a comma-separated lemma list
    clusters = res.topics.topics[res.topics.topics["kind"] == "cluster"]
    assert set(clusters["name_source"]) <= {"phrase", "question", "user"}
