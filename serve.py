"""The app's server: ``streamlit run serve.py`` serves ``app.py`` and warms the process as it starts.

Streamlit finds the ``st.App`` below and serves the app script it names (``app.py``, or the script in
``VOPROSHALYCH_EVAL_APP_SCRIPT``, e.g. the team entry point). Its lifespan hook starts
:func:`voproshalych_eval.ui.warm_up.warm_up` in the background at start — the pages' imports and the store —
so the first page opened after a restart is as quick as any later one (docs/UI.md); it logs
``warm-up: done: …`` when finished. ``streamlit run app.py``
still works; it only leaves that cost to the first visitor.
"""

from __future__ import annotations

import os
import threading
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import streamlit as st

ROOT = Path(__file__).resolve().parent


@asynccontextmanager
async def lifespan(_app: Any) -> AsyncIterator[None]:
    from voproshalych_eval.redaction import configure_logging
    from voproshalych_eval.ui.warm_up import warm_up

    configure_logging(fmt="%(asctime)s %(levelname)s %(name)s: %(message)s")
    # in the background: the server answers at once; a visitor arriving during the warm-up waits only for what
    # is still being imported (an import in progress is finished once, never started twice)
    threading.Thread(target=warm_up, args=(ROOT,), name="warm-up", daemon=True).start()
    yield


app = st.App(os.environ.get("VOPROSHALYCH_EVAL_APP_SCRIPT") or str(ROOT / "app.py"), lifespan=lifespan)
