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
