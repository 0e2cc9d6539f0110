"""The app's warm-up at server start (``serve.py``, ``ui/warm_up.py``): which modules it imports, that a failure
never stops the app, and that Streamlit serves ``serve.py`` as an app with a start-up hook."""

from __future__ import annotations

import sys
from pathlib import Path

from voproshalych_eval.config import PROJECT_ROOT
from voproshalych_eval.ui import warm_up


def test_page_imports_lists_module_level_imports_in_order(tmp_path: Path) -> None:
    page = tmp_path / "page.py"
    page.write_text(
        "from __future__ import annotations\n"
        "import json\n"
        "import os.path, json\n"
        "from voproshalych_eval.ui import tables, views\n"
        "from .local import thing\n"  # relative: not a module the server can import by name
        "def f():\n"
        "    import csv\n",  # inside a function: paid when called, not when the page opens
        encoding="utf-8")
    assert warm_up.page_imports([page]) == ["json", "os.path", "voproshalych_eval.ui",
                                            "voproshalych_eval.ui.tables", "voproshalych_eval.ui.views"]


def test_import_all_skips_names_and_reports_missing_modules() -> None:
    n, failed = warm_up.import_all(["json", "json.dumps", "no_such_module_for_warm_up"])
    assert n == 1  # json; json.dumps is a function, not a module: skipped without a complaint
    assert failed == ["no_such_module_for_warm_up"]


def test_warm_up_imports_every_page_module_and_streamlit_lazy_parts() -> None:
    timings = warm_up.warm_up(PROJECT_ROOT, open_store=False)
    assert set(timings) == {"imports"}
    files = [PROJECT_ROOT / "app.py", *sorted((PROJECT_ROOT / "pages").glob("*.py"))]
    wanted = [m for m in warm_up.page_imports(files) if m.count(".") < 3]
    assert "voproshalych_eval.analytics.pipeline" in wanted
    missing = [m for m in wanted if m not in sys.modules and not _is_a_name(m)]
    assert not missing, missing
    assert "streamlit.emojis" in sys.modules
    assert warm_up.plotly_traces() == len(warm_up.PLOTLY_TRACES)


def _is_a_name(dotted: str) -> bool:
    """``a.b`` where ``b`` is a name defined in the imported module ``a`` (``from a import b``), not a module."""
    parent, _, name = dotted.rpartition(".")
    return hasattr(sys.modules.get(parent), name)


def test_streamlit_serves_serve_py_as_an_app_with_a_start_hook() -> None:
    from streamlit.web.server.app_discovery import discover_asgi_app

    found = discover_asgi_app(PROJECT_ROOT / "serve.py")
    assert found.is_asgi_app and found.app_name == "app"
    source = (PROJECT_ROOT / "serve.py").read_text(encoding="utf-8")
    assert "lifespan=lifespan" in source and "warm_up" in source
