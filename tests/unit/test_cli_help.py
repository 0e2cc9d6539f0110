"""Every help screen of the CLI renders (a newcomer's first command), recursively over all subcommands."""

from __future__ import annotations

import argparse
import subprocess
import sys

import pytest

from voproshalych_eval.cli import HelpFormatter, build_parser, main


def _walk(parser: argparse.ArgumentParser, path: tuple[str, ...] = ()) -> list[tuple[str, ...]]:
    out = [path]
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                out += _walk(sub, (*path, name))
    return out


COMMANDS = _walk(build_parser())


def test_the_walk_finds_nested_commands() -> None:
    assert ("runs", "export") in COMMANDS and ("tier1",) in COMMANDS and len(COMMANDS) > 15


@pytest.mark.parametrize("path", COMMANDS, ids=lambda p: " ".join(p) or "(top)")
def test_help_renders(path: tuple[str, ...], capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exc:
        main([*path, "--help"])
    assert exc.value.code == 0
    out = capsys.readouterr().out
    assert out.startswith("usage: voproshalych-eval") and "Traceback" not in out
    if path:
        assert path[-1] in out.splitlines()[0]


def test_top_level_help_lists_every_command_and_keeps_percent_signs(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        main(["--help"])
    out = capsys.readouterr().out
    for (name, *_rest) in (p for p in COMMANDS if p):
        assert name in out
    assert "95% CI" in out  # tier1's help: the bare % that used to crash argparse


def test_no_command_prints_the_command_list(capsys: pytest.CaptureFixture[str]) -> None:
    assert main([]) == 0
    out = capsys.readouterr().out
    assert "COMMAND" in out and "tier2" in out and "runs" in out


def test_formatter_escapes_only_when_formatting_fails() -> None:
    p = argparse.ArgumentParser(prog="x", formatter_class=HelpFormatter)
    p.add_argument("--a", default=3, help="default %(default)s")
    p.add_argument("--b", help="share in % of items, 100%")
    text = p.format_help()
    assert "default 3" in text and "share in % of items, 100%" in text


def test_console_script_help_in_a_subprocess() -> None:
    out = subprocess.run([sys.executable, "-m", "voproshalych_eval.cli", "--help"], capture_output=True, text=True,
                         timeout=120)
    assert out.returncode == 0, out.stderr
    assert "tier1" in out.stdout and not out.stderr.strip()


@pytest.mark.parametrize("path", [(), ("tier1",), ("resume",), ("dataset", "realq-pick")], ids=" ".join)
def test_help_epilog_lists_the_exit_codes(path: tuple[str, ...], capsys: pytest.CaptureFixture[str]) -> None:
    """Every run command's ``--help`` ends with the exit codes, each one of :data:`EXIT_CODES` with its meaning."""
    from voproshalych_eval.commands.output import EXIT_CODES, EXIT_ERROR, EXIT_INTERRUPTED

    with pytest.raises(SystemExit):
        main([*path, "--help"])
    out = capsys.readouterr().out
    assert "exit codes:" in out
    listed = {int(line.split()[0]) for line in out.split("exit codes:", 1)[1].splitlines() if line[:6].strip().isdigit()}
    assert listed == {*EXIT_CODES.values(), EXIT_ERROR, EXIT_INTERRUPTED} == {0, 1, 2, 3, 4, 130}
    assert "Ctrl-C" in out and "SIGTERM" in out and "cancelled" in out
