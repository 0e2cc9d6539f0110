"""Real-browser smoke test: every page, through the sidebar, in Russian and in English.

Drives the app served by ``streamlit run`` (the session's server and Chromium of ``conftest.py``) and, for
every page of :func:`voproshalych_eval.ui.pages.existing_pages`:

* clicks its sidebar link (a client-side navigation: the session and its language survive),
* waits until the script finished (``stApp[data-test-script-state=notRunning]``, no "Running…" status
  widget) and a title is shown,
* fails on any Streamlit exception element (``stException``) or a SEVERE browser-console entry that is
  not known-benign noise (:func:`is_benign`),
* saves a screenshot to ``artifacts/screenshots/smoke-<lang>-<page>.png`` (git-ignored).

The language is switched with the sidebar radio. Skipped with a reason when ``/usr/bin/chromium`` or
``chromedriver`` is absent (``.ci/run`` installs Debian's ``chromium`` and ``chromium-driver``).
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest

from tests.browser.app_driver import (
    SCREENSHOTS,
    by,
    console_errors,
    exceptions,
    nav_link,
    switch_language,
    wait,
    wait_rendered,
)
from voproshalych_eval.ui.pages import existing_pages

pytestmark = pytest.mark.browser


# ---------------------------------------------------------------------------------------------- the test


def test_every_page_in_both_languages(driver: Any, app_url: str) -> None:
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    pages = existing_pages()
    assert pages, "no page files"
    started = time.monotonic()
    driver.get(app_url)
    wait_rendered(driver, "the first page")
    driver.get_log("browser")  # drop the start-up noise of the first load; each page is checked below
    problems: list[str] = []
    visited: list[str] = []
    for lang in ("ru", "en"):
        switch_language(driver, lang)
        nav_title = {"ru": 0, "en": 1}[lang]
        for spec in pages:
            url_path = spec.file.removeprefix("pages/").removesuffix(".py")
            link = nav_link(driver, url_path)
            if link is None:
                problems.append(f"[{lang}] no sidebar link to {spec.file}")
                continue
            assert spec.title[nav_title] in link.text, f"sidebar shows {link.text!r} for {spec.file} in {lang}"
            t0 = time.monotonic()
            link.click()
            wait(driver, lambda d, p=url_path: d.current_url.split("?")[0].rstrip("/").endswith(p) or p == "overview",
                  30, f"the URL of {url_path}")
            title = wait_rendered(driver, f"{spec.file} ({lang})")
            driver.save_screenshot(str(SCREENSHOTS / f"smoke-{lang}-{url_path}.png"))
            errors = [f"[{lang}] {spec.file}: exception: {e}" for e in exceptions(driver)]
            errors += [f"[{lang}] {spec.file}: console: {m}" for m in console_errors(driver)]
            alerts = [e.text[:200] for e in driver.find_elements(*by('[data-testid="stAlertContentError"]'))]
            if alerts:
                print(f"[{lang}] {spec.file}: st.error shown: {alerts}")
            problems += errors
            visited.append(f"{lang}:{url_path}")
            print(f"[{lang}] {spec.file}: {title!r} in {time.monotonic() - t0:.1f} s")
    print(f"visited {len(visited)} pages in {time.monotonic() - started:.1f} s; screenshots in {SCREENSHOTS}")
    assert not problems, "\n".join(problems)
    assert len(visited) == 2 * len(pages)
    assert len(list(Path(SCREENSHOTS).glob("*.png"))) >= len(pages)
