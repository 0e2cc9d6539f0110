"""Real-browser journey of a dataset reviewer (issue 29 item 4): Enter in the rejection-reason field accepts and
rejects nothing; Alt+A accepts the item and the next one opens."""

from __future__ import annotations

import time
import uuid
from typing import Any

import pytest

from tests.browser.app_driver import by, exceptions, nav_link, script_idle, wait, wait_rendered
from voproshalych_eval.datasets import annotations as A
from voproshalych_eval.datasets.store import Dataset, content_hash, get_dataset, store

pytestmark = pytest.mark.browser


def test_enter_in_the_rejection_field_accepts_nothing(app_url: str, driver: Any, demo_engine: Any) -> None:
    from selenium.webdriver.common.action_chains import ActionChains
    from selenium.webdriver.common.keys import Keys

    recs = [dict(r) for r in get_dataset(demo_engine, "demo_golden", "golden").records[:3]]
    ds = store(demo_engine, Dataset("rvkeys_" + uuid.uuid4().hex[:6], "golden", recs, content_hash(recs), source="test"))
    first, second = ds.keys()[0], ds.keys()[1]
    drv = driver
    drv.get(app_url)
    wait_rendered(drv, "the first page")
    link = nav_link(drv, "dataset_review")
    assert link is not None, "no sidebar link to the dataset review"
    link.click()
    wait_rendered(drv, "dataset review")  # the newest golden set is the default: the one just stored
    reason = wait(drv, lambda d: d.find_elements(*by(f".st-key-rv_reason_{first} input")), 60, "the reason field")[0]
    reason.send_keys("дубликат", Keys.ENTER)
    time.sleep(1.0)
    wait(drv, lambda d: script_idle(d), 60, "the page after Enter")
    rev = A.reviews(demo_engine, ds.name).get(first)
    assert rev is None or rev.status == "pending", rev
    assert get_dataset(demo_engine, ds.name).version == 1
    # Alt+A accepts, and the next item opens
    body = drv.find_element(*by('[data-testid="stMain"] h1'))
    ActionChains(drv).move_to_element(body).click(body).perform()
    ActionChains(drv).key_down(Keys.ALT).send_keys("a").key_up(Keys.ALT).perform()
    wait(drv, lambda d: (r := A.reviews(demo_engine, ds.name).get(first)) is not None and r.status == "accepted", 30,
         "the item accepted by Alt+A")
    wait(drv, lambda d: d.find_elements(*by(f".st-key-rv_reason_{second} input")), 60, "the next item")
    assert not exceptions(drv), exceptions(drv)
