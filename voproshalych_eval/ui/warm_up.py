"""Warming the app's process before its first visitor: the page modules imported, the store opened.

A fresh ``streamlit run`` process pays, on the first page anybody opens, every import of the pages
(pandas, plotly, the analytics modules; Streamlit's own emoji table), and the store's engine with its
migration check. Measured on the Real users page after a restart: about 5 s of the first opening, before
anything of the analysis itself was read. :func:`warm_up` does that work once at server start — in the
background, from the launcher's lifespan hook (``serve.py``: Streamlit's ``st.App``) — so that the first
opening after a restart costs what every later one does.

Nothing here is required: a failure is logged and the app starts as it would without it (the page then
pays the cost itself, and shows any real error as it always does).
"""

from __future__ import annotations

import ast
import importlib
import logging
import sys
import time
from collections.abc import Iterable
from pathlib import Path

import plotly.graph_objects as go

from voproshalych_eval.ui import state

log = logging.getLogger("voproshalych_eval.app")

#: imported by Streamlit on first use of an icon or emoji (about 0.8 s), not by ``import streamlit``
STREAMLIT_LAZY = ("streamlit.emojis",)
#: the start of the line logged when the warm-up has finished (successfully or not)
DONE = "warm-up: done"
#: plotly loads a trace type's class and validators on its first use (about 0.5 s for the first Scatter)
PLOTLY_TRACES = ("Scatter", "Scattergl", "Scatter3d", "Bar", "Histogram", "Heatmap", "Box", "Pie")


def plotly_traces(names: Iterable[str] = PLOTLY_TRACES) -> int:
    """Build one empty figure with one trace of each type (loads their classes and validators)."""
    fig = go.Figure([getattr(go, name)() for name in names])
    fig.update_layout(title="warm-up")
    return len(fig.data)


def page_imports(files: Iterable[Path]) -> list[str]:
    """The modules the module level of ``files`` imports (``import a.b`` -> ``a.b``; ``from a import b`` ->
    ``a`` and, when it is a module, ``a.b``), in order of first appearance, without duplicates."""
    out: dict[str, None] = {}
    for path in files:
        tree = ast.parse(Path(path).read_text(encoding="utf-8"), filename=str(path))
        for node in tree.body:
            if isinstance(node, ast.Import):
                out.update({alias.name: None for alias in node.names})
            elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                out[node.module] = None
                out.update({f"{node.module}.{alias.name}": None for alias in node.names})
    return [m for m in out if m.split(".")[0] != "__future__"]


def import_all(modules: Iterable[str]) -> tuple[int, list[str]]:
    """Import each module; ``from a import b`` names that are not modules are skipped quietly. Returns the
    number imported and the modules that failed to import (logged)."""
    n, failed = 0, []
    for name in modules:
        try:
            importlib.import_module(name)
            n += 1
        except ModuleNotFoundError as exc:
            parent, _, attr = name.rpartition(".")
            if exc.name == name and parent and hasattr(sys.modules.get(parent), attr):
                continue  # ``from a import b`` where b is a name defined in a, not a module
            failed.append(name)
            log.warning("warm-up: importing %s failed: %s", name, exc)
        except Exception as exc:  # noqa: BLE001 - warming is optional: the page will raise it in context
            failed.append(name)
            log.warning("warm-up: importing %s failed: %s", name, exc)
    return n, failed


def warm_up(project_root: Path, *, open_store: bool = True) -> dict[str, float]:
    """Import what the app's pages import and open the store (migrated) once; returns seconds per step and
    logs a line starting with :data:`DONE` at the end, whatever happened."""
    timings: dict[str, float] = {}
    n, failed = 0, list[str]()
    try:
        t = time.perf_counter()
        files = [project_root / "app.py", *sorted((project_root / "pages").glob("*.py"))]
        n, failed = import_all([*page_imports(f for f in files if f.exists()), *STREAMLIT_LAZY])
        plotly_traces()
        timings["imports"] = time.perf_counter() - t
        if open_store:
            t = time.perf_counter()
            state.engine()  # st.cache_resource: the sessions that follow get this engine
            timings["store"] = time.perf_counter() - t
    except Exception as exc:  # noqa: BLE001 - warming is optional: the first page meets the error in context
        log.warning("warm-up: stopped early: %s", exc)
    finally:
        log.info("%s: %d modules imported%s in %.1f s; store opened in %.1f s", DONE, n,
                 f" ({len(failed)} failed)" if failed else "", timings.get("imports", 0.0), timings.get("store", 0.0))
    return timings
