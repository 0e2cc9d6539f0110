"""Exit codes as the README documents them, and errors on stderr in one sentence without data: a database that
crashes during a run gives exit 1 ("the run crashed"), and the SQL with its parameters (students' questions)
stays out of stderr unless -v."""

from __future__ import annotations

import psycopg
import pytest
from sqlalchemy.exc import OperationalError

from voproshalych_eval import cli
from voproshalych_eval.commands import resume as resume_command

PERSONAL = "Иванов Иван Иванович ivanov@utmn.ru"


def _crash(*_args, **_kwargs):  # type: ignore[no-untyped-def]
    """What the executor raises when the store's server dies in the middle of writing an item."""
    raise OperationalError("INSERT INTO eval.run_items (run_id, item_key, result) VALUES (%(r)s, %(k)s, %(v)s)",
                           {"r": 1, "k": "q1", "v": f'{{"question": "{PERSONAL}"}}'},
                           psycopg.OperationalError("server closed the connection unexpectedly\n\tThis probably "
                                                    "means the server terminated abnormally"))


def test_a_crashed_database_during_a_run_exits_1_in_one_sentence(demo_engine, monkeypatch: pytest.MonkeyPatch,
                                                                 capsys: pytest.CaptureFixture[str]) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.setattr(resume_command, "execute", _crash)  # the runner the CLI calls
    code = cli.main(["tier1", "--json"])
    err = capsys.readouterr().err
    assert code == 1, err
    last = [line for line in err.splitlines() if line.startswith("error:")]
    assert len(last) == 1 and "server closed the connection unexpectedly" in last[0] and "-v" in last[0]
    assert PERSONAL not in err and "INSERT INTO" not in err and "[SQL" not in err


def test_with_v_the_details_are_logged(demo_engine, monkeypatch: pytest.MonkeyPatch,
                                       caplog: pytest.LogCaptureFixture) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.setattr(resume_command, "execute", _crash)  # the runner the CLI calls
    assert cli.main(["-v", "tier1", "--json"]) == 1
    assert "INSERT INTO" in caplog.text  # the traceback (on stderr outside pytest) only with -v
