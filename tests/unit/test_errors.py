"""One root for the package's errors, and the CLI's exit status taken from it."""

from __future__ import annotations

import importlib
import inspect
import pkgutil

import voproshalych_eval
from voproshalych_eval import cli
from voproshalych_eval.datasets.files import RecordFileError
from voproshalych_eval.db.errors import SnapshotError
from voproshalych_eval.errors import VoproshalychEvalError


def _package_exceptions() -> list[type[BaseException]]:
    found: list[type[BaseException]] = []
    for info in pkgutil.walk_packages(voproshalych_eval.__path__, "voproshalych_eval."):
        if ".migrations" in info.name:
            continue
        module = importlib.import_module(info.name)
        for _, obj in inspect.getmembers(module, inspect.isclass):
            if issubclass(obj, BaseException) and obj.__module__ == info.name:
                found.append(obj)
    return found


def test_every_error_class_of_the_package_derives_from_the_root() -> None:
    classes = _package_exceptions()
    assert len(classes) >= 30  # the walk really found the package's errors
    outside = sorted(f"{c.__module__}.{c.__qualname__}" for c in classes if not issubclass(c, VoproshalychEvalError))
    assert outside == []


def test_errors_keep_the_builtin_kind_callers_catch() -> None:
    assert issubclass(RecordFileError, ValueError)
    assert issubclass(SnapshotError, RuntimeError)


def test_the_cli_exits_with_the_errors_status(monkeypatch, capsys) -> None:
    class Refused(VoproshalychEvalError):
        exit_code = 7

    def refuse(_args):
        raise Refused("refused for a reason")

    def crash(_args):
        raise KeyError("not ours")

    parser = cli.build_parser()
    args = parser.parse_args(["runs", "list"])
    monkeypatch.setattr(cli, "build_parser", lambda: parser)
    monkeypatch.setattr(parser, "parse_args", lambda argv=None: args)
    for func, code, text in ((refuse, 7, "refused for a reason"), (crash, 2, "not ours")):
        args.func = func
        assert cli.main(["runs", "list"]) == code
        assert text in capsys.readouterr().err
