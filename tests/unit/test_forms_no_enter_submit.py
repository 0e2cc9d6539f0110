"""No form that starts a run, decides a review item or spends LLM calls submits on Enter (issue 29 item 4): every
such ``st.form`` in ``pages/`` is created with ``enter_to_submit=False``; only configuration forms (schedules,
alerts, prices) may keep Streamlit's default."""

from __future__ import annotations

import ast
from pathlib import Path

from voproshalych_eval.config import PROJECT_ROOT

#: forms where Enter may submit: they edit a configuration, they start nothing and spend nothing
CONFIG_FORMS = {("settings.py", "llm_prices"), ("schedules.py", "sched_add"), ("alerts.py", "alert_add")}


def _forms() -> list[tuple[str, str, ast.Call]]:
    out = []
    for path in sorted(Path(PROJECT_ROOT, "pages").glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "form":
                first = node.args[0] if node.args else None
                name = first.value if isinstance(first, ast.Constant) else ast.unparse(first) if first else "?"
                out.append((path.name, str(name), node))
    return out


def test_run_and_review_forms_do_not_submit_on_enter() -> None:
    forms = _forms()
    assert len(forms) >= 10  # the walk found the pages' forms
    offenders = []
    for page, name, call in forms:
        if (page, name) in CONFIG_FORMS:
            continue
        kw = {k.arg: k.value for k in call.keywords}
        if not (isinstance(kw.get("enter_to_submit"), ast.Constant) and kw["enter_to_submit"].value is False):
            offenders.append(f"{page}: st.form({name!r})")
    assert not offenders, offenders
