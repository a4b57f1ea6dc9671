"""`rulesage up --detach` waits as long as the supervisor makes progress, shows that progress, and fails
only when the supervisor exits or falls silent (a stall), naming it."""

from __future__ import annotations

import io
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from rulesage.launcher import last_step, wait_until_ready


class FakeProc:
    def __init__(self, code: int | None = None) -> None:
        self.code = code

    def poll(self) -> int | None:
        return self.code


class Ready:
    """The supervisor's state file as read_state() returns it: None until ``ready()``."""

    def __init__(self) -> None:
        self.value: dict[str, Any] | None = None

    def ready(self) -> None:
        self.value = {"state": "ready", "gateway_url": "http://127.0.0.1:8080"}

    def __call__(self) -> dict[str, Any] | None:
        return self.value


@pytest.fixture(autouse=True)
def _state(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RULESAGE_STATE_DIR", str(tmp_path / "state"))
    (tmp_path / "state").mkdir()


def test_last_step_is_the_latest_line_or_progress_frame() -> None:
    log = "empty database; ingesting ...\ningest:  10%|#  | 1/10 [00:01<00:09]\ringest:  20%|## | 2/10\r"
    assert last_step(log) == "ingest:  20%|## | 2/10"
    assert last_step("\x1b[2Kanswer sentence vectors: 5%\n\n") == "answer sentence vectors: 5%"
    assert last_step("") == ""


def test_it_waits_past_the_stall_time_while_the_supervisor_writes(tmp_path: Path) -> None:
    log = tmp_path / "supervisor.log"
    log.write_text("empty database; ingesting the demo shelf ...\n")
    state = Ready()

    def supervisor() -> None:  # progress for three stall periods, then ready
        with log.open("a") as fh:
            for i in range(1, 13):
                fh.write(f"ingest: {i * 8}%| {i}/12 [00:0{i % 10}]\r")
                fh.flush()
                time.sleep(0.1)
            fh.write("\nreranker window states: 100%| 40/40\n")
        state.ready()

    t = threading.Thread(target=supervisor)
    t.start()
    out, err = io.StringIO(), io.StringIO()
    stalled: list[bool] = []
    rc = wait_until_ready(
        FakeProc(),
        log,
        out,
        err,
        on_stall=lambda: stalled.append(True),
        stall_s=0.4,
        poll_s=0.05,
        state=state,
    )
    t.join()
    assert rc == 0 and not stalled
    assert out.getvalue() == "RuleSage is up: http://127.0.0.1:8080\n"
    shown = err.getvalue()
    assert "ingesting the demo shelf" in shown and "ingest:" in shown
    assert shown.count("ingest: ") == 1  # one line a step when stderr is no terminal, not one a frame


def test_silence_is_a_stall_that_names_the_last_step(tmp_path: Path) -> None:
    log = tmp_path / "supervisor.log"
    log.write_text("answer sentence vectors:  40%| 4/10\r")
    stalled: list[bool] = []
    err = io.StringIO()
    t0 = time.monotonic()
    rc = wait_until_ready(
        FakeProc(),
        log,
        io.StringIO(),
        err,
        on_stall=lambda: stalled.append(True),
        stall_s=0.3,
        poll_s=0.05,
        state=Ready(),
    )
    assert rc == 1 and stalled == [True]
    assert 0.3 <= time.monotonic() - t0 < 5
    assert "stalled" in err.getvalue() and "answer sentence vectors:  40%| 4/10" in err.getvalue()


def test_a_supervisor_that_exits_fails_with_its_error(tmp_path: Path) -> None:
    log = tmp_path / "supervisor.log"
    log.write_text("starting\n")
    (tmp_path / "state" / "last-error.txt").write_text("port(s) already taken: 50061 (lexical)")
    err = io.StringIO()
    rc = wait_until_ready(FakeProc(1), log, io.StringIO(), err, stall_s=5, poll_s=0.05, state=Ready())
    assert rc == 1 and "rulesage up failed: port(s) already taken" in err.getvalue()
