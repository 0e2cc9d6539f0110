"""Schedules: the CLI manages them; the tick (a fake clock here) starts a due schedule's run on the queue after
a fresh snapshot, recorded with the schedule's name; a schedule whose previous run is still going skips and
says so (never overlapping itself); each fire time starts once however often the tick runs."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from typing import Any
from zoneinfo import ZoneInfo

import pytest

from voproshalych_eval.commands import schedule as schedule_cmd
from voproshalych_eval.engine import job_queue, runs, schedules


@pytest.fixture(autouse=True)
def _no_app_worker() -> None:
    """No worker thread left by the page tests in this process: these tests decide who works the queue."""
    job_queue.stop_thread_worker()


def _cli(args: list[str], capsys: Any) -> tuple[int, str, str]:
    from voproshalych_eval.cli import main

    code = main(args)
    out = capsys.readouterr()
    return code, out.out, out.err


def test_schedule_cli_round_trip(engine: Any, capsys: Any) -> None:
    code, out, err = _cli(["schedule", "add", "nightly-cli", "--cron", "0 3 * * *", "--json", "--",
                           "tier1", "--retriever", "fts"], capsys)
    assert code == 0, err
    added = json.loads(out)
    assert added["timezone"] == "Asia/Yekaterinburg" and added["command"] == ["tier1", "--retriever", "fts"]
    nxt = datetime.fromisoformat(added["next_at"])
    assert (nxt.hour, nxt.minute) == (3, 0) and nxt.utcoffset() == timedelta(hours=5)  # 03:00 in Tyumen
    code, out, _ = _cli(["schedule", "list", "--json"], capsys)
    assert "nightly-cli" in [s["name"] for s in json.loads(out)["schedules"]]
    code, out, _ = _cli(["schedule", "pause", "nightly-cli", "--json"], capsys)
    assert json.loads(out)["paused"] is True
    code, out, _ = _cli(["schedule", "resume", "nightly-cli", "--json"], capsys)
    assert json.loads(out)["paused"] is False
    # bad input: a sentence naming what is wrong, exit 2
    code, _, err = _cli(["schedule", "add", "bad", "--cron", "61 * * * *", "--", "tier1"], capsys)
    assert code == 2 and "not a valid cron line" in err
    code, _, err = _cli(["schedule", "add", "bad", "--cron", "* * * * *", "--timezone", "Mars/Base", "--", "tier1"],
                        capsys)
    assert code == 2 and "unknown timezone 'Mars/Base'" in err
    code, _, err = _cli(["schedule", "add", "bad", "--cron", "* * * * *", "--", "runs", "list"], capsys)
    assert code == 2 and "not a run command" in err
    code, _, err = _cli(["schedule", "add", "nightly-cli", "--cron", "* * * * *", "--", "tier1"], capsys)
    assert code == 2 and "exists already" in err
    code, out, _ = _cli(["schedule", "delete", "nightly-cli"], capsys)
    assert code == 0
    code, _, err = _cli(["schedule", "show", "nightly-cli"], capsys)
    assert code == 2 and "no schedule named 'nightly-cli'" in err


def test_every_minute_schedule_never_overlaps(demo_engine: Any, capsys: Any) -> None:
    code, _, err = _cli(["schedule", "add", "every-minute", "--cron", "* * * * *", "--", "tier1", "--retriever", "fts",
                         "--batch-size", "16"], capsys)
    assert code == 0, err
    t0 = datetime.now(UTC).replace(second=30, microsecond=0) + timedelta(minutes=1)
    started: list[int | None] = []

    def start(name: str, due: datetime) -> None:  # what the queued start job does, synchronously
        started.append(schedule_cmd.start_now(name, due.isoformat()))

    assert schedule_cmd.run_due(t0, start=start) == ["every-minute"]
    first = started[-1]
    assert first is not None
    run = runs.get_run(demo_engine, first)
    assert run.schedule == "every-minute" and run.tier == "tier1"
    assert job_queue.queue_label(demo_engine, first) == "queued"  # no worker yet: it waits on the queue
    assert schedule_cmd.run_due(t0 + timedelta(seconds=20), start=start) == []  # same minute: not due again

    # a minute later the first run still waits: the schedule skips and says so
    assert schedule_cmd.run_due(t0 + timedelta(minutes=1), start=start) == ["every-minute"]
    assert started[-1] is None
    s = schedules.get(demo_engine, "every-minute")
    assert s.last_note is not None and f"run #{first} is still running" in s.last_note and s.last_run_id == first

    worker = job_queue.ThreadWorker(concurrency=2).start()
    try:
        assert job_queue.wait_run(demo_engine, first, timeout=240) == "done"
        assert schedule_cmd.run_due(t0 + timedelta(minutes=2), start=start) == ["every-minute"]
        second = started[-1]
        assert second is not None and second != first
        assert job_queue.wait_run(demo_engine, second, timeout=240) == "done"
    finally:
        worker.stop()
        job_queue.forget_plans()
    a, b = runs.get_run(demo_engine, first), runs.get_run(demo_engine, second)
    assert b.started_at >= a.finished_at  # never overlapping
    assert [h["id"] for h in schedules.history(demo_engine, "every-minute")] == [second, first]
    # paused: never due
    schedules.set_paused(demo_engine, "every-minute", True)
    assert schedule_cmd.run_due(t0 + timedelta(minutes=10), start=start) == []
    schedules.delete(demo_engine, "every-minute")


def test_cron_is_read_in_the_schedules_timezone(engine: Any) -> None:
    s = schedules.Schedule(name="x", cron="0 3 * * *", timezone="Asia/Yekaterinburg", command=["tier1"])
    now = datetime(2026, 11, 27, 0, 0, tzinfo=UTC)  # 05:00 in Tyumen: 03:00 local was at 22:00 UTC yesterday
    assert schedules.latest_fire(s, now) == datetime(2026, 11, 26, 22, 0, tzinfo=UTC)
    assert s.next_at(now) == datetime(2026, 11, 28, 3, 0, tzinfo=ZoneInfo("Asia/Yekaterinburg"))
    with pytest.raises(ValueError, match="not a valid cron line"):
        schedules.check("x", "not cron", "UTC", ["tier1"])
