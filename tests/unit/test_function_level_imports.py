"""Imports live at the top of a module. One inside a function stays only when it breaks a real import cycle or
keeps a heavy library (or a measurable slice of the CLI's ``--help`` / the app's start) out of the import, and
then it says so in a comment on its line or the line above: ``# cycle: <who imports this module>`` or
``# heavy: <what it defers>``. The walk is the one ``scripts/code_figures.py`` counts (``function_level_imports``)."""

from __future__ import annotations

import ast
import re
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[2] / "voproshalych_eval"
REASON = re.compile(r"#\s*(cycle|heavy):\s*\S")


def _modules() -> list[Path]:
    migrations = PACKAGE / "db" / "migrations"
    return sorted(f for f in PACKAGE.rglob("*.py") if migrations not in f.parents)


def function_level_imports(path: Path) -> list[ast.Import | ast.ImportFrom]:
    """``import`` / ``from … import`` statements inside a function (nested classes and functions included)."""
    found: list[ast.Import | ast.ImportFrom] = []

    def visit(node: ast.AST, in_function: bool) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.Import | ast.ImportFrom) and in_function:
                found.append(child)
            visit(child, in_function or isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda))

    visit(ast.parse(path.read_text(encoding="utf-8")), False)
    return found


def unexplained(path: Path, base: Path = PACKAGE.parent) -> list[str]:
    """``file:line: statement`` of each function-level import of ``path`` (named relative to ``base``) without a
    ``# cycle:`` / ``# heavy:`` comment on its lines or the line just above."""
    lines = path.read_text(encoding="utf-8").splitlines()
    out = []
    for node in function_level_imports(path):
        end = node.end_lineno or node.lineno
        nearby = lines[max(node.lineno - 2, 0):end]  # the line above, then the statement's own lines
        if not any(REASON.search(line) for line in nearby):
            out.append(f"{path.relative_to(base)}:{node.lineno}: {lines[node.lineno - 1].strip()}")
    return out


def test_every_function_level_import_says_why() -> None:
    modules = _modules()
    assert len(modules) > 100 and PACKAGE / "cli.py" in modules  # the walk sees the whole package
    bad = [hit for f in modules for hit in unexplained(f)]
    assert not bad, ("function-level imports without '# cycle: …' or '# heavy: …' (move them to the module top, "
                     "or say which cycle / heavy import they avoid):\n" + "\n".join(bad))


def test_the_check_sees_an_unexplained_import(tmp_path: Path) -> None:
    sample = tmp_path / "sample.py"
    sample.write_text(
        "def a():\n    import json\n    return json\n\n\n"
        "def b():\n    import sklearn  # heavy: defers sklearn\n    return sklearn\n\n\n"
        "def c():\n    # cycle: x imports this module\n    from x import (\n        y,\n    )\n    return y\n\n\n"
        "class K:\n    def m(self):\n        from os import path\n        return path\n",
        encoding="utf-8",
    )
    assert [hit.split(":")[1] for hit in unexplained(sample, tmp_path)] == ["2", "21"]
