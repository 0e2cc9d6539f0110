"""Real-browser journey of an annotator, in Russian and in English: the annotation queue by keyboard alone.

On the run's judged items the annotator types a name, presses a value key (the label is stored and the
queue moves on), goes back with Alt+K, relabels the item with another value key, writes a note and labels the
next item with it, skips one with Alt+S — every step read back from the label store."""

from __future__ import annotations

import time
import uuid
from typing import Any

import pytest

from tests.browser.app_driver import (
    by,
    exceptions,
    nav_link,
    script_idle,
    switch_language,
    wait,
    wait_rendered,
)
from tests.support.plans import run as run_plan
from voproshalych_eval.db import labels as store

pytestmark = pytest.mark.browser


def _labels(engine: Any, who: str) -> dict[str, dict[str, Any]]:
    return {lab["item_key"]: lab for lab in store.list_labels(engine, "show_no_show", annotator=who)}


def _keys(drv: Any, *keys: str) -> None:
    from selenium.webdriver.common.action_chains import ActionChains

    body = drv.find_element(*by('[data-testid="stMain"] h1'))
    ActionChains(drv).move_to_element(body).click(body).perform()  # focus the page, not an input
    chain = ActionChains(drv)
    for k in keys:
        chain = chain.send_keys(k)
    chain.perform()
    time.sleep(0.5)
    wait(drv, lambda d: script_idle(d), 60, f"the page after {keys!r}")


def _alt(drv: Any, key: str) -> None:
    from selenium.webdriver.common.action_chains import ActionChains
    from selenium.webdriver.common.keys import Keys

    body = drv.find_element(*by('[data-testid="stMain"] h1'))
    ActionChains(drv).move_to_element(body).click(body).perform()
    ActionChains(drv).key_down(Keys.ALT).send_keys(key).key_up(Keys.ALT).perform()
    time.sleep(0.5)
    wait(drv, lambda d: script_idle(d), 60, f"the page after Alt+{key}")


def _position(drv: Any) -> str:
    return next((h.text for h in drv.find_elements(*by('[data-testid="stMain"] h3'))), "")


@pytest.mark.parametrize("lang", ["ru", "en"])
def test_annotation_queue_by_keyboard(app_url: str, driver: Any, demo_engine: Any, lang: str) -> None:
    from selenium.webdriver.common.keys import Keys

    run_plan(demo_engine, "judge_pipeline", {"offline": True, "limit": 4, "calibrate": False})  # the newest judged run
    who = f"kb_{lang}_{uuid.uuid4().hex[:6]}"
    drv = driver
    try:
        drv.get(app_url)
        wait_rendered(drv, "the first page")
        link = nav_link(drv, "annotation_queue")
        assert link is not None, "no sidebar link to the annotation queue"
        link.click()
        wait_rendered(drv, "annotation queue")
        switch_language(drv, lang)
        box = drv.find_element(*by(".st-key-aq_annotator input"))
        box.send_keys(Keys.CONTROL, "a")
        box.send_keys(who, Keys.ENTER)
        wait(drv, lambda d: script_idle(d) and d.find_elements(*by(".st-key-aq_v_1 button")), 60, "the queue")
        first = _position(drv)
        _keys(drv, "1")  # value key: "show"
        wait(drv, lambda d: len(_labels(demo_engine, who)) == 1, 30, "the first label stored")
        assert list(_labels(demo_engine, who).values())[0]["value"] == 1.0
        wait(drv, lambda d: _position(d) != first, 30, "the next item")
        _alt(drv, "k")  # previous
        wait(drv, lambda d: _position(d) == first, 30, "back on the first item")
        _keys(drv, "0")  # relabel it: "do not show"
        wait(drv, lambda d: [x["value"] for x in _labels(demo_engine, who).values()] == [0.0], 30, "the relabel")
        note = drv.find_element(*by('[data-testid="stMain"] [data-testid="stTextInput"] input'))
        note.send_keys("ответ не по фрагменту" if lang == "ru" else "not grounded", Keys.ENTER)
        wait(drv, lambda d: script_idle(d), 60, "the note")
        _keys(drv, "1")
        wait(drv, lambda d: len(_labels(demo_engine, who)) == 2, 30, "the second label")
        assert any(x["note"] for x in _labels(demo_engine, who).values())
        before = _position(drv)
        _alt(drv, "s")  # skip: no label, next item
        wait(drv, lambda d: _position(d) != before, 30, "the skipped item left")
        assert len(_labels(demo_engine, who)) == 2
        progress = drv.find_element(*by('[data-testid="stMain"] [data-testid="stProgress"]')).text
        assert ("Размечено 2" if lang == "ru" else "Labelled 2") in progress, progress
        assert not exceptions(drv), exceptions(drv)
    finally:
        for key in _labels(demo_engine, who):
            store.delete_label(demo_engine, "show_no_show", key, who)
