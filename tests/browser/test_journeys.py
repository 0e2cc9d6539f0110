"""Real-browser journeys of an analyst, each in Russian and in English.

Each journey drives the app served by ``streamlit run`` (the session's server and Chromium of
``conftest.py``) and asserts what the analyst must see — the run just made (its id read from the store),
the view kept after a click that reruns the page, the verdict text, no metric key in the visible text —
saving a screenshot of every step to ``artifacts/screenshots/<journey>-<lang>-<step>.png`` (kept as CI
artefacts by ``.ci/run``):

1. ``tier1``: a run from the form at the top; a comparison of two more configurations shows every run it
   started; the best run by MRR opens on its per-question detail, which keeps its place while its filter
   reruns the page;
2. ``tier0``: metrics of the knowledge-base vectors, the UMAP projection, a lasso selection on the map
   whose texts are listed (read back from the selection's CSV download);
3. ``real-users``: an analysis of the demo log (👎 questions only, so it is quick), the topic map in the
   Topics view, a search that highlights exactly the questions containing a word;
4. ``tier2``: an LLM tier with no LLM configured: the form says so, the run is offline, "not compared";
5. ``runs``: two runs compared, then a run's report with its verdict, downloaded as HTML in the UI language.

Every wait is a condition with a generous timeout (a loaded machine makes the journey slower, not red);
elements are found by their Streamlit key or their visible text in the current language.
"""

from __future__ import annotations

import re
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from tests.browser.app_driver import (
    SCREENSHOTS,
    by,
    exceptions,
    nav_link,
    script_idle,
    switch_language,
    wait,
    wait_rendered,
)
from tests.support.ui_text import violations
from voproshalych_eval.engine import baselines as bl
from voproshalych_eval.engine import runs

pytestmark = pytest.mark.browser

JOB_TIMEOUT = 300.0
LANGS = ("ru", "en")


def _shot(drv: Any, journey: str, lang: str, step: str) -> None:
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    drv.save_screenshot(str(SCREENSHOTS / f"{journey}-{lang}-{step}.png"))


def _main_text(drv: Any) -> str:
    return drv.find_element(*by('[data-testid="stMain"]')).text


def _raw_keys(drv: Any, lang: str) -> list[str]:
    """Metric keys in the visible text of the main area (tables are canvases: only our words are read)."""
    return [v for v in violations([("page text", _main_text(drv))], lang) if " key " in v]


def _clean(drv: Any, lang: str) -> None:
    assert not exceptions(drv), exceptions(drv)
    assert not _raw_keys(drv, lang), _raw_keys(drv, lang)


def _open(drv: Any, url: str, page: str, lang: str) -> None:
    """Open the app (a new session), go to ``page`` through its sidebar link, switch the language there."""
    drv.get(url)
    wait_rendered(drv, "the first page")
    link = nav_link(drv, page)
    assert link is not None, f"no sidebar link to {page}"
    link.click()
    wait(drv, lambda d: d.current_url.split("?")[0].rstrip("/").endswith(page), 30, f"the URL of {page}")
    wait_rendered(drv, page)
    switch_language(drv, lang)  # on the page itself: the switch reruns it in the language
    nav = drv.find_element(*by('[data-testid="stSidebarNav"]')).get_attribute("textContent") or ""
    assert {"ru": "Запуски", "en": "Runs"}[lang] in nav, nav[:200]


def _scroll_click(drv: Any, element: Any) -> None:
    drv.execute_script("arguments[0].scrollIntoView({block: 'center'});", element)
    element.click()


def _click_key(drv: Any, key: str) -> None:
    button = wait(drv, lambda d: next(iter(d.find_elements(*by(f".st-key-{key} button"))), False), 60, f"button {key}")
    _scroll_click(drv, button)


#: the controls a result view can be chosen with: tabs, a segmented control or pills, a radio
_VIEW_CONTROLS = ('[role="tab"]', 'button[kind^="segmented_control"]', 'button[kind^="pills"]',
                  '[data-testid="stRadio"] label')
_SELECTED = ('[role="tab"][aria-selected="true"]', 'button[kind="segmented_controlActive"]',
             'button[kind="pillsActive"]', '[data-testid="stRadio"] label:has(input:checked)')


def _open_view(drv: Any, label: str) -> None:
    """Open the result view ``label`` (a tab, a segmented control's or a radio's option)."""
    def control(d: Any) -> Any:
        for css in _VIEW_CONTROLS:
            for e in d.find_elements(*by(f'[data-testid="stMain"] {css}')):
                if (e.get_attribute("textContent") or "").strip() == label:
                    return e
        return False

    _scroll_click(drv, wait(drv, control, 60, f"view {label!r}"))
    wait(drv, lambda d: label in _selected_views(d) and script_idle(d), 60, f"view {label!r} open")


def _selected_views(drv: Any) -> set[str]:
    return {(e.get_attribute("textContent") or "").strip()
            for css in _SELECTED for e in drv.find_elements(*by(f'[data-testid="stMain"] {css}'))}


def _select(drv: Any, key: str, ends_with: str, *, starts_with: bool = False) -> None:
    """Choose the option of the selectbox ``key`` whose label ends with ``ends_with`` (typed to filter); with
    ``starts_with``, the option whose label starts with it."""
    from selenium.webdriver.common.keys import Keys

    def fits(label: str) -> bool:
        return label.startswith(ends_with) if starts_with else label.endswith(ends_with)

    box = drv.find_element(*by(f".st-key-{key} input"))
    _scroll_click(drv, box)
    box.send_keys(Keys.CONTROL, "a")
    box.send_keys(ends_with)
    option = wait(drv, lambda d: next((o for o in d.find_elements(*by('[role="option"]'))
                                       if fits(o.text.strip())), False), 30, f"option {ends_with!r} of {key}")
    option.click()
    wait(drv, lambda d: fits(_picked(d, key)) and script_idle(d), 60, f"{ends_with!r} chosen in {key}")


def _choose_dataset(drv: Any, key: str, name: str) -> None:
    """Pick the dataset ``name`` in the selectbox ``key`` when the page shows one (a page opens on the dataset of
    the run it shows, which an earlier test may have made on another dataset)."""
    if drv.find_elements(*by(f".st-key-{key} input")) and not _picked(drv, key).startswith(name):
        _select(drv, key, name, starts_with=True)


def _picked(drv: Any, key: str) -> str:
    """The label shown by the selectbox ``key`` (the value of its combobox input, however the box clips it)."""
    box = drv.find_elements(*by(f".st-key-{key} input"))
    return str(box[0].get_property("value") or "") if box else ""


def _pick_options(drv: Any, key: str, texts: list[str]) -> None:
    """Choose options of the multiselect ``key`` whose label contains each of ``texts``."""
    from selenium.webdriver.common.keys import Keys

    for text in texts:
        box = drv.find_element(*by(f".st-key-{key} input"))
        _scroll_click(drv, box)
        option = wait(drv, lambda d, t=text: next((o for o in d.find_elements(*by('[role="option"]')) if t in o.text),
                                                  False), 30, f"option {text!r} of {key}")
        option.click()
        wait(drv, lambda d, t=text: any(t in x for x in _tags(d, key)) and script_idle(d), 60, f"{text!r} picked in {key}")
    drv.find_element(*by(f".st-key-{key} input")).send_keys(Keys.ESCAPE)  # close the dropdown


def _tags(drv: Any, key: str) -> list[str]:
    """The labels of the options chosen in the multiselect ``key``."""
    return [t.get_attribute("aria-label") or "" for t in drv.find_elements(*by(f".st-key-{key} [data-tag]"))]


def _heads(drv: Any) -> str:
    return " ".join(h.text for h in drv.find_elements(*by('[data-testid="stMain"] h3')))


def _last_run_id(engine: Any, tier: str) -> int:
    latest = runs.list_runs(engine, tier=tier, limit=1)
    return latest[0].id if latest else 0


def _new_runs(drv: Any, engine: Any, tier: str, after: int, n: int = 1) -> list[int]:
    """Wait until ``n`` runs of ``tier`` newer than run ``after`` exist and finished; their ids, oldest first."""
    def finished(_: Any) -> list[int] | bool:
        new = [r for r in runs.list_runs(engine, tier=tier, limit=50) if r.id > after]
        return sorted(r.id for r in new) if len(new) >= n and all(r.status in runs.FINISHED for r in new) else False

    return wait(drv, finished, JOB_TIMEOUT, f"{n} new finished {tier} run(s) after #{after}")


def _status_text(status: str, lang: str) -> str:
    return f"{bl.STATUS_ICONS.get(status, '')} {bl.STATUS_LABELS[status][0 if lang == 'ru' else 1]}"


# ------------------------------------------------------------------------------------------ 1. Tier 1

T1 = {
    "ru": {"verdict": "Вердикт относительно базовых уровней", "compare": "Сравнение", "fts": "Полнотекстовый",
           "hybrid": "Гибридный", "running": "Ещё выполняются", "best": "Лучший по MRR", "questions": "По вопросам",
           "failk": "нет в top-k", "show": "Показывать"},
    "en": {"verdict": "Verdict against the baselines", "compare": "Comparison", "fts": "Full-text", "hybrid": "Hybrid",
           "running": "Still running", "best": "Best by MRR", "questions": "Per question", "failk": "no relevant in top k",
           "show": "Show"},
}


@pytest.mark.parametrize("lang", LANGS)
def test_tier1_run_comparison_and_the_best_run(driver: Any, app_url: str, demo_engine: Any, lang: str) -> None:
    t, j = T1[lang], "tier1"
    before = _last_run_id(demo_engine, "tier1")
    _open(driver, app_url, "tier1_retrieval", lang)
    _choose_dataset(driver, "t1_dataset", "demo_golden")  # the form starts on the shown run's dataset
    _click_key(driver, "t1_run")
    (run_id,) = _new_runs(driver, demo_engine, "tier1", before)
    try:  # the page shows the run it just made once it finishes: its verdict banner and its number
        wait(driver, lambda d: f"· #{run_id}" in _heads(d) and t["verdict"] in _main_text(d) and script_idle(d),
             JOB_TIMEOUT, f"the results of the new Tier 1 run #{run_id}")
    finally:
        _shot(driver, j, lang, "1-run")
    assert "demo_golden" in _heads(driver)  # named by its configuration, dataset and number
    _clean(driver, lang)

    # a comparison of two more configurations: every run it started joins the chart, the view stays open
    _open_view(driver, t["compare"])
    _pick_options(driver, "t1_cmp_cfg", [t["fts"], t["hybrid"]])
    _shot(driver, j, lang, "2-comparison-form")
    _click_key(driver, "t1_cmp_run")
    started = _new_runs(driver, demo_engine, "tier1", run_id, n=2)
    wanted = [run_id, *started]
    try:
        wait(driver, lambda d: all(any(f"#{i}" == x.rsplit(" · ", 1)[-1].strip() for x in _tags(d, "t1_cmp_runs"))
                                   for i in wanted) and t["running"] not in _main_text(d) and script_idle(d),
             JOB_TIMEOUT, f"runs {wanted} in the comparison")
    finally:
        _shot(driver, j, lang, "3-comparison")
    assert t["compare"] in _selected_views(driver), _selected_views(driver)
    assert driver.find_elements(*by(".st-key-t1_cmp_chart")), "no comparison chart"
    _clean(driver, lang)

    # the best by MRR (chunk level, the comparison's default) is named, and opens on its per-question detail
    mrr = {i: runs.flatten_metrics(runs.get_run(demo_engine, i).metrics or {}).get("chunk.mrr", {}).get("value")
           for i in wanted}
    best = max(wanted, key=lambda i: mrr[i] if mrr[i] is not None else -1.0)
    line = next((x for x in _main_text(driver).splitlines() if t["best"] in x), "")
    assert line.endswith((f"#{best}", f"#{best} ({mrr[best]:.3f})")), (line, mrr)  # the run, then its value
    if best != run_id:
        _click_key(driver, "t1_open_best")
        wait(driver, lambda d: f"· #{best}" in _heads(d) and t["questions"] in _selected_views(d) and script_idle(d),
             60, f"the per-question detail of the best run #{best}")
    else:  # the page's own run is the best: its detail is one view away
        _open_view(driver, t["questions"])
    _shot(driver, j, lang, "4-best-run-detail")
    assert t["show"] in _main_text(driver) and driver.find_elements(*by(".st-key-t1_ranks")), "no per-question detail"
    _clean(driver, lang)

    # a click inside the view reruns the page; the view and the run stay
    option = next(o for o in driver.find_elements(*by(".st-key-t1_filter label"))
                  if t["failk"] in (o.get_attribute("textContent") or ""))
    driver.execute_script("arguments[0].scrollIntoView({block: 'center'}); arguments[0].click();", option)
    wait(driver, lambda d: bool(d.find_elements(*by(".st-key-t1_filter label:has(input:checked)")))
         and t["failk"] in d.find_element(*by(".st-key-t1_filter label:has(input:checked)")).text and script_idle(d),
         60, "the failures filter")
    _shot(driver, j, lang, "5-view-kept")
    assert t["questions"] in _selected_views(driver), _selected_views(driver)
    assert f"· #{best}" in _heads(driver)
    _clean(driver, lang)


# ------------------------------------------------------------------------------------------ 2. Tier 0

T0 = {"ru": {"metrics": "Метрики пространства", "run": "запуск", "selected": "Выбрано точек"},
      "en": {"metrics": "Space metrics", "run": "run", "selected": "Selected points"}}


def _lasso(drv: Any, css: str) -> None:
    """Draw a lasso (the map's drag mode) around the middle half of the plot ``css``."""
    from selenium.webdriver.common.action_chains import ActionChains

    area = wait(drv, lambda d: next(iter(d.find_elements(*by(f"{css} .nsewdrag"))), False), 60, "the map's drag area")
    drv.execute_script("arguments[0].scrollIntoView({block: 'center'});", area)
    w, h = area.size["width"], area.size["height"]
    chain = ActionChains(drv, duration=50).move_to_element_with_offset(area, -w // 4, -h // 4).click_and_hold()
    steps = 8
    for dx, dy in ((w // 2, 0), (0, h // 2), (-w // 2, 0), (0, -h // 2)):
        for _ in range(steps):
            chain = chain.move_by_offset(dx // steps, dy // steps)
    chain.release().perform()


@pytest.mark.parametrize("lang", LANGS)
def test_tier0_umap_and_a_selection(driver: Any, app_url: str, demo_engine: Any, downloads: Path, lang: str) -> None:
    t, j = T0[lang], "tier0"
    before = _last_run_id(demo_engine, "tier0")
    _open(driver, app_url, "tier0_embeddings", lang)
    _click_key(driver, "t0_run")
    (run_id,) = _new_runs(driver, demo_engine, "tier0", before)
    try:
        wait(driver, lambda d: t["metrics"] in _main_text(d) and f"{t['run']} #{run_id}" in _main_text(d)
             and script_idle(d), JOB_TIMEOUT, f"the metrics of the new Tier 0 run #{run_id}")
    finally:
        _shot(driver, j, lang, "1-metrics")
    assert len(driver.find_elements(*by('[data-testid="stMetric"]'))) >= 8
    _clean(driver, lang)

    _click_key(driver, "t0_project")
    try:
        wait(driver, lambda d: bool(d.find_elements(*by(".st-key-t0_scatter .js-plotly-plot .scatterlayer .point")))
             and script_idle(d), JOB_TIMEOUT, "the UMAP map")
    finally:
        _shot(driver, j, lang, "2-projection")
    assert "Trustworthiness" in _main_text(driver)
    _clean(driver, lang)

    _lasso(driver, ".st-key-t0_scatter")
    try:
        found = wait(driver, lambda d: script_idle(d) and re.search(rf"{t['selected']}: (\d+)", _main_text(d)),
                     120, "the points selected on the map")
    finally:
        _shot(driver, j, lang, "3-selection")
    n_selected = int(found.group(1))
    assert n_selected >= 1
    # the selection reruns the page: the map stays, and the selected texts are listed (read back from the CSV)
    assert driver.find_elements(*by(".st-key-t0_scatter .js-plotly-plot"))
    for old in downloads.glob("tier0_selection*.csv"):
        old.unlink()
    _click_key(driver, "dl_t0_sel_csv")
    csv = wait(driver, lambda d: next(iter(downloads.glob("tier0_selection*.csv")), False), 60, "the selection's CSV")
    import pandas as pd

    selection = pd.read_csv(csv)
    assert len(selection) == n_selected, (len(selection), n_selected)
    assert selection["text"].fillna("").str.strip().str.len().gt(0).all(), selection.head()
    _clean(driver, lang)


# ------------------------------------------------------------------------------------------ 3. Real users

RU = {"ru": {"topics": "Темы и пробелы", "map": "Карта тем", "hits": "Подсвечено вопросов"},
      "en": {"topics": "Topics & coverage gaps", "map": "Topic map", "hits": "Highlighted questions"}}


def _search_word(demo_source: Any) -> tuple[str, int]:
    """A frequent word of the 👎 questions of the demo log and how many of them contain it."""
    from sqlalchemy import text

    with demo_source.connect() as conn:
        questions = [q for (q,) in conn.execute(text("SELECT question FROM question_answer WHERE score = 1")) if q]
    words = Counter(w for q in questions for w in set(re.findall(r"[а-яё]{6,}", q.lower())))
    word = words.most_common(1)[0][0]
    return word, sum(word in q.lower() for q in questions)


@pytest.mark.parametrize("lang", LANGS)
def test_real_users_topic_map(driver: Any, app_url: str, demo_engine: Any, demo_source: Any, lang: str) -> None:
    from selenium.webdriver.common.keys import Keys

    t, j = RU[lang], "real-users"
    before = _last_run_id(demo_engine, "real_users")
    _open(driver, app_url, "real_users", lang)
    _pick_options(driver, f"ru_scores_{lang}", ["👎 1"])  # the 👎 questions only: a quick analysis
    _click_key(driver, "ru_run")
    (run_id,) = _new_runs(driver, demo_engine, "real_users", before)
    try:
        # the run picker and the run's caption name the analysis just made (``… · #ID``)
        wait(driver, lambda d: re.search(rf"· #{run_id}\b", _main_text(d)) is not None and script_idle(d),
             JOB_TIMEOUT, f"the results of the new analysis #{run_id}")
    finally:
        _shot(driver, j, lang, "1-run")
    _clean(driver, lang)

    _open_view(driver, t["topics"])
    _shot(driver, j, lang, "2-topics")
    _click_key(driver, "ru_map")
    map_css = ".st-key-fig_topic_map .js-plotly-plot .scatterlayer .point"
    wait(driver, lambda d: bool(d.find_elements(*by(map_css))) and script_idle(d), JOB_TIMEOUT, "the topic map")
    _shot(driver, j, lang, "3-map-built")
    assert t["topics"] in _selected_views(driver), _selected_views(driver)  # the view kept across the map's rerun
    assert t["map"] in _main_text(driver)
    assert len(driver.find_elements(*by(map_css))) > 0
    _clean(driver, lang)

    word, expected = _search_word(demo_source)
    box = driver.find_element(*by(".st-key-ru_map_search input"))
    _scroll_click(driver, box)
    box.send_keys(word, Keys.ENTER)
    try:
        found = wait(driver, lambda d: script_idle(d) and re.search(rf"{t['hits']}: (\d+) \S+ (\d+)", _main_text(d)),
                     120, f"the questions with {word!r} highlighted")
    finally:
        _shot(driver, j, lang, "4-search")
    assert int(found.group(1)) == expected, (word, found.group(0), expected)
    assert expected <= int(found.group(2))
    assert t["topics"] in _selected_views(driver), _selected_views(driver)
    _clean(driver, lang)


# ------------------------------------------------------------------------------------------ 4. LLM tier offline

T2 = {"ru": {"no_llm": "LLM не настроен", "verdict": "офлайн — не сравнивается", "critical": "критично"},
      "en": {"no_llm": "No LLM is configured", "verdict": "offline — not compared", "critical": "critical"}}


@pytest.mark.parametrize("lang", LANGS)
def test_llm_tier_offline_is_not_compared(driver: Any, app_url: str, demo_engine: Any, lang: str) -> None:
    t, j = T2[lang], "tier2-offline"
    before = _last_run_id(demo_engine, "tier2")
    _open(driver, app_url, "tier2_generation", lang)
    # no LLM is configured in the test session: the form says so before any run
    wait(driver, lambda d: t["no_llm"] in _main_text(d), 30, "the no-LLM notice")
    # the Offline box is ticked for the analyst (no LLM), not silently assumed
    assert driver.find_element(*by(".st-key-t2_offline input")).is_selected()
    _shot(driver, j, lang, "1-form")
    _click_key(driver, "t2_run")
    (run_id,) = _new_runs(driver, demo_engine, "tier2", before)
    try:
        wait(driver, lambda d: _picked(d, "pick_tier2_run_id").endswith(f"#{run_id}"), JOB_TIMEOUT,
             f"the offline Tier 2 run #{run_id} in the run picker")
        wait(driver, lambda d: t["verdict"] in _main_text(d).lower(), 60, f"the verdict {t['verdict']!r}")
        wait(driver, script_idle, 120, "the Tier 2 page to finish")
    finally:
        _shot(driver, j, lang, "2-offline-run")
    assert t["critical"] not in _main_text(driver).lower(), "an offline run got a baseline verdict"
    _clean(driver, lang)


# ------------------------------------------------------------------------------------------ 5. Runs

RUNS = {
    "ru": {"compare": "Сравнение двух запусков", "better": "Значимо лучше", "report": "Отчёт и экспорт",
           "verdict": "Вердикт", "title": "Отчёт о запуске", "summary": "Кратко", "tech": "Технические подробности"},
    "en": {"compare": "Compare two runs", "better": "Significantly better", "report": "Report and export",
           "verdict": "Verdict", "title": "Run report", "summary": "Summary", "tech": "Technical details"},
}


def _metric_value(drv: Any, label: str) -> str:
    for card in drv.find_elements(*by('[data-testid="stMetric"]')):
        if card.find_element(*by('[data-testid="stMetricLabel"]')).text.strip() == label:
            return card.find_element(*by('[data-testid="stMetricValue"]')).text.strip()
    return ""


@pytest.mark.parametrize("lang", LANGS)
def test_runs_compare_and_export(driver: Any, app_url: str, demo_engine: Any, downloads: Path, lang: str) -> None:
    t, other, j = RUNS[lang], RUNS["en" if lang == "ru" else "ru"], "runs"
    _open(driver, app_url, "runs", lang)
    _open_view(driver, t["compare"])
    _click_key(driver, "runs_cmp_go")
    try:
        wait(driver, lambda d: t["better"] in _main_text(d) and script_idle(d), 120, "the comparison of two runs")
    finally:
        _shot(driver, j, lang, "1-compare")
    assert t["compare"] in _selected_views(driver), _selected_views(driver)  # kept after the rerun of Compare
    _clean(driver, lang)

    # the report of the newest Tier 1 run: its verdict against the baselines, then its export in the UI language
    run = runs.list_runs(demo_engine, tier="tier1", status="done", limit=1)[0]
    status = bl.evaluate_run(bl.list_baselines(demo_engine), run.tier, run.status, run.metrics or {},
                             offline=bool(run.offline)).status
    _open_view(driver, t["report"])
    _select(driver, "runs_rep_run", f"#{run.id}")
    try:
        wait(driver, lambda d: _metric_value(d, t["verdict"]) == _status_text(status, lang), 60, "the run's verdict")
    finally:
        _shot(driver, j, lang, "2-report")
    assert t["report"] in _selected_views(driver)
    errors = [e.get_attribute("textContent") for e in driver.find_elements(*by('[data-testid="stAlertContentError"]'))]
    assert not errors, errors
    labels = " ".join(e.get_attribute("textContent") or "" for e in driver.find_elements(*by('[data-testid="stDownloadButton"]')))
    assert all(f in labels for f in ("MD", "HTML", "JSON", "CSV")), labels
    _clean(driver, lang)

    name = f"run_{run.id}_tier1"
    for old in downloads.glob(f"{name}*"):
        old.unlink()
    _click_key(driver, "runs_rep_dl_html")
    report = wait(driver, lambda d: next((p for p in downloads.glob(f"{name}*.html")), False), 120, "the HTML report")
    html = report.read_text(encoding="utf-8")
    _shot(driver, j, lang, "3-exported")
    assert f'<html lang="{lang}">' in html
    for word in ("title", "summary", "tech"):
        assert t[word] in html, f"the {lang} report has no {t[word]!r}"
        assert other[word] not in html, f"the {lang} report says {other[word]!r}"
    assert html.index(t["summary"]) < html.index(t["tech"]), "the report opens with technical details"
    assert bl.STATUS_LABELS[status][0 if lang == "ru" else 1] in html, "the report has no verdict"
