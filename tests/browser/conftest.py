"""Fixtures of the real-browser tests: one app server and one Chromium for the whole session.

``app_url`` starts ``streamlit run serve.py`` (app.py, warmed) on a free port against the test session's database (the
environment set by ``tests/conftest.py``; the demo is loaded by ``demo_engine``) once per session, so the
smoke test and every journey share it. ``driver`` is Debian's headless Chromium through Selenium, with
downloads allowed into ``downloads`` (a fresh folder of the session). Nothing is installed here: the tests
are skipped with a reason when ``/usr/bin/chromium`` or ``chromedriver`` is absent (``.ci/run`` installs
Debian's ``chromium`` and ``chromium-driver``).
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from tests.browser.app_driver import CHROMIUM, chromedriver
from voproshalych_eval.config import PROJECT_ROOT
from voproshalych_eval.ui.warm_up import DONE as WARM_DONE

START_TIMEOUT = 120.0


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


@pytest.fixture(scope="session")
def browser_tools() -> tuple[str, str]:
    driver = chromedriver()
    if not os.access(CHROMIUM, os.X_OK) or driver is None:
        missing = " and ".join(n for n, ok in (("/usr/bin/chromium", os.access(CHROMIUM, os.X_OK)),
                                               ("chromedriver", driver is not None)) if not ok)
        pytest.skip(f"{missing} not installed: `apt-get install -y chromium chromium-driver` (.ci/run does it)")
    try:
        import selenium  # noqa: F401
    except ImportError:
        pytest.skip("selenium is not installed (a dev dependency: pip install -e '.[dev]')")
    return CHROMIUM, driver  # type: ignore[return-value]


@contextmanager
def serve_app(log_path: Path, port: int | None = None) -> Iterator[str]:
    """The app as ``make run`` and ``serve`` start it (``streamlit run serve.py``: app.py, the process warmed
    before it answers) on ``port`` (default: a free one) against the test session's database, until the block
    ends (a journey that restarts the app serves it twice, on the same port as a restart does)."""
    port = port or _free_port()
    cmd = [
        sys.executable, "-m", "streamlit", "run", str(PROJECT_ROOT / "serve.py"),
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
        # the process warms itself in the background (serve.py): wait for it, as a restart is complete then
        while WARM_DONE not in log_path.read_text(errors="replace") and time.monotonic() < deadline:
            if proc.poll() is not None:
                pytest.fail(f"streamlit exited with {proc.returncode}:\n{log_path.read_text()[-3000:]}")
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


@pytest.fixture(scope="module")  # not longer: the app's queue worker would take other tests' batches (own env)
def app_url(browser_tools: tuple[str, str], demo_engine: Any, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """The app served by a real ``streamlit run`` on a free port, on the session's test database."""
    _seed_runs(demo_engine)
    with serve_app(tmp_path_factory.mktemp("streamlit") / "streamlit.log") as url:
        yield url


def _seed_runs(engine: Any) -> None:
    """Two real Tier 1 runs on the demo (vector and full-text), so the Runs page has a history and a
    comparison to draw — unless the session already has two."""
    from tests.support.plans import tier1 as run_tier1
    from voproshalych_eval.engine import runs

    if len(runs.list_runs(engine, tier="tier1", status="done", limit=2)) >= 2:
        return
    run_tier1(engine, "demo_golden", retriever="fts", k=10, n_resamples=200, label="browser smoke: fts")
    run_tier1(engine, "demo_golden", retriever="vector", embedder="use-multilingual", k=10, n_resamples=200,
              label="browser smoke: vector")


@pytest.fixture(scope="session")
def downloads(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Where the browser saves downloaded files."""
    return tmp_path_factory.mktemp("downloads")


@pytest.fixture(scope="session")
def driver(browser_tools: tuple[str, str], downloads: Path) -> Iterator[Any]:
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
    opts.add_experimental_option("prefs", {"download.default_directory": str(downloads),
                                           "download.prompt_for_download": False})
    opts.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    drv = webdriver.Chrome(service=Service(executable_path=browser_tools[1]), options=opts)
    drv.set_page_load_timeout(60)
    drv.execute_cdp_cmd("Browser.setDownloadBehavior", {"behavior": "allow", "downloadPath": str(downloads)})
    try:
        yield drv
    finally:
        drv.quit()
        shutil.rmtree(profile, ignore_errors=True)
