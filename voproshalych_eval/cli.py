"""The ``voproshalych-eval`` command.

Each feature registers its subcommands from its own module in ``voproshalych_eval.commands``
(``register(subparsers)``). With ``--json`` a command prints exactly one JSON object on stdout; progress
and logs go to stderr. Errors print one sentence on stderr and exit with status 2.
"""

from __future__ import annotations

import argparse
import importlib
import logging
import sys
from collections.abc import Sequence

COMMAND_MODULES = (
    "core",
    "snapshot",
    "tier0",
    "tier1",
    "judge",
    "tier2",
    "tier3",
    "judges",
    "ux",
    "real_users",
    "runs",
    "resume",
    "dataset",
)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="voproshalych-eval",
        description="Evaluation and analytics workbench for Russian-language RAG on PostgreSQL + pgvector.",
    )
    parser.add_argument("-v", "--verbose", action="store_true", help="verbose logging on stderr")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    sub.required = True
    for name in COMMAND_MODULES:
        try:
            module = importlib.import_module(f"voproshalych_eval.commands.{name}")
        except ModuleNotFoundError as exc:
            if exc.name == f"voproshalych_eval.commands.{name}":
                continue
            raise
        module.register(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    logging.basicConfig(
        level=logging.DEBUG if args.verbose else logging.INFO,
        stream=sys.stderr,
        format="%(levelname)s %(name)s: %(message)s",
    )
    for noisy in ("httpx", "alembic", "numba", "urllib3", "openai"):
        logging.getLogger(noisy).setLevel(logging.WARNING)
    try:
        return int(args.func(args) or 0)
    except KeyboardInterrupt:
        print("Interrupted.", file=sys.stderr)
        return 130
    except Exception as exc:  # noqa: BLE001 - one sentence for the user, traceback with -v
        if args.verbose:
            logging.exception("command failed")
        print(f"error: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
