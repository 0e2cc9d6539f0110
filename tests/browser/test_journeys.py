"""Real-browser journeys of an analyst (issue: results where you look, verdicts you can read, one language).

Each journey drives the app served by ``streamlit run`` (fixtures of ``test_browser_smoke``) in headless
Chromium and asserts what the analyst must see — the run just made, the tab kept after a rerun, the verdict
text, no metric key in the visible text — saving a screenshot of every step to ``artifacts/screenshots``
(``journey_<lang>_<step>.png``, kept as CI artefacts):

* Tier 1: run from the form at the top; the page shows the run just made with its verdict; the per-question
  view keeps its place while its filter reruns the page (the comparison of configurations is covered by
  ``tests/app/test_tier1_page.py``);
* an LLM tier offline (Tier 2): the run is marked "offline — not compared", never given a verdict;
* Runs: compare two runs (verdict column) and the report export buttons.

Skipped like the smoke test when Chromium or chromedriver is missing.
"""

from __future__ import annotations

import re
import time
from typing import Any

import pytest

from tests.browser.test_browser_smoke import (  # noqa: F401 - fixtures
    SCREENSHOTS,
    _exceptions,
    _nav_link,
    _script_idle,
    _switch_language,
    _wait,
    _wait_rendered,
    app_url,
    browser_tools,
    driver,
)
from tests.support.ui_text import RAW_KEYS
from voproshalych_eval.metrics import catalog

pytestmark = pytest.mark.browser

JOB_TIMEOUT = 240.0
_KEY = re.compile(r"(?<![\w.@/-])([A-Za-z][A-Za-z0-9]*(?:[_@][A-Za-z0-9]+)+)(?![\w@/-])")


def _by(css: str) -> Any:
    from selenium.webdriver.common.by import By

    return By.CSS_SELECTOR, css


def _shot(drv: Any, lang: str, step: str) -> None:
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    drv.save_screenshot(str(SCREENSHOTS / f"journey_{lang}_{step}.png"))


def _main_text(drv: Any) -> str:
    return drv.find_element(*_by('[data-testid="stMain"]')).text


def _raw_keys(text: str) -> list[str]:
    """Metric keys in the visible text (tables are canvases, so only our words are read)."""
    return sorted({m.group(1) for m in _KEY.finditer(text)
                   if m.group(1) in RAW_KEYS or catalog.is_catalogued(m.group(1))})


def _open(drv: Any, url: str, page: str, lang: str) -> None:
    """Open the app, switch the language, then go to ``page`` through its sidebar link (the session lives on)."""
    drv.get(url)
    _wait_rendered(drv, "the first page")
    link = _nav_link(drv, page)
    assert link is not None, f"no sidebar link to {page}"
    link.click()
    _wait(drv, lambda d: d.current_url.split("?")[0].rstrip("/").endswith(page), 30, f"the URL of {page}")
    _wait_rendered(drv, page)
    _switch_language(drv, lang)  # on the page itself: the switch reruns it in the language
    nav = drv.find_element(*_by('[data-testid="stSidebarNav"]')).get_attribute("textContent") or ""
    assert {"ru": "Запуски", "en": "Runs"}[lang] in nav, nav[:200]


def _click_key(drv: Any, key: str) -> None:
    button = _wait(drv, lambda d: next(iter(d.find_elements(*_by(f".st-key-{key} button"))), False), 60, f"button {key}")
    drv.execute_script("arguments[0].scrollIntoView({block: 'center'});", button)
    button.click()


def _open_tab(drv: Any, label: str) -> None:
    tab = _wait(drv, lambda d: next((t for t in d.find_elements(*_by('[role="tab"]'))
                                     if (t.get_attribute("textContent") or "").strip() == label), False), 60, f"tab {label!r}")
    drv.execute_script("arguments[0].scrollIntoView({block: 'center'});", tab)
    tab.click()
    _wait_rendered(drv, f"tab {label}")


def _selected_tab(drv: Any) -> str:
    return next(((t.get_attribute("textContent") or "").strip()
                 for t in drv.find_elements(*_by('[role="tab"][aria-selected="true"]'))), "")


def _pick_options(drv: Any, key: str, texts: list[str]) -> None:
    """Choose options of the multiselect ``key`` whose label contains each of ``texts``."""
    for text in texts:
        box = drv.find_element(*_by(f".st-key-{key} input"))
        drv.execute_script("arguments[0].scrollIntoView({block: 'center'});", box)
        box.click()
        option = _wait(drv, lambda d, t=text: next((o for o in d.find_elements(*_by('[role="option"]')) if t in o.text),
                                                   False), 30, f"option {text!r} of {key}")
        option.click()
        _wait_rendered(drv, f"option {text}")
    from selenium.webdriver.common.keys import Keys

    drv.find_element(*_by(f".st-key-{key} input")).send_keys(Keys.ESCAPE)  # close the dropdown


def _tags(drv: Any, key: str) -> list[str]:
    return [t.text for t in drv.find_elements(*_by(f'.st-key-{key} [data-baseweb="tag"]'))]


def test_tier1_run_shows_the_run_and_keeps_the_view(driver: Any, app_url: str) -> None:  # noqa: F811
    lang = "ru"
    _open(driver, app_url, "tier1_retrieval", lang)
    _click_key(driver, "t1_run")
    # the page shows the run it just made once it finishes: its verdict banner and its number
    try:
        _wait(driver, lambda d: "Вердикт относительно базовых уровней" in _main_text(d)
              and "Состояние: готов" in _main_text(d) and _script_idle(d), JOB_TIMEOUT, "the results of the new Tier 1 run")
    finally:
        _shot(driver, lang, "tier1_after_run")
    _wait_rendered(driver, "the Tier 1 results")
    assert "Вердикт относительно базовых уровней" in _main_text(driver)
    heads = " ".join(h.text for h in driver.find_elements(*_by('[data-testid="stMain"] h3')))
    assert "demo_golden · #" in heads, heads  # the run just made, named by its configuration and number
    _shot(driver, lang, "tier1_run")
    assert not _exceptions(driver)
    assert not _raw_keys(_main_text(driver)), _raw_keys(_main_text(driver))

    # the first click inside a result view right after the run keeps its place across the reruns it causes
    _open_tab(driver, "По вопросам")
    option = next(o for o in driver.find_elements(*_by(".st-key-t1_filter label"))
                  if "нет в top-k" in (o.get_attribute("textContent") or ""))
    driver.execute_script("arguments[0].scrollIntoView({block: 'center'}); arguments[0].click();", option)
    _wait_rendered(driver, "the failures filter")
    _shot(driver, lang, "tier1_view_kept")
    assert _selected_tab(driver) == "По вопросам"
    assert not _exceptions(driver)
    assert not _raw_keys(_main_text(driver)), _raw_keys(_main_text(driver))


def test_llm_tier_offline_is_not_compared(driver: Any, app_url: str) -> None:  # noqa: F811
    lang = "en"
    _open(driver, app_url, "tier2_generation", lang)
    # no LLM is configured in the test session: the form says so before any run
    _wait(driver, lambda d: "No LLM is configured" in _main_text(d), 30, "the no-LLM notice")
    # the Offline box is ticked for the analyst (no LLM), not silently assumed
    assert driver.find_element(*_by(".st-key-t2_offline input")).is_selected()
    _click_key(driver, "t2_run")
    _wait(driver, lambda d: "Offline — not compared" in _main_text(d) and "Showing run" in _main_text(d)
          and bool(d.find_elements(*_by('[data-testid="stMetric"]'))), JOB_TIMEOUT, "the offline Tier 2 run")
    _wait_rendered(driver, "the Tier 2 results")
    _shot(driver, lang, "tier2_offline")
    text = _main_text(driver)
    assert "critical" not in text.lower(), "an offline run got a baseline verdict"
    assert not _exceptions(driver)
    assert not _raw_keys(text), _raw_keys(text)


def test_runs_compare_and_export(driver: Any, app_url: str) -> None:  # noqa: F811
    lang = "en"
    _open(driver, app_url, "runs", lang)
    _open_tab(driver, "Compare two runs")
    _click_key(driver, "runs_cmp_go")
    _wait(driver, lambda d: "Significantly better" in _main_text(d), 120, "the comparison of two runs")
    _wait_rendered(driver, "the comparison")
    _shot(driver, lang, "runs_compare")
    assert _selected_tab(driver) == "Compare two runs"
    assert not _raw_keys(_main_text(driver)), _raw_keys(_main_text(driver))
    _open_tab(driver, "Report and export")
    time.sleep(0.5)
    _shot(driver, lang, "runs_export")
    assert not _exceptions(driver), _exceptions(driver)
    exports = driver.find_elements(*_by('[data-testid="stDownloadButton"]'))
    labels = " ".join(e.get_attribute("textContent") or "" for e in exports)
    errors = [e.get_attribute("textContent") for e in driver.find_elements(*_by('[data-testid="stAlertContentError"]'))]
    assert not errors, errors
    assert all(f in labels for f in ("MD", "HTML", "JSON", "CSV")), labels
    _shot(driver, lang, "runs_export")
    assert not _exceptions(driver)
    assert not _raw_keys(_main_text(driver)), _raw_keys(_main_text(driver))
