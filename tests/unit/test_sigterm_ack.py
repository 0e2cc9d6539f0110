"""SIGTERM during a foreground run is acknowledged on stderr at once (issue 30)."""

from __future__ import annotations

import os
import signal
import time

import pytest

from voproshalych_eval.commands.output import cancel_on_sigterm


def test_sigterm_is_acknowledged_once_on_stderr(capfd: pytest.CaptureFixture[str]) -> None:
    with cancel_on_sigterm() as cancel:
        os.kill(os.getpid(), signal.SIGTERM)
        for _ in range(100):  # the handler runs at the next bytecode boundary of the main thread
            if cancel.is_set():
                break
            time.sleep(0.01)
        os.kill(os.getpid(), signal.SIGTERM)  # a second signal: still cancelled, no second line
        time.sleep(0.05)
    assert cancel.is_set()
    err = capfd.readouterr().err
    assert err.count("SIGTERM received: cancelling") == 1 and "resum" in err
