"""The ``voproshalych-eval`` command.

Each feature registers its subcommands from its own module in ``voproshalych_eval.commands``
(``register(subparsers)``); the list of modules comes from the plan registry. With ``--json`` a command
prints exactly one JSON object on stdout; progress and logs go to stderr. Errors print one sentence on
stderr and exit with status 2; a command that executes a run exits with the status of its outcome
(:data:`voproshalych_eval.commands.output.EXIT_CODES_HELP`).
"""

from __future__ import annotations

import argparse
import importlib
import logging
import re
import sys
from collections.abc import Sequence
from typing import Any

from voproshalych_eval.commands.output import (
    EXIT_CODES_HELP,
    EXIT_ERROR,
    EXIT_INTERRUPTED,
    Queued,
    error_sentence,
)
from voproshalych_eval.commands.team import audit_command
from voproshalych_eval.errors import VoproshalychEvalError
from voproshalych_eval.plans import commands as plan_commands
from voproshalych_eval.redaction import configure_logging, redact, uninstall_record_factory

#: CLI command modules (``voproshalych_eval.commands.<name>``): the setup and snapshot commands, the plans'
#: commands from the plan registry, then the run-registry commands (each once)
COMMAND_MODULES = tuple(dict.fromkeys((
    "core", "snapshot", *plan_commands(), "runs", "resume", "worker", "schedule", "gate", "alerts", "team", "labels",
)))


class HelpFormatter(argparse.HelpFormatter):
    """argparse's formatter, except that a bare ``%`` in a help string ("95% CI") never crashes ``--help``:
    when %-formatting fails, lone percent signs are escaped and the string formatted again."""

    def _expand_help(self, action: argparse.Action) -> str:
        try:
            return super()._expand_help(action)
        except (ValueError, TypeError, KeyError):
            params = {**vars(action), "prog": self._prog}
            text = re.sub(r"%(?!\()", "%%", self._get_help_string(action) or "")
            try:
                return text % params
            except (ValueError, TypeError, KeyError):
                return self._get_help_string(action) or ""


class RawDescriptionHelpFormatter(HelpFormatter, argparse.RawDescriptionHelpFormatter):
    """:class:`HelpFormatter` keeping the description and epilog as written (the exit-code table)."""


class ArgumentParser(argparse.ArgumentParser):
    """The project's parser class: the tolerant :class:`HelpFormatter` for itself and every subparser."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("formatter_class", HelpFormatter)
        super().__init__(*args, **kwargs)

    def format_help(self) -> str:
        """The help; a command's help ends with the exit codes (as written) unless its epilog has them."""
        text = super().format_help()
        if self.get_default("func") is not None and "exit codes:" not in text:
            text += "\n" + EXIT_CODES_HELP + "\n"
        return text


def build_parser() -> argparse.ArgumentParser:
    parser = ArgumentParser(
        prog="voproshalych-eval",
        description="Evaluation and analytics workbench for Russian-language RAG on PostgreSQL + pgvector.",
        epilog=EXIT_CODES_HELP,
        formatter_class=RawDescriptionHelpFormatter,
    )
    parser.add_argument("-v", "--verbose", action="store_true", help="verbose logging on stderr")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=ArgumentParser)
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
    if getattr(args, "func", None) is None:  # no command: the command list
        parser.print_help()
        return 0
    root = logging.getLogger()
    before = list(root.handlers)
    handler = configure_logging(verbose=args.verbose)  # redacting handler on stderr (also for the SDK's loggers)
    try:
        code = int(args.func(args) or 0)
        if code == 0:  # a writing command (dataset import, labels, snapshots) is recorded in the audit log
            audit_command(args)
        return code
    except Queued:  # the run went to the job queue; its id was printed
        return 0
    except KeyboardInterrupt:
        print("Interrupted.", file=sys.stderr)
        return EXIT_INTERRUPTED
    except Exception as exc:  # noqa: BLE001 - one sentence for the user, traceback with -v
        if args.verbose:
            logging.exception("command failed")
        print(f"error: {redact(error_sentence(exc))}", file=sys.stderr)
        return exc.exit_code if isinstance(exc, VoproshalychEvalError) else EXIT_ERROR
    finally:
        if handler is not None and handler not in before:  # in-process callers get the logging they had
            root.removeHandler(handler)
            uninstall_record_factory()


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
