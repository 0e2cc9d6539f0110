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
