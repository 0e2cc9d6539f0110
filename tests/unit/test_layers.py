"""The package's layers stay layers: the import-linter contracts in pyproject.toml hold (metrics <
adapters < judges < plans < engine < plots < reports < ui < cli, no cycles between top-level modules),
and environment variables are read only through ``config``."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

from voproshalych_eval.config import PROJECT_ROOT

PACKAGE = PROJECT_ROOT / "voproshalych_eval"


def test_import_linter_contracts_are_kept() -> None:
    lint = Path(sys.executable).with_name("lint-imports")
    out = subprocess.run([str(lint), "--no-logo", "--no-cache"], cwd=PROJECT_ROOT, capture_output=True, text=True,
                         timeout=300)
    assert out.returncode == 0, out.stdout[-4000:] + out.stderr[-2000:]
    assert "0 broken" in out.stdout and "KEPT" in out.stdout


def _environment_reads(path: Path) -> list[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == "os" \
                and node.attr in ("environ", "getenv", "environb", "putenv"):
            found.append(f"{path.relative_to(PROJECT_ROOT)}:{node.lineno} os.{node.attr}")
        if isinstance(node, ast.ImportFrom) and node.module == "os" and any(
                a.name in ("environ", "getenv") for a in node.names):
            found.append(f"{path.relative_to(PROJECT_ROOT)}:{node.lineno} from os import …")
    return found


def test_environment_is_read_only_through_config() -> None:
    files = [*PACKAGE.rglob("*.py"), *(PROJECT_ROOT / "pages").glob("*.py"), PROJECT_ROOT / "app.py"]
    offenders = [hit for f in files if f.name != "config.py" or f.parent != PACKAGE for hit in _environment_reads(f)]
    assert offenders == [], "read environment variables through voproshalych_eval.config.env: " + ", ".join(offenders)
    assert _environment_reads(PACKAGE / "config.py")  # the one place that does


#: what pages and app.py may import from the package: the UI, plots, reports and the core's public modules —
#: never the CLI, and from ``db`` only its public readers (no SQL in pages: no engine connections, no SQL libraries)
PAGE_FORBIDDEN = ("voproshalych_eval.cli", "voproshalych_eval.commands", "sqlalchemy", "psycopg", "alembic")
PAGE_DB_READERS = ("voproshalych_eval.db.production", "voproshalych_eval.db.snapshots")
#: known exceptions, each to be removed (the test fails once one is gone, so the list only shrinks)
PAGE_EXCEPTIONS: set[tuple[str, str]] = set()


def _page_imports(path: Path, root: Path = PROJECT_ROOT) -> list[tuple[str, str, list[str], int]]:
    """``(file, module, names, line)`` of every import in a page (the names for ``from … import``)."""
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    rel = str(path.relative_to(root))
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out += [(rel, a.name, [], node.lineno) for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            out.append((rel, node.module, [a.name for a in node.names], node.lineno))
    return out


def _page_offences(files: list[Path], root: Path = PROJECT_ROOT) -> list[str]:
    bad = []
    for f in files:
        for rel, module, names, line in _page_imports(f, root):
            full = [module] + ([f"{module}.{n}" for n in names] if module == "voproshalych_eval" else [])
            for m in full:
                why = None
                if any(m == p or m.startswith(p + ".") for p in PAGE_FORBIDDEN):
                    why = "the CLI or SQL"
                elif (m == "voproshalych_eval.db" or m.startswith("voproshalych_eval.db.")) and not any(
                        m == r or m.startswith(r + ".") or (m == "voproshalych_eval.db" and names and all(
                            f"voproshalych_eval.db.{n}" in PAGE_DB_READERS for n in names)) for r in PAGE_DB_READERS):
                    why = "the db layer beyond its public readers"
                elif m.startswith("voproshalych_eval") and (any(part.startswith("_") for part in m.split(".")) or any(
                        n.startswith("_") for n in names)):
                    why = "a private name"
                if why and (rel, m) not in PAGE_EXCEPTIONS:
                    bad.append(f"{rel}:{line} imports {m} ({why})")
        for node in ast.walk(ast.parse(f.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in ("connect", "begin") \
                    and not (isinstance(node.func.value, ast.Name) and node.func.value.id == "st"):
                bad.append(f"{f.relative_to(root)}:{node.lineno} opens a database connection (.{node.func.attr})")
    return bad


def test_pages_import_only_the_ui_and_public_core_modules(tmp_path: Path) -> None:
    pages = [*(PROJECT_ROOT / "pages").glob("*.py"), PROJECT_ROOT / "app.py"]
    assert _page_offences(pages) == []
    imported = {(rel, m) for f in pages for rel, m, _, _ in _page_imports(f)}
    assert imported >= PAGE_EXCEPTIONS, f"an exception is gone: remove it from PAGE_EXCEPTIONS: {PAGE_EXCEPTIONS - imported}"
    # the check catches what it is for (a page with SQL, a db internal, the CLI, a private helper)
    (tmp_path / "pages").mkdir()
    page = tmp_path / "pages" / "bad.py"
    page.write_text("from sqlalchemy import text\nfrom voproshalych_eval.db.meta import get_meta\n"
                    "from voproshalych_eval.commands.runs import cmd_list\nfrom voproshalych_eval.engine.runs import _json\n"
                    "from voproshalych_eval.db.production import read_chunks\nwith engine.connect() as c:\n    pass\n",
                    encoding="utf-8")
    found = _page_offences([page], tmp_path)
    assert [x.split(" imports ")[-1] if " imports " in x else x.split(" ", 1)[1] for x in found] == [
        "sqlalchemy (the CLI or SQL)", "voproshalych_eval.db.meta (the db layer beyond its public readers)",
        "voproshalych_eval.commands.runs (the CLI or SQL)", "voproshalych_eval.engine.runs (a private name)",
        "opens a database connection (.connect)"]
