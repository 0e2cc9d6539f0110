"""Reopening a real-users analysis in the browser after an app restart: ``app.py`` (before) vs ``serve.py`` (now).

The walk's case: the demo log's whole analysis (3,668 questions, topics chosen by silhouette) made once in a
scratch store (an embedded server in a temp folder; ``--home`` reuses a store that already has one). Then, for
each way of starting the app — ``streamlit run app.py`` (the baseline: the first visitor pays the pages'
imports and the store's opening) and ``streamlit run serve.py`` (the process warmed before it answers) — the
app is served, opened once in Chromium (the browser knows the app, as a user's does), stopped, served again on
the same port (the restart) and the analysis's link opened: the time from the link to its coverage-gap table
on screen, and to the page finished. Also printed: the time from the process start until it answers and until
its background warm-up ended (the link is opened then: the restart is complete), the load average, and the
ratio before / now.

    .venv/bin/python benchmarks/bench_reopen_browser.py [--home DIR] [--rounds 2] [--run ID]

Needs Debian's ``chromium`` and ``chromium-driver`` and the dev dependency ``selenium`` (as the browser tests).
"""

from __future__ import annotations

import argparse
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
from statistics import median
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


def _port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextmanager
def served(entry: str, port: int, log: Path) -> Iterator[tuple[str, float, float]]:
    """``streamlit run <entry>`` on ``port``; yields the URL, the seconds until it answered and until it was
    warm (``serve.py`` logs the end of its background warm-up; ``app.py`` is as warm as it gets at once)."""
    from voproshalych_eval.ui.warm_up import DONE

    start = log.stat().st_size if log.exists() else 0
    cmd = [sys.executable, "-m", "streamlit", "run", str(ROOT / entry), "--server.headless", "true",
           "--server.address", "127.0.0.1", "--server.port", str(port), "--browser.gatherUsageStats", "false",
           "--server.fileWatcherType", "none"]
    t0 = time.perf_counter()
    with open(log, "ab") as out:
        proc = subprocess.Popen(cmd, cwd=ROOT, stdout=out, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}"
    try:
        while True:
            try:
                with urllib.request.urlopen(url + "/_stcore/health", timeout=2):  # noqa: S310 - local URL
                    break
            except OSError:
                if proc.poll() is not None:
                    raise SystemExit(f"streamlit exited: see {log}") from None
                time.sleep(0.1)
        ready = time.perf_counter() - t0
        while entry == "serve.py" and DONE not in log.read_bytes()[start:].decode(errors="replace"):
            if proc.poll() is not None:
                raise SystemExit(f"streamlit exited: see {log}")
            time.sleep(0.1)
        yield url, ready, time.perf_counter() - t0
    finally:
        proc.terminate()
        proc.wait(timeout=30)


def _browser() -> Any:
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    from tests.browser.app_driver import chromedriver

    opts = webdriver.ChromeOptions()
    opts.binary_location = "/usr/bin/chromium"
    for flag in ("--headless=new", "--no-sandbox", "--disable-gpu", "--window-size=1400,1000",
                 "--disable-dev-shm-usage", f"--user-data-dir={tempfile.mkdtemp(prefix='bench-chromium-')}"):
        opts.add_argument(flag)
    return webdriver.Chrome(service=Service(executable_path=chromedriver()), options=opts)


def _open(drv: Any, url: str, timeout: float = 180) -> tuple[float, float]:
    """Seconds from the link to the gap table on screen, and to the page finished (idle for 0.5 s)."""
    t0 = time.perf_counter()
    drv.get(url)
    shown = idle_since = None
    while time.perf_counter() - t0 < timeout:
        now = time.perf_counter() - t0
        if shown is None and drv.find_elements("css selector", ".st-key-tbl_ru_gaps"):
            shown = now
        app = drv.find_elements("css selector", '[data-testid="stApp"]')
        idle = bool(app) and app[0].get_attribute("data-test-script-state") == "notRunning"
        if shown is not None and idle:
            idle_since = idle_since or now
            if now - idle_since >= 0.5:
                return shown, idle_since
        else:
            idle_since = None
        time.sleep(0.05)
    raise SystemExit(f"the gap table did not show within {timeout:.0f} s at {url}")


def _analysis(home: Path | None) -> int:
    """The id of a finished whole-log real-users analysis in the store (made when there is none)."""
    from voproshalych_eval.analytics.pipeline import build_plan
    from voproshalych_eval.db import get_engine
    from voproshalych_eval.demo import load_demo
    from voproshalych_eval.engine import executor, runs

    engine = get_engine()
    done = [r for r in runs.list_runs(engine, tier="real_users", status="done", limit=20)
            if not (r.params or {}).get("filters", {}).get("scores")]
    if done:
        return int(done[0].id)
    load_demo(engine)
    run_id, prog = executor.run_plan(engine, build_plan(engine, {}))
    if prog.status != "done":
        raise SystemExit(f"the analysis did not finish: {prog}")
    return int(run_id)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--home", type=Path, help="an existing VOPROSHALYCH_EVAL_HOME (default: a scratch one)")
    ap.add_argument("--rounds", type=int, default=2, help="restarts per way of starting (medians printed)")
    ap.add_argument("--run", type=int, help="the real-users run to reopen (default: a whole-log analysis)")
    args = ap.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="bench-reopen-browser-"))
    os.environ["VOPROSHALYCH_EVAL_HOME"] = str(args.home or tmp / "home")
    for name in ("DATABASE_URL", "VOPROSHALYCH_EVAL_STORE_URL"):
        os.environ.pop(name, None)
    try:
        run_id = args.run or _analysis(args.home)
        from voproshalych_eval.db import reset_engines

        reset_engines()  # the app's processes open the store themselves
        drv = _browser()
        results: dict[str, dict[str, list[float]]] = {}
        try:
            for entry in ("app.py", "serve.py"):
                port = _port()
                got = results.setdefault(entry, {"ready": [], "warm": [], "shown": [], "finished": []})
                with served(entry, port, tmp / "streamlit.log") as (url, _, _):
                    _open(drv, f"{url}/real_users?lang=ru&run={run_id}&ru_view=topics")  # the browser knows the app
                for _ in range(args.rounds):
                    with served(entry, port, tmp / "streamlit.log") as (url, ready, warm):  # the restart
                        drv.get("about:blank")
                        shown, finished = _open(drv, f"{url}/real_users?lang=ru&run={run_id}&ru_view=topics")
                    got["ready"].append(ready)
                    got["warm"].append(warm)
                    got["shown"].append(shown)
                    got["finished"].append(finished)
        finally:
            drv.quit()
        load = os.getloadavg()
        print(f"real-users analysis #{run_id}, reopened after a restart (medians of {args.rounds}; "
              f"load average {load[0]:.1f} {load[1]:.1f} {load[2]:.1f})")
        for entry, got in results.items():
            print(f"  streamlit run {entry:<9} answers {median(got['ready']):5.2f} s · warm {median(got['warm']):5.2f} s"
                  f" · then the link: gap table on screen "
                  f"{median(got['shown']):5.2f} s · page finished {median(got['finished']):5.2f} s")
        before, now = (median(results[e]["shown"]) for e in ("app.py", "serve.py"))
        print(f"ratio before/now (gap table on screen): {before / now:.1f}x")
        return 0
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    raise SystemExit(main())
