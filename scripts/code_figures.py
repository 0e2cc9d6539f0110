"""Code figures of a checkout, for before/after notes (issue 24): run it on two trees and compare.

    python scripts/code_figures.py [ROOT]        # ROOT: a checkout (default: this one); --json for JSON

Figures (migrations excluded everywhere, they are frozen history):

* ``commands_lines`` — lines of ``voproshalych_eval/commands/*.py``;
* ``pages_module_level_lines`` — lines of ``pages/*.py`` spanned by top-level statements other than
  imports, the module docstring and ``def`` / ``class`` bodies (the page's module-level script);
* ``functions_over_80_lines`` — functions and methods (nested ones included) of the package longer than
  80 lines (``end_lineno - lineno + 1``, decorators excluded);
* ``function_level_imports`` — ``import`` / ``from … import`` statements inside a function of the package;
* ``modules_with_sql`` / ``modules_with_sql_outside_db`` — package modules holding a string literal (f-string
  parts included) that is an SQL statement: an upper-case ``SELECT … FROM``, ``INSERT INTO``, ``DELETE FROM``,
  ``UPDATE … SET``, ``CREATE`` / ``DROP`` / ``ALTER`` ``TABLE`` / ``INDEX``, ``TRUNCATE``; listed by name.
"""

from __future__ import annotations

import argparse
import ast
import json
import re
import sys
from pathlib import Path

SQL = re.compile(
    r"\bSELECT\b[\s\S]*\bFROM\b|\bINSERT\s+INTO\b|\bDELETE\s+FROM\b|\bUPDATE\s+[\w.\"{}]+\s+SET\b|"
    r"\b(?:CREATE|DROP|ALTER)\s+(?:UNIQUE\s+)?(?:TABLE|INDEX)\b|\bTRUNCATE\b"
)


def _package_files(root: Path) -> list[Path]:
    pkg = root / "voproshalych_eval"
    migrations = pkg / "db" / "migrations"
    return sorted(f for f in pkg.rglob("*.py") if migrations not in f.parents)


def _lines(path: Path) -> int:
    return len(path.read_text(encoding="utf-8").splitlines())


def _module_level_lines(path: Path) -> int:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    n = 0
    for i, node in enumerate(tree.body):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef | ast.Import | ast.ImportFrom):
            continue
        if i == 0 and isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant) and isinstance(node.value.value, str):
            continue  # the module docstring
        n += (node.end_lineno or node.lineno) - node.lineno + 1
    return n


def _walk_functions(tree: ast.AST) -> list[ast.FunctionDef | ast.AsyncFunctionDef]:
    return [n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef)]


def _function_level_imports(tree: ast.AST) -> int:
    count = 0

    def visit(node: ast.AST, in_function: bool) -> None:
        nonlocal count
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.Import | ast.ImportFrom) and in_function:
                count += 1
            visit(child, in_function or isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda))

    visit(tree, False)
    return count


def _has_sql(tree: ast.AST) -> bool:
    return any(isinstance(n, ast.Constant) and isinstance(n.value, str) and SQL.search(n.value) for n in ast.walk(tree))


def figures(root: Path) -> dict[str, object]:
    root = root.resolve()
    pkg = root / "voproshalych_eval"
    long_functions: list[str] = []
    imports = 0
    sql_modules: list[str] = []
    for f in _package_files(root):
        tree = ast.parse(f.read_text(encoding="utf-8"))
        rel = str(f.relative_to(pkg))
        for fn in _walk_functions(tree):
            length = (fn.end_lineno or fn.lineno) - fn.lineno + 1
            if length > 80:
                long_functions.append(f"{rel}:{fn.name} ({length})")
        imports += _function_level_imports(tree)
        if _has_sql(tree):
            sql_modules.append(rel)
    outside_db = [m for m in sql_modules if not m.startswith("db/")]
    return {
        "root": str(root),
        "commands_lines": sum(_lines(f) for f in sorted((pkg / "commands").glob("*.py"))),
        "pages_module_level_lines": sum(_module_level_lines(f) for f in sorted((root / "pages").glob("*.py"))),
        "functions_over_80_lines": len(long_functions),
        "function_level_imports": imports,
        "modules_with_sql": len(sql_modules),
        "modules_with_sql_outside_db": len(outside_db),
        "long_functions": long_functions,
        "sql_modules_outside_db": outside_db,
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("root", nargs="?", default=str(Path(__file__).resolve().parents[1]), help="a checkout")
    ap.add_argument("--json", action="store_true", help="print JSON")
    args = ap.parse_args(argv)
    out = figures(Path(args.root))
    if args.json:
        print(json.dumps(out, ensure_ascii=False, indent=2))
        return 0
    for key, value in out.items():
        if isinstance(value, list):
            print(f"{key}:")
            for v in value:
                print(f"  {v}")
        else:
            print(f"{key}: {value}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
