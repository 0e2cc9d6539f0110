"""One module owns each store table's SQL: ``runs`` the run tables, ``db.meta`` the key/value facts.

An AST scan of every string literal (f-string parts included) of the package, the pages and the app finds
SQL naming a table after FROM / INTO / UPDATE / JOIN / TABLE; migrations create and change the tables and
are exempt."""

from __future__ import annotations

import ast
import re
from pathlib import Path

from voproshalych_eval.config import PROJECT_ROOT

PACKAGE = PROJECT_ROOT / "voproshalych_eval"
MIGRATIONS = PACKAGE / "db" / "migrations"
OWNERS = {
    re.compile(r"\b(?:FROM|INTO|UPDATE|JOIN|TABLE)\s+eval\.(?:runs|run_items)\b", re.IGNORECASE): PACKAGE / "runs.py",
    re.compile(r"\b(?:FROM|INTO|UPDATE|JOIN|TABLE)\s+eval\.meta\b", re.IGNORECASE): PACKAGE / "db" / "meta.py",
}


def _files() -> list[Path]:
    return [f for f in [*PACKAGE.rglob("*.py"), *(PROJECT_ROOT / "pages").glob("*.py"), PROJECT_ROOT / "app.py"]
            if MIGRATIONS not in f.parents]


def _sql_hits(path: Path, pattern: re.Pattern[str]) -> list[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    return [f"{path.relative_to(PROJECT_ROOT)}:{node.lineno}" for node in ast.walk(tree)
            if isinstance(node, ast.Constant) and isinstance(node.value, str) and pattern.search(node.value)]


def test_run_tables_and_meta_are_queried_only_by_their_owner() -> None:
    for pattern, owner in OWNERS.items():
        offenders = [hit for f in _files() if f != owner for hit in _sql_hits(f, pattern)]
        assert offenders == [], f"SQL on a table owned by {owner.relative_to(PROJECT_ROOT)}: {offenders}"
        assert _sql_hits(owner, pattern)  # the scan does see the owner's statements
