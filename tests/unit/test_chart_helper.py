"""Every chart of the app is drawn through ``ui.charts.plotly_chart`` (the app's toolbar config), never
``st.plotly_chart`` directly."""

from __future__ import annotations

import re
from pathlib import Path

from voproshalych_eval.config import PROJECT_ROOT

DIRECT = re.compile(r"\bst\.plotly_chart\(")
HELPER = Path("voproshalych_eval/ui/charts.py")


def direct_calls(root: Path = PROJECT_ROOT) -> list[str]:
    files = [root / "app.py", *sorted((root / "pages").glob("*.py")), *sorted((root / "voproshalych_eval/ui").glob("*.py"))]
    out = []
    for path in files:
        if path.relative_to(root) == HELPER:
            continue
        for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            if DIRECT.search(line):
                out.append(f"{path.relative_to(root)}:{n}")
    return out


def test_no_page_draws_a_chart_past_the_helper() -> None:
    assert direct_calls() == []


def test_the_check_finds_a_direct_call(tmp_path: Path) -> None:
    (tmp_path / "pages").mkdir()
    (tmp_path / "voproshalych_eval/ui").mkdir(parents=True)
    (tmp_path / "app.py").write_text("import streamlit as st\n", encoding="utf-8")
    (tmp_path / "pages/p.py").write_text("st.plotly_chart(fig)\n", encoding="utf-8")
    assert direct_calls(tmp_path) == ["pages/p.py:1"]
