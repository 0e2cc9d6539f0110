"""Every multiselect of the app has a placeholder in the UI language (Streamlit's own is "Choose options")."""

from __future__ import annotations

import ast
from pathlib import Path

from voproshalych_eval.config import PROJECT_ROOT

SOURCES = [*sorted((PROJECT_ROOT / "pages").glob("*.py")), *sorted((PROJECT_ROOT / "voproshalych_eval" / "ui").glob("*.py")),
           PROJECT_ROOT / "app.py"]


def multiselects_without_placeholder(path: Path) -> list[int]:
    """Lines of ``….multiselect(…)`` calls in ``path`` that pass no ``placeholder=``."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    return [node.lineno for node in ast.walk(tree)
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "multiselect"
            and not any(kw.arg == "placeholder" for kw in node.keywords)]


def test_every_multiselect_has_a_translated_placeholder() -> None:
    missing = {str(p.relative_to(PROJECT_ROOT)): lines for p in SOURCES if p.exists()
               if (lines := multiselects_without_placeholder(p))}
    assert not missing, f"multiselects without placeholder=tr(…): {missing}"


def test_the_check_finds_a_missing_placeholder(tmp_path: Path) -> None:
    page = tmp_path / "page.py"
    page.write_text('import streamlit as st\nst.multiselect("a", [1])\nst.multiselect("b", [1], placeholder="x")\n')
    assert multiselects_without_placeholder(page) == [2]
