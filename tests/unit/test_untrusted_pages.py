"""Static checks of the pages and UI helpers: untrusted text (bot answers, dialog and chunk texts, questions,
judges' explanations) never reaches a Markdown renderer except through ``ui.untrusted``; uploads are read
from memory through ``ui.uploads``."""

from __future__ import annotations

import ast
from pathlib import Path

from voproshalych_eval.config import PROJECT_ROOT

#: Streamlit calls whose text argument is rendered as Markdown
MARKDOWN_CALLS = {"markdown", "write", "caption", "info", "warning", "success", "error", "expander", "subheader",
                  "header", "title", "toast"}
#: record fields that hold untrusted text
UNTRUSTED_KEYS = {"question", "answer", "reference", "response", "user_input", "contexts", "context", "text",
                  "chunk_text", "ground_truth_answer", "explanation", "rationale", "error_message", "turns",
                  "retrieved_contexts", "dialog_context", "questions", "answers"}
#: variables holding untrusted texts by id
UNTRUSTED_NAMES = {"texts"}
#: calls whose result is safe whatever they read: ui.untrusted.md (escapes), numeric formatters, counts
ESCAPERS = {"md", "fmt", "fmt_count", "len", "int", "float", "bool"}


def _files() -> list[Path]:
    return sorted([*(PROJECT_ROOT / "pages").glob("*.py"), PROJECT_ROOT / "app.py",
                   *(p for p in (PROJECT_ROOT / "voproshalych_eval" / "ui").glob("*.py") if p.name != "untrusted.py")])


def _untrusted(node: ast.AST) -> list[str]:
    """Sub-expressions of ``node`` reading untrusted text, outside an escaper call."""
    found: list[str] = []

    def visit(n: ast.AST) -> None:
        if isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute | ast.Name):
            name = n.func.attr if isinstance(n.func, ast.Attribute) else n.func.id
            if name in ESCAPERS:
                return
            if (name == "get" and isinstance(n.func, ast.Attribute) and n.args
                    and ((isinstance(n.args[0], ast.Constant) and n.args[0].value in UNTRUSTED_KEYS)
                         or (isinstance(n.func.value, ast.Name) and n.func.value.id in UNTRUSTED_NAMES))):
                found.append(ast.unparse(n))
        if isinstance(n, ast.Subscript) and (
                (isinstance(n.slice, ast.Constant) and n.slice.value in UNTRUSTED_KEYS)
                or (isinstance(n.value, ast.Name) and n.value.id in UNTRUSTED_NAMES)):
            found.append(ast.unparse(n))
        if isinstance(n, ast.IfExp):  # the condition is not rendered
            visit(n.body)
            visit(n.orelse)
            return
        for child in ast.iter_child_nodes(n):
            visit(child)

    visit(node)
    return found


def test_pages_pass_no_untrusted_text_to_markdown() -> None:
    offenders = []
    for path in _files():
        for n in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if not (isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and n.func.attr in MARKDOWN_CALLS):
                continue
            args = [*n.args, *(k.value for k in n.keywords if k.arg in ("body", "label"))]
            where = f"{path.relative_to(PROJECT_ROOT)}:{n.lineno}"
            for a in args:
                offenders += [f"{where}: {n.func.attr}({bad})" for bad in _untrusted(a)]
            if n.func.attr == "write" and any(not isinstance(a, ast.Constant) for a in n.args):
                offenders.append(f"{where}: write() renders strings as Markdown; use ui.untrusted.text")
    assert not offenders, "\n".join(offenders)


def test_the_check_catches_the_audits_cases() -> None:
    """The static check is not vacuous: the pre-fix forms are caught."""
    cases = ['st.markdown(f"**Q:** {row.get(\'question\')}")', 'c1.write(row.get("answer"))',
             'st.write(texts.get(cid, ""))', 'st.caption(str(res["explanation"]))']
    for code in cases:
        call = ast.parse(code).body[0].value  # type: ignore[attr-defined]
        assert _untrusted(call.args[0]) or call.func.attr == "write", code
    assert not _untrusted(ast.parse('st.caption(untrusted.md(row.get("reason")))').body[0].value)  # type: ignore[attr-defined]


def test_uploads_are_read_from_memory_on_every_page() -> None:
    """Every page with a file uploader reads it through ``ui.uploads.read`` and writes no file."""
    pages = [p for p in (PROJECT_ROOT / "pages").glob("*.py") if "file_uploader" in p.read_text(encoding="utf-8")]
    assert pages
    for p in pages:
        src = p.read_text(encoding="utf-8")
        assert "uploads.read(" in src, p.name
        tree = ast.parse(src)
        names = {a.name for n in ast.walk(tree) if isinstance(n, ast.Import | ast.ImportFrom) for a in n.names}
        assert "tempfile" not in names, p.name
        calls = {n.func.attr for n in ast.walk(tree) if isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute)}
        assert not calls & {"write_bytes", "write_text", "getbuffer"}, p.name
        # the client's name is never read directly (only through uploads.read)
        assert not [n for n in ast.walk(tree) if isinstance(n, ast.Attribute) and n.attr == "name"
                    and isinstance(n.value, ast.Name) and n.value.id in ("upload", "up", "up2")], p.name
