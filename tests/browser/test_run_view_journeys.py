"""Real-browser journeys of issue 29 — the right run on every page, links that open a view, nothing lost — each
in Russian and in English (the session's app server and Chromium of ``conftest.py``):

1. ``generate``: a dataset generated on the Datasets page (offline templates: no LLM in the test session), then
   Tier 1 still shows the earlier runs of the golden set (never "no Tier 1 run yet");
2. ``tier2-twice``: Tier 2 run twice from its form; the page shows the second run;
3. ``link``: an earlier Tier 1 run and its Comparison tab, the link copied from "Link to this view" and opened in a
   new browser session: the same run, the same tab, the same language;
4. ``reopen``: a real-users analysis made, the app restarted (a new ``streamlit run`` process), the analysis's
   link opened: its tables come from the store, no recompute offered; the time to the topics table is printed.

Screenshots of every step go to ``artifacts/screenshots/<journey>-<lang>-<step>.png``.
"""

from __future__ import annotations

import re
import time
from typing import Any

import pytest

from tests.browser.app_driver import by, script_idle, wait, wait_rendered
from tests.browser.conftest import _free_port, serve_app
from tests.browser.test_journeys import (
    JOB_TIMEOUT,
    LANGS,
    _choose_dataset,
    _click_key,
    _last_run_id,
    _main_text,
    _new_runs,
    _open,
    _open_view,
    _picked,
    _scroll_click,
    _select,
    _selected_views,
    _shot,
)
from voproshalych_eval.datasets.store import list_datasets
from voproshalych_eval.engine import runs

pytestmark = pytest.mark.browser

TITLES = {"tier1": {"ru": "Tier 1 · Поиск", "en": "Tier 1 · Retrieval"},
          "tier2": {"ru": "Tier 2 · Генерация", "en": "Tier 2 · Generation"}}
NO_T1_RUN = {"ru": "Запусков Tier 1 ещё нет", "en": "No Tier 1 run yet"}
GENERATE = {"ru": "Создать набор", "en": "Generate"}
SIZE = {"ru": "Сколько вопросов", "en": "Number of questions"}
COMPARE = {"ru": "Сравнение", "en": "Comparison"}
LINK = {"ru": "Ссылка на этот вид", "en": "Link to this view"}
RECOMPUTE = {"ru": "Пересчитать таблицы и графики", "en": "Recompute the tables and charts"}


def _go(drv: Any, url: str, page: str, lang: str, **query: object) -> None:
    """Open ``page`` by its address (a new session) with the query parameters of a link."""
    q = "&".join(f"{k}={v}" for k, v in {"lang": lang, **query}.items())
    drv.get(f"{url}/{page}?{q}")
    wait_rendered(drv, page)


def _title(drv: Any) -> str:
    return drv.find_element(*by('[data-testid="stMain"] h1')).text.strip()


# ------------------------------------------------------------------------------------------ 1. generate


@pytest.mark.parametrize("lang", LANGS)
def test_a_generated_dataset_keeps_the_tier1_runs(driver: Any, app_url: str, demo_engine: Any, lang: str) -> None:
    j = "generate"
    t1_latest = _last_run_id(demo_engine, "tier1")  # the golden set's runs (the module's app seeds two)
    assert t1_latest
    before = _last_run_id(demo_engine, "dataset_generation")
    _go(driver, app_url, "datasets", lang, datasets_view="generate")  # the tab from the URL
    from selenium.webdriver.common.keys import Keys

    size = wait(driver, lambda d: next(iter(d.find_elements(*by(f'input[aria-label="{SIZE[lang]}"]'))), False), 60,
                "the size of the set")
    _scroll_click(driver, size)
    size.send_keys(Keys.CONTROL, "a")
    size.send_keys("3")
    button = next(b for b in driver.find_elements(*by('[data-testid="stFormSubmitButton"] button'))
                  if GENERATE[lang] in b.text)
    _scroll_click(driver, button)
    (gen_id,) = _new_runs(driver, demo_engine, "dataset_generation", before)
    _shot(driver, j, lang, "1-generated")
    gen = runs.get_run(demo_engine, gen_id)
    assert gen is not None and gen.status in ("done", "done_with_failures"), gen
    newest = list_datasets(demo_engine, "golden")[0]
    assert not runs.list_runs(demo_engine, tier="tier1", dataset_name=newest["name"]), "the new set already has runs"

    _go(driver, app_url, "tier1_retrieval", lang)
    try:
        wait(driver, lambda d: _picked(d, "pick_t1_run_id").endswith(f"#{t1_latest}") and script_idle(d), 120,
             f"the latest Tier 1 run #{t1_latest} shown")
    finally:
        _shot(driver, j, lang, "2-tier1-still-shows-its-runs")
    assert NO_T1_RUN[lang] not in _main_text(driver)
    assert _title(driver) == TITLES["tier1"][lang]


# ------------------------------------------------------------------------------------------ 2. Tier 2 twice


@pytest.mark.parametrize("lang", LANGS)
def test_tier2_twice_shows_the_second_run(driver: Any, app_url: str, demo_engine: Any, lang: str) -> None:
    j = "tier2-twice"
    _open(driver, app_url, "tier2_generation", lang)
    made = []
    for n in (1, 2):
        before = _last_run_id(demo_engine, "tier2")
        _click_key(driver, "t2_run")  # offline (no LLM in the test session): the box is ticked for the analyst
        (run_id,) = _new_runs(driver, demo_engine, "tier2", before)
        try:
            wait(driver, lambda d, r=run_id: _picked(d, "pick_tier2_run_id").endswith(f"#{r}") and script_idle(d),
                 JOB_TIMEOUT, f"run {n} (#{run_id}) in the run picker")
        finally:
            _shot(driver, j, lang, f"{n}-run")
        made.append(run_id)
    assert made[1] > made[0]
    assert f"run={made[1]}" in driver.current_url  # the URL names the run shown
    assert _title(driver) == TITLES["tier2"][lang]


# ------------------------------------------------------------------------------------------ 3. a link


def _copied_link(drv: Any, lang: str) -> str:
    opener = wait(drv, lambda d: next((b for b in d.find_elements(*by('[data-testid="stPopover"] button'))
                                       if LINK[lang] in b.text), False), 60, "the link action")
    _scroll_click(drv, opener)
    code = wait(drv, lambda d: next((c for c in d.find_elements(*by('[data-testid="stPopoverBody"] code'))
                                     if "?" in (c.get_attribute("textContent") or "")), False), 30, "the link")
    return str(code.get_attribute("textContent")).strip()


@pytest.mark.parametrize("lang", LANGS)
def test_a_copied_link_opens_the_same_view(driver: Any, app_url: str, demo_engine: Any, lang: str) -> None:
    j = "link"
    t1 = runs.list_runs(demo_engine, tier="tier1", status="done", dataset_name="demo_golden")
    assert len(t1) >= 2
    older = t1[-1].id  # not the one a page shows by default
    _open(driver, app_url, "tier1_retrieval", lang)
    _choose_dataset(driver, "pickds_t1_run_id", "demo_golden")  # the runs of one dataset are listed at a time
    _select(driver, "pick_t1_run_id", f"#{older}")
    # the select box speaks the language switched to on the page (its labels are made in the script run)
    cyrillic = re.search("[а-яё]", _picked(driver, "pick_t1_run_id").lower()) is not None
    assert cyrillic == (lang == "ru"), _picked(driver, "pick_t1_run_id")
    _open_view(driver, COMPARE[lang])
    wait(driver, lambda d: f"run={older}" in d.current_url and "t1_view=compare" in d.current_url, 30,
         "the run and the tab in the URL")
    link = _copied_link(driver, lang)
    _shot(driver, j, lang, "1-link")
    assert link.startswith("http") and f"run={older}" in link and f"lang={lang}" in link, link
    assert "t1_view=compare" in link, link

    driver.delete_all_cookies()
    driver.get("about:blank")
    t0 = time.perf_counter()
    driver.get(link)  # a new browser session on the link
    wait_rendered(driver, "the linked view")
    try:
        wait(driver, lambda d: _picked(d, "pick_t1_run_id").endswith(f"#{older}") and script_idle(d), 120,
             f"run #{older} from the link")
    finally:
        _shot(driver, j, lang, "2-opened")
    print(f"a Tier 1 link opened in a new session ({lang}): {time.perf_counter() - t0:.2f} s to the run's view")
    assert COMPARE[lang] in _selected_views(driver), _selected_views(driver)
    assert _title(driver) == TITLES["tier1"][lang]  # the same language
    driver.refresh()  # a reload keeps the view and the language too
    wait_rendered(driver, "the reloaded view")
    wait(driver, lambda d: _picked(d, "pick_t1_run_id").endswith(f"#{older}") and script_idle(d), 120,
         "the same run after a reload")
    assert _title(driver) == TITLES["tier1"][lang]


# ------------------------------------------------------------------------------------------ 4. reopen


@pytest.fixture(scope="module")
def analysis(demo_engine: Any) -> int:
    """A real-users analysis of the demo log's 👎 questions (quick), made and stored by the engine."""
    from tests.support.plans import run as run_plan

    ran = run_plan(demo_engine, "real_users", {"filters": {"scores": [1]}, "k_topics": 4})
    assert ran.run.status == "done", ran.run.error
    return ran.run.id


@pytest.mark.parametrize("lang", LANGS)
def test_restart_and_reopen_a_real_users_analysis(driver: Any, browser_tools: Any, demo_engine: Any, analysis: int,
                                                 tmp_path: Any, lang: str) -> None:
    j = "reopen"
    timings: list[float] = []
    port = _free_port()  # a restart serves the app on the same address again

    def reopen(url: str, what: str) -> float:
        """Open the analysis's link; seconds until its gap table is on the screen (then wait for the page to
        finish, and check it was read from the store, not recomputed)."""
        t0 = time.perf_counter()
        driver.get(f"{url}/real_users?lang={lang}&run={analysis}&ru_view=topics")
        wait(driver, lambda d: d.find_elements(*by(".st-key-tbl_ru_gaps")), 120, f"the coverage-gap table, {what}")
        shown = time.perf_counter() - t0
        wait(driver, script_idle, 120, f"the Real users page to finish, {what}")
        assert _picked(driver, "pick_ru_run_id").endswith(f"#{analysis}")
        assert RECOMPUTE[lang] not in _main_text(driver), "the analysis was not read from the store"
        return shown

    for n in (1, 2):  # the app is served twice: the second process is the app after a restart
        with serve_app(tmp_path / f"streamlit-{n}.log", port=port) as url:
            timings.append(reopen(url, "first opening" if n == 1 else "after a restart"))
            _shot(driver, j, lang, f"{n}-opened")
            # the same link once more in the same process, as a colleague opening it after the first person would
            driver.delete_all_cookies()
            driver.get("about:blank")
            again = reopen(url, "opened again")
    print(f"reopen real-users #{analysis} ({lang}): first {timings[0]:.2f} s, after a restart {timings[1]:.2f} s, "
          f"once more in the restarted app {again:.2f} s (link opened to the gap table on screen, browser included)")
