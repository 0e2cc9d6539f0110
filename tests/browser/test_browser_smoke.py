"""Real-browser smoke test: every page, through the sidebar, in Russian and in English.

Starts ``streamlit run app.py`` on a free port against the test session's database (the environment
set by ``tests/conftest.py``; the demo is loaded by the ``demo_engine`` fixture), drives Debian's headless
Chromium with Selenium and, for every page of :func:`voproshalych_eval.ui.pages.existing_pages`:

* clicks its sidebar link (a client-side navigation: the session and its language survive),
* waits until the script finished (``stApp[data-test-script-state=notRunning]``, no "Running…" status
  widget) and a title is shown,
* fails on any Streamlit exception element (``stException``) or a SEVERE browser-console entry that is
  not known-benign noise (:func:`is_benign`),
* saves a screenshot to ``artifacts/screenshots/<lang>_<page>.png`` (git-ignored).

The language is switched with the sidebar radio. Nothing is installed here: the test is skipped with a
reason when ``/usr/bin/chromium`` or ``chromedriver`` is absent (``.ci/run`` installs Debian's
``chromium`` and ``chromium-driver``).
"""

from __future__ import annotations

import os
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from voproshalych_eval.config import PROJECT_ROOT
from voproshalych_eval.ui.pages import existing_pages

pytestmark = pytest.mark.browser

CHROMIUM = "/usr/bin/chromium"
SCREENSHOTS = PROJECT_ROOT / "artifacts" / "screenshots"
PAGE_TIMEOUT = 180.0
START_TIMEOUT = 120.0
LANG_LABELS = {"ru": "Русский", "en": "English"}

#: SEVERE console entries that are browser/network noise, not app errors. Each is matched precisely.
BENIGN_PATTERNS = (
    # the browser asks for /favicon.ico on its own; Streamlit serves its icon elsewhere
    re.compile(r"/favicon\.ico - Failed to load resource"),
    # background fetches the headless browser or Streamlit make to the internet (no network on CI)
    re.compile(r"^https?://(?!127\.0\.0\.1)[^ ]+ - Failed to load resource: net::ERR_(NAME_NOT_RESOLVED|INTERNET_DISCONNECTED|CONNECTION_REFUSED|CONNECTION_RESET|TIMED_OUT|ADDRESS_UNREACHABLE|BLOCKED_BY_CLIENT)"),
)


def is_benign(message: str) -> bool:
    return any(p.search(message) for p in BENIGN_PATTERNS)


def _chromedriver() -> str | None:
    for cand in ("/usr/bin/chromedriver", shutil.which("chromedriver")):
        if cand and os.access(cand, os.X_OK):
            return cand
    return None


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _healthy(url: str) -> bool:
    try:
        with urllib.request.urlopen(url + "/_stcore/health", timeout=2) as resp:  # noqa: S310 - local URL
            return resp.status == 200
    except OSError:
        return False


@pytest.fixture(scope="module")
def browser_tools() -> tuple[str, str]:
    driver = _chromedriver()
    if not os.access(CHROMIUM, os.X_OK) or driver is None:
        missing = " and ".join(n for n, ok in (("/usr/bin/chromium", os.access(CHROMIUM, os.X_OK)),
                                               ("chromedriver", driver is not None)) if not ok)
        pytest.skip(f"{missing} not installed: `apt-get install -y chromium chromium-driver` (.ci/run does it)")
    try:
        import selenium  # noqa: F401
    except ImportError:
        pytest.skip("selenium is not installed (a dev dependency: pip install -e '.[dev]')")
    return CHROMIUM, driver  # type: ignore[return-value]


@pytest.fixture(scope="module")
def app_url(browser_tools: tuple[str, str], demo_engine: Any, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """The app served by a real ``streamlit run`` on a free port, on the session's test database."""
    _seed_runs(demo_engine)
    port = _free_port()
    log_path = tmp_path_factory.mktemp("streamlit") / "streamlit.log"
    cmd = [
        sys.executable, "-m", "streamlit", "run", str(PROJECT_ROOT / "app.py"),
        "--server.headless", "true", "--server.address", "127.0.0.1", "--server.port", str(port),
        "--browser.gatherUsageStats", "false", "--server.fileWatcherType", "none", "--server.runOnSave", "false",
    ]
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    with open(log_path, "wb") as log:
        proc = subprocess.Popen(cmd, cwd=PROJECT_ROOT, env=env, stdout=log, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + START_TIMEOUT
        while not _healthy(url):
            if proc.poll() is not None:
                pytest.fail(f"streamlit exited with {proc.returncode}:\n{log_path.read_text()[-3000:]}")
            if time.monotonic() > deadline:
                pytest.fail(f"streamlit did not answer /_stcore/health in {START_TIMEOUT:.0f} s:\n{log_path.read_text()[-3000:]}")
            time.sleep(0.3)
        yield url
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=5)
        app_log = log_path.read_text(errors="replace")
        if "Traceback" in app_log:
            print("streamlit log (tracebacks found):\n" + app_log[-6000:])


def _seed_runs(engine: Any) -> None:
    """Two real Tier 1 runs on the demo (vector and full-text), so the Runs page has a history and a
    comparison to draw — unless the session already has two."""
    from tests.support.plans import tier1 as run_tier1
    from voproshalych_eval import runs

    if len(runs.list_runs(engine, tier="tier1", status="done", limit=2)) >= 2:
        return
    run_tier1(engine, "demo_golden", retriever="fts", k=10, n_resamples=200, label="browser smoke: fts")
    run_tier1(engine, "demo_golden", retriever="vector", embedder="use-multilingual", k=10, n_resamples=200,
              label="browser smoke: vector")


@pytest.fixture(scope="module")
def driver(browser_tools: tuple[str, str]) -> Iterator[Any]:
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    os.environ.setdefault("SE_OFFLINE", "true")  # never let Selenium Manager reach the network
    profile = tempfile.mkdtemp(prefix="chromium-profile-")
    opts = webdriver.ChromeOptions()
    opts.binary_location = browser_tools[0]
    for flag in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync", "--no-first-run", "--window-size=1400,1000",
                 f"--user-data-dir={profile}", "--disable-dev-shm-usage"):
        opts.add_argument(flag)
    opts.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    drv = webdriver.Chrome(service=Service(executable_path=browser_tools[1]), options=opts)
    drv.set_page_load_timeout(60)
    try:
        yield drv
    finally:
        drv.quit()
        shutil.rmtree(profile, ignore_errors=True)


# ---------------------------------------------------------------------------------------------- helpers


def _wait(drv: Any, condition: Any, timeout: float, what: str) -> Any:
    from selenium.common.exceptions import TimeoutException
    from selenium.webdriver.support.ui import WebDriverWait

    try:
        return WebDriverWait(drv, timeout, poll_frequency=0.2).until(condition)
    except TimeoutException:
        pytest.fail(f"timed out after {timeout:.0f} s waiting for {what} (at {drv.current_url})")


def _script_idle(drv: Any) -> bool:
    """The script finished and stayed finished: not running, no status widget, connected."""
    from selenium.webdriver.common.by import By

    for _ in range(3):  # three consecutive idle samples: a rerun triggered by the page itself is caught
        app = drv.find_elements(By.CSS_SELECTOR, '[data-testid="stApp"]')
        if not app or app[0].get_attribute("data-test-script-state") != "notRunning":
            return False
        if drv.find_elements(By.CSS_SELECTOR, '[data-testid="stStatusWidget"]'):
            status = " ".join(e.text for e in drv.find_elements(By.CSS_SELECTOR, '[data-testid="stStatusWidget"]'))
            if "Running" in status or "Connecting" in status or not status.strip():
                return False
        time.sleep(0.25)
    return True


def _wait_rendered(drv: Any, what: str) -> str:
    """Wait until the page finished and shows a title; returns the title."""
    from selenium.webdriver.common.by import By

    _wait(drv, lambda d: _script_idle(d), PAGE_TIMEOUT, f"{what} to finish running")

    def title(d: Any) -> str | bool:
        heads = [h.text.strip() for h in d.find_elements(By.CSS_SELECTOR, '[data-testid="stMain"] h1')]
        return next((h for h in heads if h), False)

    return _wait(drv, title, 30, f"a title on {what}")


def _expand_nav(drv: Any) -> None:
    """Show every page link: expand collapsed sections and press "View N more"."""
    from selenium.webdriver.common.by import By

    for button in drv.find_elements(By.CSS_SELECTOR, '[data-testid="stSidebarNavViewButton"]'):
        if "more" in button.text.lower():
            button.click()
            time.sleep(0.3)


def _nav_link(drv: Any, url_path: str) -> Any:
    from selenium.webdriver.common.by import By

    _expand_nav(drv)
    for link in drv.find_elements(By.CSS_SELECTOR, '[data-testid="stSidebarNav"] a[data-testid="stSidebarNavLink"]'):
        href = (link.get_attribute("href") or "").split("?", 1)[0].rstrip("/")
        if href.endswith("/" + url_path) or (url_path == "overview" and href.count("/") == 2):
            return link
    return None


def _console_errors(drv: Any) -> list[str]:
    severe = [e["message"] for e in drv.get_log("browser") if e.get("level") == "SEVERE"]
    for message in severe:
        if is_benign(message):
            print(f"  ignored benign console entry: {message[:200]}")
    return [m for m in severe if not is_benign(m)]


def _exceptions(drv: Any) -> list[str]:
    from selenium.webdriver.common.by import By

    return [e.text[:500] for e in drv.find_elements(By.CSS_SELECTOR, '[data-testid="stException"]')]


def _switch_language(drv: Any, lang: str) -> None:
    from selenium.webdriver.common.by import By

    label = LANG_LABELS[lang]
    for radio in drv.find_elements(By.CSS_SELECTOR, '[data-testid="stSidebar"] [data-testid="stRadio"]'):
        for option in radio.find_elements(By.CSS_SELECTOR, "label"):
            if option.text.strip() == label:
                option.click()
                _wait_rendered(drv, f"the switch to {label}")
                return
    pytest.fail(f"no language radio option {label!r} in the sidebar")


# ---------------------------------------------------------------------------------------------- the test


def test_every_page_in_both_languages(driver: Any, app_url: str) -> None:
    from selenium.webdriver.common.by import By

    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    pages = existing_pages()
    assert pages, "no page files"
    started = time.monotonic()
    driver.get(app_url)
    _wait_rendered(driver, "the first page")
    driver.get_log("browser")  # drop the start-up noise of the first load; each page is checked below
    problems: list[str] = []
    visited: list[str] = []
    for lang in ("ru", "en"):
        _switch_language(driver, lang)
        nav_title = {"ru": 0, "en": 1}[lang]
        for spec in pages:
            url_path = spec.file.removeprefix("pages/").removesuffix(".py")
            link = _nav_link(driver, url_path)
            if link is None:
                problems.append(f"[{lang}] no sidebar link to {spec.file}")
                continue
            assert spec.title[nav_title] in link.text, f"sidebar shows {link.text!r} for {spec.file} in {lang}"
            t0 = time.monotonic()
            link.click()
            _wait(driver, lambda d, p=url_path: d.current_url.split("?")[0].rstrip("/").endswith(p) or p == "overview",
                  30, f"the URL of {url_path}")
            title = _wait_rendered(driver, f"{spec.file} ({lang})")
            driver.save_screenshot(str(SCREENSHOTS / f"{lang}_{url_path}.png"))
            errors = [f"[{lang}] {spec.file}: exception: {e}" for e in _exceptions(driver)]
            errors += [f"[{lang}] {spec.file}: console: {m}" for m in _console_errors(driver)]
            alerts = [e.text[:200] for e in driver.find_elements(By.CSS_SELECTOR, '[data-testid="stAlertContentError"]')]
            if alerts:
                print(f"[{lang}] {spec.file}: st.error shown: {alerts}")
            problems += errors
            visited.append(f"{lang}:{url_path}")
            print(f"[{lang}] {spec.file}: {title!r} in {time.monotonic() - t0:.1f} s")
    print(f"visited {len(visited)} pages in {time.monotonic() - started:.1f} s; screenshots in {SCREENSHOTS}")
    assert not problems, "\n".join(problems)
    assert len(visited) == 2 * len(pages)
    assert len(list(Path(SCREENSHOTS).glob("*.png"))) >= len(pages)
