"""A widget's ``format_func`` runs again outside the script run, where the session's language is unknown: a lambda
that translates there shows the default language's values after a switch to English (issue 29). Labels are built
during the run (``labels = {k: tr(...)}``, ``format_func=labels.get``); this test finds the lambdas that translate."""

from __future__ import annotations

import ast
from pathlib import Path

from voproshalych_eval.config import PROJECT_ROOT

TRANSLATING = {"tr", "tr_pair", "lang", "metric_label", "fmt", "fmt_count", "fmt_seconds", "show"}


def _files() -> list[Path]:
    return [*sorted((PROJECT_ROOT / "pages").glob("*.py")), *sorted((PROJECT_ROOT / "voproshalych_eval" / "ui").glob("*.py")),
            PROJECT_ROOT / "app.py"]


def _translating_lambdas(path: Path) -> list[str]:
    """``file:line calls [...]`` of every ``format_func=lambda …`` in ``path`` that calls a translating function."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if not isinstance(node, ast.keyword) or node.arg != "format_func" or not isinstance(node.value, ast.Lambda):
            continue
        calls = {c.func.id for c in ast.walk(node.value) if isinstance(c, ast.Call) and isinstance(c.func, ast.Name)}
        if calls & TRANSLATING:
            found.append(f"{path.name}:{node.value.lineno} calls {sorted(calls & TRANSLATING)}")
    return found


def test_no_format_func_translates_later() -> None:
    bad = [hit for f in _files() for hit in _translating_lambdas(f)]
    assert not bad, "format_func lambdas that translate outside the run (build the labels first):\n" + "\n".join(bad)


def test_the_check_finds_a_translating_lambda(tmp_path: Path) -> None:
    sample = tmp_path / "page.py"
    sample.write_text('st.selectbox("x", KEYS, format_func=lambda k: tr(*LABELS[k]))\n'
                      'st.selectbox("y", KEYS, format_func=labels.get)\n'
                      'st.selectbox("z", KEYS, format_func=lambda k: f"{k}D")\n', encoding="utf-8")
    assert _translating_lambdas(sample) == ["page.py:1 calls ['tr']"]
