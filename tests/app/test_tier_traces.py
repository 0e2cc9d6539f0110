"""AppTest: the per-item detail of the Tier 2 and Tier 3 pages ends with the item's trace — its stored result as a
collapsible tree of steps (``ui.trace_view``), in words, never a JSON dump (issue 29 item 8)."""

from __future__ import annotations

import pytest
from streamlit.testing.v1 import AppTest

from tests.support.plans import run as run_plan
from voproshalych_eval.config import PROJECT_ROOT
from voproshalych_eval.field_words import column_header

APP = str(PROJECT_ROOT / "app.py")


@pytest.mark.parametrize(("tier", "page", "lang"), [("tier2", "pages/tier2_generation.py", "en"),
                                                    ("tier3", "pages/tier3_end_to_end.py", "ru")])
def test_the_item_detail_shows_its_trace_tree(demo_engine, tier: str, page: str, lang: str) -> None:  # type: ignore[no-untyped-def]
    ran = run_plan(demo_engine, tier, {"dataset": "demo_golden", "limit": 2, "offline": True})
    at = AppTest.from_file(APP, default_timeout=240)
    at.query_params["lang"] = lang
    at.query_params["run"] = str(ran.run.id)
    at.run()
    at.switch_page(page).run()
    assert not at.exception, [e.value for e in at.exception]
    heading = "Трасса элемента" if lang == "ru" else "Item trace"
    assert any(heading in m.value for m in at.markdown), [m.value for m in at.markdown][-5:]
    item = at.selectbox(key=f"{'t2' if tier == 'tier2' else 't3'}_item").value
    result = next(r["result"] for r in ran.records if r["item_key"] == item)
    nested = [k for k, v in result.items() if isinstance(v, dict) and v]
    assert nested, result.keys()  # the item has steps to draw
    labels = [e.label for e in at.expander]
    for step in nested:  # every step an expander titled in words (its latency, tokens, cost when recorded)
        title = column_header(step, lang)
        assert any(lbl.startswith(title) for lbl in labels), (title, labels)
    dumped = " ".join(str(getattr(j, "value", "")) for j in at.get("json"))
    assert not dumped, "the trace is a tree, not a JSON dump"
