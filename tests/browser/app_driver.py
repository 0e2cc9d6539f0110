"""Driving the app in headless Chromium: waits on conditions (never on time), pages, the language, views.

Shared by the smoke test and the journeys (fixtures in ``conftest.py``). Every wait is a condition polled by
Selenium with a generous timeout, so a loaded machine makes a test slower, not red. Elements are found by
their Streamlit key (``.st-key-<key>``) or by their visible text in the current language.
"""

from __future__ import annotations

import os
import re
import shutil
import time
from typing import Any

import pytest

from voproshalych_eval.config import PROJECT_ROOT

CHROMIUM = "/usr/bin/chromium"
SCREENSHOTS = PROJECT_ROOT / "artifacts" / "screenshots"
PAGE_TIMEOUT = 180.0
LANG_LABELS = {"ru": "Русский", "en": "English"}

#: SEVERE console entries that are browser/network noise, not app errors. Each is matched precisely.
BENIGN_PATTERNS = (
    # the browser asks for /favicon.ico on its own; Streamlit serves its icon elsewhere
    re.compile(r"/favicon\.ico - Failed to load resource"),
    # background fetches the headless browser or Streamlit make to the internet (no network on CI)
    re.compile(r"^https?://(?!127\.0\.0\.1)[^ ]+ - Failed to load resource: net::ERR_(NAME_NOT_RESOLVED|INTERNET_DISCONNECTED|CONNECTION_REFUSED|CONNECTION_RESET|TIMED_OUT|ADDRESS_UNREACHABLE|BLOCKED_BY_CLIENT)"),
)


def chromedriver() -> str | None:
    """Debian's chromedriver (or one on the PATH), when installed."""
    for cand in ("/usr/bin/chromedriver", shutil.which("chromedriver")):
        if cand and os.access(cand, os.X_OK):
            return cand
    return None


def is_benign(message: str) -> bool:
    return any(p.search(message) for p in BENIGN_PATTERNS)


def by(css: str) -> tuple[str, str]:
    from selenium.webdriver.common.by import By

    return By.CSS_SELECTOR, css


def wait(drv: Any, condition: Any, timeout: float, what: str) -> Any:
    from selenium.common.exceptions import StaleElementReferenceException, TimeoutException
    from selenium.webdriver.support.ui import WebDriverWait

    try:
        return WebDriverWait(drv, timeout, poll_frequency=0.3,
                             ignored_exceptions=(StaleElementReferenceException,)).until(condition)
    except TimeoutException:
        pytest.fail(f"timed out after {timeout:.0f} s waiting for {what} (at {drv.current_url}); {_page_state(drv)}")


def _page_state(drv: Any) -> str:
    """What the page showed when a wait timed out: the script's state, the status widget, the main text."""
    try:
        app = drv.find_elements(*by('[data-testid="stApp"]'))
        script = app[0].get_attribute("data-test-script-state") if app else "no app"
        status = " ".join(e.text for e in drv.find_elements(*by('[data-testid="stStatusWidget"]')))
        main = " | ".join(e.text for e in drv.find_elements(*by('[data-testid="stMain"]')))
        return f"script state {script!r}, status widget {status!r}, page text: {main[:1500]!r}"
    except Exception as exc:  # noqa: BLE001 - a diagnostic must never hide the timeout itself
        return f"(the page state could not be read: {exc})"


def script_idle(drv: Any) -> bool:
    """The script finished and stayed finished: not running, no status widget, connected."""
    for _ in range(3):  # three consecutive idle samples: a rerun triggered by the page itself is caught
        app = drv.find_elements(*by('[data-testid="stApp"]'))
        if not app or app[0].get_attribute("data-test-script-state") != "notRunning":
            return False
        if drv.find_elements(*by('[data-testid="stStatusWidget"]')):
            status = " ".join(e.text for e in drv.find_elements(*by('[data-testid="stStatusWidget"]')))
            if "Running" in status or "Connecting" in status or not status.strip():
                return False
        time.sleep(0.25)
    return True


def wait_rendered(drv: Any, what: str) -> str:
    """Wait until the page finished and shows a title; returns the title."""
    wait(drv, lambda d: script_idle(d), PAGE_TIMEOUT, f"{what} to finish running")

    def title(d: Any) -> str | bool:
        heads = [h.text.strip() for h in d.find_elements(*by('[data-testid="stMain"] h1'))]
        return next((h for h in heads if h), False)

    return wait(drv, title, 30, f"a title on {what}")


def expand_nav(drv: Any) -> None:
    """Show every page link: press "View N more" when the navigation is collapsed."""
    for button in drv.find_elements(*by('[data-testid="stSidebarNavViewButton"]')):
        if "more" in button.text.lower():
            button.click()
            wait(drv, lambda d: not any("more" in b.text.lower()
                                        for b in d.find_elements(*by('[data-testid="stSidebarNavViewButton"]'))),
                 30, "the whole navigation")


def nav_link(drv: Any, url_path: str) -> Any:
    expand_nav(drv)
    for link in drv.find_elements(*by('[data-testid="stSidebarNav"] a[data-testid="stSidebarNavLink"]')):
        href = (link.get_attribute("href") or "").split("?", 1)[0].rstrip("/")
        if href.endswith("/" + url_path) or (url_path == "overview" and href.count("/") == 2):
            return link
    return None


def console_errors(drv: Any) -> list[str]:
    severe = [e["message"] for e in drv.get_log("browser") if e.get("level") == "SEVERE"]
    for message in severe:
        if is_benign(message):
            print(f"  ignored benign console entry: {message[:200]}")
    return [m for m in severe if not is_benign(m)]


def exceptions(drv: Any) -> list[str]:
    return [e.text[:500] for e in drv.find_elements(*by('[data-testid="stException"]'))]


def switch_language(drv: Any, lang: str) -> None:
    label = LANG_LABELS[lang]
    for radio in drv.find_elements(*by('[data-testid="stSidebar"] [data-testid="stRadio"]')):
        for option in radio.find_elements(*by("label")):
            if option.text.strip() == label:
                option.click()
                wait_rendered(drv, f"the switch to {label}")
                return
    pytest.fail(f"no language radio option {label!r} in the sidebar")
