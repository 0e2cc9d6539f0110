"""The app's server: ``streamlit run serve.py`` serves ``app.py`` and warms the process before it answers.

Streamlit finds the ``st.App`` below and serves the app script it names (``app.py``, or the script in
``VOPROSHALYCH_EVAL_APP_SCRIPT``, e.g. the team entry point). Its lifespan hook runs
:func:`voproshalych_eval.ui.warm_up.warm_up` once at start — the pages' imports and the store — so the
first page opened after a restart is as quick as any later one (docs/UI.md). ``streamlit run app.py``
still works; it only leaves that cost to the first visitor.
"""

from __future__ import annotations

import asyncio
import os
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
    await asyncio.to_thread(warm_up, ROOT)  # off the event loop; the server answers once it is done
    yield


app = st.App(os.environ.get("VOPROSHALYCH_EVAL_APP_SCRIPT") or str(ROOT / "app.py"), lifespan=lifespan)
