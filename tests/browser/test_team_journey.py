"""Team deployment in a real browser, against a real OpenID Connect provider, in Russian and in English.

The provider is npm's ``oidc-provider`` (panva/node-oidc-provider, an OpenID-certified implementation),
configured by ``tests/browser/oidc/server.mjs`` with one client and static accounts carrying a ``roles``
claim; it is installed with ``npm ci`` from the committed lock file into a cache folder once, and started on a
free port. The app is started the way a team serves it: ``voproshalych-eval serve --team`` with the
``VOPROSHALYCH_EVAL_OIDC_*`` variables, so sign-in goes through Streamlit's own ``st.login`` (Authlib) to the
provider's login form and back.

Journeys (each in both languages, a fresh browser session each):

1. a viewer signs in: the sidebar names her and her role, the Tier 1 page has no Run button (the lock note
   instead), the Audit page opens; signing out returns to the sign-in screen;
2. an analyst signs in, starts a Tier 1 run from the page: the run is recorded with her e-mail as its actor
   and the Audit page lists it.

The server-side refusal of a direct call (a run started without a button by a viewer's session) is
``tests/app/test_team_mode.py::test_a_direct_call_by_a_viewer_is_refused_and_audited``. Skipped only when
``node`` or ``npm`` is absent; a failing ``npm ci`` is a failure.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import secrets
import shutil
import signal
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
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
from tests.browser.conftest import START_TIMEOUT, _free_port, _healthy
from voproshalych_eval.config import PROJECT_ROOT
from voproshalych_eval.engine import runs

pytestmark = pytest.mark.browser

OIDC_DIR = Path(__file__).parent / "oidc"
CLIENT_ID = "voproshalych-eval"
ACCOUNTS = {  # login -> (e-mail, name), as server.mjs lists them
    "viewer": ("vera.viewer@example.org", "Вера Просмотрова"),
    "analyst": ("anna.analyst@example.org", "Анна Аналитикова"),
}
ROLE_WORDS = {("viewer", "ru"): "наблюдатель", ("viewer", "en"): "viewer",
              ("analyst", "ru"): "аналитик", ("analyst", "en"): "analyst"}
LANGS = ("ru", "en")
JOB_TIMEOUT = 300.0


def _shot(drv: Any, lang: str, step: str) -> None:
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    drv.save_screenshot(str(SCREENSHOTS / f"team-{lang}-{step}.png"))


@pytest.fixture(scope="session")
def node_tools() -> tuple[str, str]:
    node, npm = shutil.which("node"), shutil.which("npm")
    if not node or not npm:
        pytest.skip("node and npm are needed to start the OpenID Connect provider (npm's oidc-provider): "
                    "install Node.js 20 or later")
    return node, npm


@pytest.fixture(scope="session")
def oidc_install(node_tools: tuple[str, str]) -> Path:
    """``npm ci`` of the committed lock file into a cache folder named by the files' hash (once per version)."""
    files = ("package.json", "package-lock.json", "server.mjs")
    digest = hashlib.sha256(b"".join((OIDC_DIR / f).read_bytes() for f in files)).hexdigest()[:16]
    cache = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    root = cache / "voproshalych-eval" / f"oidc-provider-{digest}"
    if not (root / "node_modules" / "oidc-provider" / "package.json").is_file():
        root.mkdir(parents=True, exist_ok=True)
        for f in files:
            shutil.copy2(OIDC_DIR / f, root / f)
        proc = subprocess.run([node_tools[1], "ci", "--no-audit", "--no-fund"], cwd=root, capture_output=True,
                              text=True, timeout=600)
        if proc.returncode != 0:
            pytest.fail(f"npm ci of oidc-provider failed ({proc.returncode}):\n{proc.stderr[-3000:]}")
    return root


def _get_ok(url: str) -> bool:
    try:
        with urllib.request.urlopen(url, timeout=2) as resp:  # noqa: S310 - local URL
            return resp.status == 200
    except OSError:
        return False


def _stop(proc: subprocess.Popen[bytes], *, group: bool = False) -> None:
    try:
        if group:
            os.killpg(proc.pid, signal.SIGTERM)
        else:
            proc.terminate()
        proc.wait(timeout=20)
    except (subprocess.TimeoutExpired, ProcessLookupError):
        if group:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGKILL)
        else:
            proc.kill()
        proc.wait(timeout=5)


@pytest.fixture(scope="session")
def oidc_provider(oidc_install: Path, node_tools: tuple[str, str],
                  tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    """The provider on a free port, with a client whose redirect URI is the team app's (on another free port)."""
    app_port, port = _free_port(), _free_port()
    conf = {"issuer": f"http://127.0.0.1:{port}", "client_secret": secrets.token_urlsafe(24), "app_port": app_port,
            "redirect_uri": f"http://127.0.0.1:{app_port}/oauth2callback"}
    env = {**os.environ, "OIDC_PORT": str(port), "OIDC_CLIENT_ID": CLIENT_ID,
           "OIDC_CLIENT_SECRET": conf["client_secret"], "OIDC_REDIRECT_URI": conf["redirect_uri"]}
    log_path = tmp_path_factory.mktemp("oidc") / "oidc.log"
    with open(log_path, "wb") as log:
        proc = subprocess.Popen([node_tools[0], "server.mjs"], cwd=oidc_install, env=env, stdout=log,
                                stderr=subprocess.STDOUT)
    metadata = conf["issuer"] + "/.well-known/openid-configuration"
    try:
        deadline = time.monotonic() + 60
        while not _get_ok(metadata):
            if proc.poll() is not None or time.monotonic() > deadline:
                pytest.fail(f"the OIDC provider did not start:\n{log_path.read_text()[-3000:]}")
            time.sleep(0.2)
        yield {**conf, "metadata_url": metadata}
    finally:
        _stop(proc)


@pytest.fixture(scope="module")  # not longer: the app's queue worker would take other tests' batches (own env)
def team_app_url(oidc_provider: dict[str, Any], browser_tools: tuple[str, str], demo_engine: Any,
                 tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """``voproshalych-eval serve --team`` on the session's database, signing in through the provider."""
    port = oidc_provider["app_port"]
    env = {**os.environ, "PYTHONUNBUFFERED": "1",
           "VOPROSHALYCH_EVAL_OIDC_METADATA_URL": oidc_provider["metadata_url"],
           "VOPROSHALYCH_EVAL_OIDC_CLIENT_ID": CLIENT_ID,
           "VOPROSHALYCH_EVAL_OIDC_CLIENT_SECRET": oidc_provider["client_secret"],
           "VOPROSHALYCH_EVAL_OIDC_REDIRECT_URI": oidc_provider["redirect_uri"],
           "VOPROSHALYCH_EVAL_OIDC_SCOPE": "openid email profile roles",
           # oidc-provider knows the prompts login, consent and none, not Streamlit's default select_account
           "VOPROSHALYCH_EVAL_OIDC_PROMPT": "login",
           "STREAMLIT_BROWSER_GATHER_USAGE_STATS": "false", "STREAMLIT_SERVER_FILE_WATCHER_TYPE": "none",
           "STREAMLIT_SERVER_RUN_ON_SAVE": "false"}
    for name in ("VOPROSHALYCH_EVAL_TEAM", "VOPROSHALYCH_EVAL_TEAM_ROLES", "VOPROSHALYCH_EVAL_TEAM_DEFAULT_ROLE",
                 "VOPROSHALYCH_EVAL_TEAM_ROLE_CLAIM", "VOPROSHALYCH_EVAL_MASK_PERSONAL_DATA"):
        env.pop(name, None)  # serve --team turns team mode on; the roles come from the provider's claim
    log_path = tmp_path_factory.mktemp("team-app") / "serve.log"
    cmd = [sys.executable, "-m", "voproshalych_eval.cli", "serve", "--team", "--no-demo",
           "--address", "127.0.0.1", "--port", str(port)]
    with open(log_path, "wb") as log:
        proc = subprocess.Popen(cmd, cwd=PROJECT_ROOT, env=env, stdout=log, stderr=subprocess.STDOUT,
                                start_new_session=True)
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + START_TIMEOUT
        while not _healthy(url):
            if proc.poll() is not None or time.monotonic() > deadline:
                pytest.fail(f"serve --team did not start:\n{log_path.read_text()[-3000:]}")
            time.sleep(0.3)
        yield url
    finally:
        _stop(proc, group=True)
        text = log_path.read_text(errors="replace")
        assert oidc_provider["client_secret"] not in text, "the client secret reached the app's log"
        if "Traceback" in text:
            print("serve --team log (tracebacks found):\n" + text[-6000:])


def _clear_session(drv: Any) -> None:
    """A new browser session: every cookie (the app's sign-in cookie and the provider's session) dropped."""
    drv.execute_cdp_cmd("Network.clearBrowserCookies", {})


def _button(drv: Any, key: str, timeout: float = 120) -> Any:
    return wait(drv, lambda d: next(iter(d.find_elements(*by(f".st-key-{key} button"))), False), timeout,
                f"button {key}")


def _sign_in(drv: Any, url: str, login: str, lang: str) -> None:
    """From the sign-in screen (in ``lang``) through the provider's login form back to the app, then the
    app in ``lang`` (the session after the redirect is a new one)."""
    from selenium.webdriver.common.by import By

    _clear_session(drv)
    drv.get(url + "/tier1_retrieval")  # a page's own URL leads to the sign-in screen, nothing else
    _button(drv, "auth_login")
    wait_rendered(drv, "the sign-in screen at a page's URL")
    assert not drv.find_elements(*by(".st-key-t1_run")) and "Tier 1" not in _main_text(drv)
    assert not drv.find_elements(*by('[data-testid="stSidebarNav"]')), "pages are listed before sign-in"
    drv.get(url)
    _button(drv, "auth_login")
    wait_rendered(drv, "the sign-in screen")
    switch_language(drv, lang)
    button = _button(drv, "auth_login")
    assert button.text.strip() == {"ru": "Войти", "en": "Sign in"}[lang], button.text
    _shot(drv, lang, f"{login}-0-sign-in")
    button.click()
    field = wait(drv, lambda d: next(iter(d.find_elements(By.NAME, "login")), False), 60, "the provider's login form")
    assert drv.current_url.startswith("http://127.0.0.1:") and url not in drv.current_url, drv.current_url
    field.send_keys(login)
    drv.find_element(By.NAME, "password").send_keys("any password")
    drv.find_element(By.CSS_SELECTOR, "form button[type=submit]").click()
    email, name = ACCOUNTS[login]
    wait(drv, lambda d: d.current_url.startswith(url) and name in d.find_element(*by('[data-testid="stSidebar"]')).text,
         120, f"the app signed in as {name}")
    wait_rendered(drv, "the first page after sign-in")
    switch_language(drv, lang)
    sidebar = drv.find_element(*by('[data-testid="stSidebar"]')).text
    assert name in sidebar and ROLE_WORDS[(login, lang)] in sidebar, sidebar[:300]


def _open_page(drv: Any, page: str) -> str:
    link = nav_link(drv, page)
    assert link is not None, f"no sidebar link to {page}"
    link.click()
    wait(drv, lambda d: d.current_url.split("?")[0].rstrip("/").endswith(page), 30, f"the URL of {page}")
    return wait_rendered(drv, page)


def _main_text(drv: Any) -> str:
    return drv.find_element(*by('[data-testid="stMain"]')).text


@pytest.mark.parametrize("lang", LANGS)
def test_viewer_signs_in_and_sees_no_run_button(driver: Any, team_app_url: str, lang: str) -> None:
    _sign_in(driver, team_app_url, "viewer", lang)
    _shot(driver, lang, "viewer-1-signed-in")
    title = _open_page(driver, "tier1_retrieval")
    assert title.startswith("Tier 1"), title
    assert not driver.find_elements(*by(".st-key-t1_run")), "a viewer sees the Run button"
    lock = {"ru": "нужна роль «аналитик»", "en": "needs the analyst role"}[lang]
    assert lock in _main_text(driver), _main_text(driver)[:500]
    assert not exceptions(driver), exceptions(driver)
    _shot(driver, lang, "viewer-2-tier1-no-run")
    assert _open_page(driver, "audit") == {"ru": "Журнал действий", "en": "Audit"}[lang]
    assert not exceptions(driver), exceptions(driver)
    # signing out ends the session: the sign-in screen again (the provider may ask to confirm its own sign-out)
    _button(driver, "auth_logout").click()

    def signed_out(d: Any) -> bool:
        confirm = d.find_elements(*by('button[name="logout"], form[id="op.logoutForm"] button'))
        if confirm and not d.current_url.startswith(team_app_url):
            confirm[0].click()
            return False
        return d.current_url.startswith(team_app_url) and bool(d.find_elements(*by(".st-key-auth_login button")))

    wait(driver, signed_out, 120, "the sign-in screen after signing out")
    _shot(driver, lang, "viewer-3-signed-out")


@pytest.mark.parametrize("lang", LANGS)
def test_analyst_signs_in_and_a_run_records_her_name(driver: Any, team_app_url: str, demo_engine: Any,
                                                      lang: str) -> None:
    email, _ = ACCOUNTS["analyst"]
    before = max((r.id for r in runs.list_runs(demo_engine, tier="tier1", limit=1)), default=0)
    _sign_in(driver, team_app_url, "analyst", lang)
    _open_page(driver, "tier1_retrieval")
    _button(driver, "t1_run").click()

    def new_run(_: Any) -> Any:
        fresh = [r for r in runs.list_runs(demo_engine, tier="tier1", limit=5) if r.id > before]
        return fresh[0] if fresh else False

    run = wait(driver, new_run, JOB_TIMEOUT, "the run started from the page")
    assert run.actor == email, (run.id, run.actor)
    wait(driver, lambda d: runs.get_run(demo_engine, run.id).status != "running" and script_idle(d), JOB_TIMEOUT,
         f"run #{run.id} to finish")
    _shot(driver, lang, "analyst-1-run")
    _open_page(driver, "audit")
    text = _main_text(driver)
    assert not exceptions(driver), exceptions(driver)
    _shot(driver, lang, "analyst-2-audit")
    # the Audit table is a canvas: its rows are read from the store the page shows
    from voproshalych_eval.db import audit

    entry = next(e for e in audit.entries(demo_engine, actor=email, action="run") if e.target == f"run #{run.id}")
    assert entry.role == "analyst" and entry.outcome == "done"
    assert {"ru": "Журнал действий", "en": "Audit"}[lang] in text
