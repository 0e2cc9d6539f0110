"""The root of every error the package raises on purpose.

Each error class of the package derives from :class:`VoproshalychEvalError` (and, where callers already
catch it by its built-in kind, from that too: ``ValueError`` for bad input, ``RuntimeError`` for a failed
service). The CLI maps an error to its exit status through :attr:`VoproshalychEvalError.exit_code`; an
exception that is not one of ours is a bug and exits with the generic error status as well, with its
traceback under ``-v``.
"""

from __future__ import annotations


class VoproshalychEvalError(Exception):
    """An error the package raises on purpose: one sentence for the user, an exit status for the CLI.

    ``exit_code`` follows the CLI's table (``voproshalych-eval --help``): 2 for an error before or around a
    run (bad arguments or input, a refused resume, a run already running), 1 for a run that crashed.
    """

    exit_code: int = 2
