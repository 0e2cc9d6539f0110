"""AppTest: a bot answer is shown as text on the End-to-end drill-down — its Markdown image is never handed to
the Markdown renderer (which would make the viewer's browser fetch it), nor its emphasis or heading."""

from __future__ import annotations

import re

from streamlit.testing.v1 import AppTest

from tests.support.app_jobs import started_job
from tests.support.production_qa import ProductionQA
from voproshalych_eval.config import PROJECT_ROOT

APP = str(PROJECT_ROOT / "app.py")
HOSTILE = "# Заголовок\n![pixel](http://127.0.0.1:9/pixel.png) **жирный** <img src=x onerror=alert(1)> :red[красный]"


def test_tier3_drilldown_shows_a_hostile_answer_as_text(demo_engine) -> None:  # type: ignore[no-untyped-def]
    from voproshalych_eval.datasets.store import get_dataset

    recs = get_dataset(demo_engine, "demo_golden", "golden").records[:2]
    with ProductionQA() as srv:
        for r in recs:
            srv.answers[r["question"]] = (HOSTILE, "https://wiki.example/page")
        at = AppTest.from_file(APP, default_timeout=120)
        at.session_state["ui_language"] = "en"
        at.run()
        at.switch_page("pages/tier3_end_to_end.py").run()
        at.radio(key="t3_mode").set_value("api").run()
        at.selectbox(key="t3_preset").set_value("voproshalych").run()
        fk = "—|voproshalych"
        at.text_input(key=f"t3_url|{fk}").set_value(srv.base_url + "/qa/")
        at.number_input(key=f"t3_rps|{fk}").set_value(50.0)
        next(n for n in at.number_input if n.label.startswith("First N questions")).set_value(2)
        next(c for c in at.checkbox if c.label.startswith("Offline")).check()
        next(b for b in at.button if b.label == "Run").click()
        at.run()
        job = started_job(at, "tier3_run_id")
        assert job is not None
        job.wait(120)
        assert job.progress.status == "done", job.error
        at.run()
    assert not at.exception, [e.value for e in at.exception]
    assert any(t.value == HOSTILE for t in at.text), "the answer is shown verbatim as text"
    rendered = [str(m.value) for m in [*at.markdown, *at.caption, *at.error, *at.warning, *at.info, *at.success]]
    # inside Markdown (the item's trace lists short values in a definition list) it may appear only escaped
    # (``ui.untrusted.md``: ``\\!\\[pixel\\](http…``, ``\\<img``), which the renderer shows as literal text
    live = re.compile(r"(?<!\\)!(?<!\\)\[|(?<!\\)\]\(http|(?<!\\)<img")
    assert not [m for m in rendered if live.search(m)], rendered
    assert any("\\!\\[pixel\\]" in m for m in rendered), "the escaped answer in the trace (the check above sees it)"
