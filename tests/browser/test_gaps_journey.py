"""Real-browser journey of a knowledge-base team, in Russian and in English: a coverage gap → its diagnosis →
an article draft → "simulate this draft" (a what-if run on the engine) → the gap marked addressed.

Each step is read back from the store (the diagnosis kept, the draft version, the what-if run finished, the
status), the visible text carries no metric key, and a screenshot of every step is saved to
``artifacts/screenshots/gaps-<lang>-<step>.png``."""

from __future__ import annotations

from typing import Any

import pytest

from tests.browser.app_driver import script_idle, wait
from tests.browser.test_journeys import (
    JOB_TIMEOUT,
    _clean,
    _click_key,
    _last_run_id,
    _new_runs,
    _open,
    _open_view,
    _select,
    _shot,
)
from tests.support.plans import real_users as run_real_users
from voproshalych_eval.analytics import gaps
from voproshalych_eval.engine import runs

pytestmark = pytest.mark.browser

TABS = {"ru": ("Статус", "Диагноз", "Черновик", "Что если"), "en": ("Status", "Diagnosis", "Draft", "What if")}
ADDRESSED = {"ru": "закрыт статьёй", "en": "addressed"}


@pytest.fixture(scope="module")
def analysed(demo_engine: Any) -> None:
    from voproshalych_eval.gap_sync import sync

    run_real_users(demo_engine, analyses=("utilization", "topics"), k_range=(8, 12))
    sync(demo_engine)


def _diagnoses(engine: Any, gid: int) -> int | None:
    d = gaps.latest_diagnosis(engine, gid)
    return None if d is None else int(d["id"])


@pytest.mark.parametrize("lang", ["ru", "en"])
def test_gap_diagnosis_draft_simulate_addressed(driver: Any, app_url: str, demo_engine: Any, analysed: None,
                                                lang: str) -> None:
    gap = gaps.list_gaps(demo_engine)[0]  # the page's first gap (the same order)
    status, diag_tab, draft_tab, whatif_tab = TABS[lang]
    _open(driver, app_url, "gaps", lang)
    try:
        _clean(driver, lang)
        _shot(driver, "gaps", lang, "1-list")
        # diagnosis: kept with the gap, counts shown (offline: the labelled heuristic)
        _open_view(driver, diag_tab)
        before = _diagnoses(demo_engine, gap.id)
        _click_key(driver, "gaps_diagnose")
        wait(driver, lambda d: _diagnoses(demo_engine, gap.id) not in (None, before) and script_idle(d), JOB_TIMEOUT,
             "the diagnosis kept")
        _clean(driver, lang)
        _shot(driver, "gaps", lang, "2-diagnosis")
        # draft: a new version of the outline (offline template)
        _open_view(driver, draft_tab)
        n_drafts = len(gaps.drafts(demo_engine, gap.id))
        _click_key(driver, "gaps_draft_make")
        wait(driver, lambda d: len(gaps.drafts(demo_engine, gap.id)) == n_drafts + 1 and script_idle(d), JOB_TIMEOUT,
             "the new draft version")
        wait(driver, lambda d: d.find_elements("css selector", f'.st-key-gaps_draft_body_{gap.id}_'
                                               f'{gaps.drafts(demo_engine, gap.id)[0]["version"]} textarea'), 60,
             "the draft editor")
        _shot(driver, "gaps", lang, "3-draft")
        # simulate this draft: a what-if run on the engine, before -> after shown in the What if tab
        last = _last_run_id(demo_engine, "whatif")
        _click_key(driver, "gaps_simulate")
        run_id = _new_runs(driver, demo_engine, "whatif", last)[0]
        run = runs.get_run(demo_engine, run_id)
        assert run.status == "done" and run.params["gaps"] == [gap.id]
        assert run.params["edits"][0]["url"] == f"draft://gap-{gap.id}"
        _open_view(driver, whatif_tab)
        sandbox_word = {"ru": "Песочница", "en": "Sandbox"}[lang]
        wait(driver, lambda d: f"{sandbox_word} #{run.snapshot_id}" in d.find_element("css selector", '[data-testid="stMain"]').text
             and script_idle(d), JOB_TIMEOUT, "the what-if result")
        _clean(driver, lang)
        _shot(driver, "gaps", lang, "4-whatif")
        # the decision: addressed, with a note
        _open_view(driver, status)
        _select(driver, "gaps_status", ADDRESSED[lang])
        note = driver.find_element("css selector", ".st-key-gaps_note input")
        from selenium.webdriver.common.keys import Keys

        note.send_keys(Keys.CONTROL, "a")
        note.send_keys("статья опубликована" if lang == "ru" else "article published", Keys.ENTER)
        wait(driver, lambda d: script_idle(d), 60, "the note")
        _click_key(driver, "gaps_status_save")
        wait(driver, lambda d: gaps.get_gap(demo_engine, gap.id).status == "addressed" and script_idle(d), 60,
             "the gap addressed")
        assert gaps.events(demo_engine, gap.id)[-1]["status"] == "addressed"
        _clean(driver, lang)
        _shot(driver, "gaps", lang, "5-addressed")
    finally:
        if gaps.get_gap(demo_engine, gap.id).status != "open":
            gaps.set_status(demo_engine, gap.id, "open")
