"""Helpers shared by CLI subcommands: JSON output, progress on stderr, engine from settings."""

from __future__ import annotations

import json
import sys
from typing import Any

from sqlalchemy import Engine


def emit(obj: Any, as_json: bool, human: str | None = None) -> None:
    """Print one JSON object (``--json``) or a human summary on stdout."""
    if as_json:
        sys.stdout.write(json.dumps(obj, ensure_ascii=False, default=_default, indent=1) + "\n")
    else:
        sys.stdout.write((human if human is not None else json.dumps(obj, ensure_ascii=False, default=_default, indent=1)) + "\n")
    sys.stdout.flush()


def _default(o: Any) -> Any:
    from voproshalych_eval.runs import _default as run_default

    return run_default(o)


def progress(message: str) -> None:
    """Progress line on stderr (never pollutes ``--json`` stdout)."""
    print(message, file=sys.stderr, flush=True)


def engine() -> Engine:
    from voproshalych_eval.db import get_engine

    return get_engine()


def add_json_flag(parser: Any) -> None:
    parser.add_argument("--json", action="store_true", help="print one JSON object on stdout")
