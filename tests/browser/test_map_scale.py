"""A 20,000-point map stays interactive in a real browser (Debian's headless Chromium, WebGL).

The map is :func:`voproshalych_eval.plots.embedding_space.scatter_figure` of
:func:`~voproshalych_eval.plots.embedding_space.synthetic_map` (40 classes, a few far points), saved as the
self-contained HTML the pages offer for download. The test checks that it renders as WebGL (``scattergl``,
a WebGL canvas), that every point is drawn inside the robust frame, and that it answers a zoom
(``Plotly.relayout``), a hover (``plotly_hover`` with a point) and a lasso-style selection
(``plotly_selected``) — each within the generous ``ACTION_TIMEOUT`` (an unresponsive page times out; no
timings are asserted). A second test reads the search highlight as a user sees it: the matches in the contrast
colour on top with their count in the legend, the density layer, and group labels whose boxes do not overlap on
the screen. Skipped with a reason when Chromium or chromedriver is absent.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.browser.app_driver import CHROMIUM, chromedriver
from voproshalych_eval.plots import embedding_space as charts

pytestmark = pytest.mark.browser

N_POINTS = 20_000
ACTION_TIMEOUT = 120


@pytest.fixture(scope="module")
def driver() -> Iterator[Any]:
    drv_path = chromedriver()
    if not os.access(CHROMIUM, os.X_OK) or drv_path is None:
        pytest.skip("needs Debian's chromium and chromium-driver (/usr/bin/chromium, chromedriver)")
    pytest.importorskip("selenium")
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    os.environ.setdefault("SE_OFFLINE", "true")
    profile = tempfile.mkdtemp(prefix="chromium-profile-")
    opts = webdriver.ChromeOptions()
    opts.binary_location = CHROMIUM
    for flag in ("--headless=new", "--no-sandbox", "--use-angle=swiftshader", "--enable-unsafe-swiftshader",
                 "--disable-background-networking", "--disable-component-update", "--no-first-run",
                 "--window-size=1400,1000", f"--user-data-dir={profile}", "--disable-dev-shm-usage"):
        opts.add_argument(flag)
    drv = webdriver.Chrome(service=Service(executable_path=drv_path), options=opts)
    drv.set_page_load_timeout(ACTION_TIMEOUT)
    drv.set_script_timeout(ACTION_TIMEOUT)
    try:
        yield drv
    finally:
        drv.quit()
        shutil.rmtree(profile, ignore_errors=True)


def map_figure(n: int = N_POINTS) -> Any:
    """An ``n``-point map (40 classes, labels at the centres, a search highlight, one picked point)."""
    coords, meta = charts.synthetic_map(n, n_classes=40)
    highlight = meta["text"].str.endswith(" 7").to_numpy()
    return charts.scatter_figure(coords, meta, "section", label_centres=True, highlight=highlight, picked=[0],
                                 title="20k", texts={"matches": "найдено"})


def write_map_fixture(path: Path, n: int = N_POINTS, fig: Any = None) -> Path:
    """The map as the self-contained HTML the pages offer for download."""
    path.write_text(charts.standalone_html(fig if fig is not None else map_figure(n)), encoding="utf-8")
    return path


def open_map(driver: Any, fig: Any, path: Path) -> None:
    """Open the map's HTML in the browser and wait until plotly has drawn it."""
    from selenium.webdriver.support.ui import WebDriverWait

    driver.get(write_map_fixture(path, fig=fig).as_uri())
    WebDriverWait(driver, ACTION_TIMEOUT).until(
        lambda d: d.execute_script("const g=document.querySelector('.js-plotly-plot');"
                                   "return !!(g && g._fullLayout && g.calcdata);"))


def test_20000_point_map_is_interactive(driver, tmp_path) -> None:  # type: ignore[no-untyped-def]
    from selenium.webdriver.support.ui import WebDriverWait

    fig = map_figure()
    open_map(driver, fig, tmp_path / "map.html")
    info = driver.execute_script("""
        const g = document.querySelector('.js-plotly-plot');
        const n = g._fullData.filter(t => t.type !== 'contour').reduce((a, t) => a + (t.x ? t.x.length : 0), 0);
        const gl = [...document.querySelectorAll('canvas')].some(c => {
            try { return !!(c.getContext('webgl') || c.getContext('webgl2')); } catch (e) { return true; } });
        const xr = g._fullLayout.xaxis.range, yr = g._fullLayout.yaxis.range;
        let inside = true;
        for (const t of g._fullData) if (t.type !== 'contour') for (let i = 0; i < t.x.length; i++)
            if (t.x[i] < xr[0] - 1e-9 || t.x[i] > xr[1] + 1e-9 || t.y[i] < yr[0] - 1e-9 || t.y[i] > yr[1] + 1e-9) inside = false;
        return {n: n, types: [...new Set(g._fullData.map(t => t.type))], gl: gl, inside: inside,
                annotations: (g.layout.annotations || []).length};
    """)
    assert info["types"] == ["contour", "scattergl"] and info["gl"], info  # the density layer under the points
    assert info["n"] >= N_POINTS and info["inside"] and info["annotations"] == fig.layout.meta["labels_shown"], info

    zoomed = driver.execute_async_script("""
        const done = arguments[arguments.length - 1];
        const g = document.querySelector('.js-plotly-plot');
        Plotly.relayout(g, {'xaxis.range': [-5, 5], 'yaxis.range': [-5, 5]})
            .then(() => done(g._fullLayout.xaxis.range)).catch(e => done('error: ' + e));
    """)
    assert zoomed == [-5, 5], zoomed

    # a real mouse move over a point: plotly must answer with a hover event
    target = driver.execute_async_script("""
        const done = arguments[arguments.length - 1];
        const g = document.querySelector('.js-plotly-plot');
        const t = g._fullData[1];
        window.__hovered = null;
        g.on('plotly_hover', ev => { window.__hovered = ev.points.length; });
        Plotly.relayout(g, {'xaxis.range': [t.x[0] - 0.5, t.x[0] + 0.5], 'yaxis.range': [t.y[0] - 0.5, t.y[0] + 0.5]})
            .then(() => {
                const L = g._fullLayout, box = g.querySelector('.nsewdrag').getBoundingClientRect();
                done({x: L.xaxis.l2p(t.x[0]) - box.width / 2, y: L.yaxis.l2p(t.y[0]) - box.height / 2});
            });
    """)
    from selenium.webdriver.common.action_chains import ActionChains
    from selenium.webdriver.common.by import By

    drag = driver.find_element(By.CSS_SELECTOR, ".nsewdrag")
    ActionChains(driver).move_to_element_with_offset(drag, int(target["x"]), int(target["y"])).perform()
    hovered = WebDriverWait(driver, ACTION_TIMEOUT).until(lambda d: d.execute_script("return window.__hovered;"))
    assert hovered >= 1, hovered

    # a real box selection (drag) over the whole frame: plotly answers with the selected points
    driver.execute_async_script("""
        const done = arguments[arguments.length - 1];
        const g = document.querySelector('.js-plotly-plot');
        window.__selected = null;
        g.on('plotly_selected', ev => { window.__selected = ev ? ev.points.length : 0; });
        Plotly.relayout(g, {'xaxis.range': [-12, 12], 'yaxis.range': [-12, 12], dragmode: 'select'}).then(() => done(1));
    """)
    drag = driver.find_element(By.CSS_SELECTOR, ".nsewdrag")
    w, h = drag.size["width"], drag.size["height"]
    (ActionChains(driver).move_to_element_with_offset(drag, -w // 4, -h // 4).click_and_hold()
     .move_by_offset(w // 4, h // 4).move_by_offset(w // 4, h // 4).release().perform())
    selected = WebDriverWait(driver, ACTION_TIMEOUT).until(lambda d: d.execute_script("return window.__selected;"))
    assert selected >= 100, selected


def test_20000_point_map_shows_search_matches_in_a_contrast_colour(driver, tmp_path) -> None:  # type: ignore[no-untyped-def]
    """The search highlight on a 20,000-point map as a user sees it: the matches drawn on top in the contrast
    colour, named with their count in the legend, and group labels that do not overlap on the screen."""
    fig = map_figure()
    n_matches = fig.layout.meta["n_matches"]
    assert n_matches > 100
    open_map(driver, fig, tmp_path / "search.html")
    seen = driver.execute_script("""
        const g = document.querySelector('.js-plotly-plot');
        const matches = g._fullData.filter(t => t.name.startsWith('найдено'));
        const legend = [...document.querySelectorAll('.legend .traces .legendtext')].map(e => e.textContent);
        const boxes = [...document.querySelectorAll('.annotation .annotation-text-g')].map(a => a.getBoundingClientRect())
            .map(r => [r.left, r.top, r.right, r.bottom]);
        let overlaps = 0;
        const pairs = [];
        const texts = [...document.querySelectorAll('.annotation')].map(a => a.textContent);
        for (let i = 0; i < boxes.length; i++) for (let j = i + 1; j < boxes.length; j++) {
            const a = boxes[i], b = boxes[j];
            if (a[0] < b[2] - 1 && b[0] < a[2] - 1 && a[1] < b[3] - 1 && b[1] < a[3] - 1) {
                overlaps++; pairs.push([texts[i], a, texts[j], b]);
            }
        }
        const last = g._fullData[g._fullData.length - 2];  // under the picked star, over every category
        return {n: matches.length ? matches[0].x.length : 0, colour: matches.length ? matches[0].marker.color : null,
                type: matches.length ? matches[0].type : null, legend: legend, labels: boxes.length,
                overlaps: overlaps, pairs: pairs.slice(0, 3), on_top: last.name,
                plot: [g._fullLayout._size.w, g._fullLayout._size.h]};
    """)
    assert seen["n"] == n_matches and seen["type"] == "scattergl", seen
    assert seen["colour"] == charts.MATCH_COLOR and seen["on_top"].startswith("найдено"), seen
    assert f"найдено ({n_matches})" in seen["legend"], seen["legend"]
    assert seen["labels"] == fig.layout.meta["labels_shown"] >= 10, seen
    assert seen["overlaps"] == 0, (seen["overlaps"], seen["plot"], seen["pairs"])
