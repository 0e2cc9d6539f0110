"""A plan's CLI command built from its parameter table (``PlanSpec.params``).

:func:`add_plan_flags` adds one flag per parameter that has one (``Param.cli_flag``): its type, choices,
repeatable or comma-separated list, argument group and English help with the table's default; the
argparse default is ``None`` (a flag not given is a parameter not given: the plan applies the table's
default). :func:`plan_params` reads them back as the plan's parameters. :func:`plan_command` is a whole
command: the flags, the outcome flags (``--max-failure-share``, ``--queue``, ``--json``) and a runner
that builds the plan, executes it and prints the aggregates; a command module keeps only what is
particular to it (a summary printer, a flag that is not a parameter).
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Iterable
from typing import Any

from voproshalych_eval.commands.output import engine, exit_code
from voproshalych_eval.commands.resume import add_outcome_flags, execute_plan, run_and_report
from voproshalych_eval.parameters import Param
from voproshalych_eval.plans import spec as plan_spec

__all__ = ["add_plan_flags", "plan_command", "plan_params"]


def _shown(value: Any) -> str:
    if isinstance(value, list | tuple):
        return ",".join(map(str, value))
    return f"{value:g}" if isinstance(value, float) else str(value)


def _help(p: Param, required: bool = False) -> str:
    text = p.help("en") or p.label("en")
    if p.kind == "bool" and p.default is True:
        return f"{text}: off (default on)"
    if not required and p.default not in (None, False, [], {}, ()) and "default" not in text:
        text += f" (default {_shown(p.default)})"
    return text


def add_plan_flags(parser: Any, key: str, *, skip: Iterable[str] = (), required: Iterable[str] = ()) -> None:
    """One flag per parameter of plan ``key`` that has one (except ``skip``); ``required`` flags must be given."""
    skip, required = set(skip), set(required)
    groups: dict[str, Any] = {}
    for p in plan_spec(key).params:
        flag = p.cli_flag
        if flag is None or p.name in skip:
            continue
        target = parser if p.group is None else groups.setdefault(p.group, parser.add_argument_group(p.group))
        kw: dict[str, Any] = {"dest": p.dest, "default": None, "help": _help(p, p.name in required)}
        if p.kind == "bool":
            kw.update(action="store_true", default=False)
        elif p.repeat:
            kw.update(action="append")
        elif p.kind == "int":
            kw.update(type=int)
        elif p.kind == "float":
            kw.update(type=float)
        if p.kind == "choice":
            kw["choices"] = list(p.choices)
        if p.name in required:
            kw["required"] = True
        if p.metavar and p.kind != "bool":
            kw["metavar"] = p.metavar
        target.add_argument(flag, **kw)


def plan_params(key: str, args: Any) -> dict[str, Any]:
    """The parameters of plan ``key`` given on the command line (``None``: not given, the plan's default)."""
    out: dict[str, Any] = {}
    for p in plan_spec(key).params:
        dest = p.dest
        if dest is None or not hasattr(args, dest):
            continue
        value = getattr(args, dest)
        if p.kind == "bool":  # a flag not given is no value; ``--no-x`` gives False
            value = (p.default is not True) if value else None
        out[p.name] = value
    return out


def plan_command(sub: Any, key: str, name: str, help: str, *, description: str | None = None,
                 report: Callable[[Any, Any, Any], int] | None = None) -> Any:
    """The subcommand ``name`` running plan ``key``: the table's flags, the outcome flags, and a runner that
    builds the plan from them, executes it and prints the outcome and the aggregates (``report(plan, args,
    progress) -> exit code`` instead, for a command with a summary of its own). Returns the parser, so a
    command can add a flag of its own."""
    p = sub.add_parser(name, help=help, description=description)
    add_plan_flags(p, key)
    add_outcome_flags(p)
    p.set_defaults(func=lambda args: run_plan_command(key, args, report))
    return p


def run_plan_command(key: str, args: Any, report: Callable[[Any, Any, Any], int] | None = None) -> int:
    module = importlib.import_module(plan_spec(key).module)
    plan = module.build_plan(engine(), plan_params(key, args))
    if report is not None:
        run_id, prog = execute_plan(plan, args)
        return report(plan, args, prog)
    _, prog = run_and_report(plan, args)
    return exit_code(prog.status)
