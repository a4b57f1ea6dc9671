"""`rulesage up --detach` waits as long as the supervisor makes progress, shows that progress, and fails
only when the supervisor exits or falls silent (a stall), naming it."""

from __future__ import annotations

import io
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


class Supervisor:
    """A scripted supervisor: each pause of the waiter lets it write its next piece of log (or nothing), and
    a fake clock moves on by the pause. When the script ends it reports the mesh ready."""

    def __init__(self, log: Path, script: list[str], then_ready: bool = True) -> None:
        self.log, self.script, self.then_ready = log, list(script), then_ready
        self.now = 0.0
        self.state = Ready()

    def clock(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.now += seconds
        if self.script:
            piece = self.script.pop(0)
            with self.log.open("a") as fh:
                fh.write(piece)
        elif self.then_ready:
            self.state.ready()


def test_it_waits_past_the_stall_time_while_the_supervisor_writes(tmp_path: Path) -> None:
    log = tmp_path / "supervisor.log"
    log.write_text("empty database; ingesting the demo shelf ...\n")
    # 40 pauses of 1 s: ten times the 4 s stall time, with a new progress frame every 3 s
    frames = [f"ingest: {i * 8}%| {i}/12\r" if k == 2 else "" for i in range(1, 13) for k in range(3)]
    sup = Supervisor(log, [*frames, "\nreranker window states: 100%| 40/40\n", ""])
    out, err = io.StringIO(), io.StringIO()
    stalled: list[bool] = []
    rc = wait_until_ready(
        FakeProc(),
        log,
        out,
        err,
        on_stall=lambda: stalled.append(True),
        stall_s=4,
        poll_s=1,
        state=sup.state,
        clock=sup.clock,
        sleep=sup.sleep,
    )
    assert rc == 0 and not stalled and sup.now > 4 * 4
    assert out.getvalue() == "RuleSage is up: http://127.0.0.1:8080\n"
    shown = err.getvalue().splitlines()
    # one line a step when stderr is no terminal (and a fresh one every 30 s of a long step), not one a frame
    assert shown == [
        "  empty database; ingesting the demo shelf ...",
        "  ingest: 8%| 1/12",
        "  ingest: 96%| 12/12",
        "  reranker window states: 100%| 40/40",
    ]


def test_silence_is_a_stall_that_names_the_last_step(tmp_path: Path) -> None:
    log = tmp_path / "supervisor.log"
    log.write_text("answer sentence vectors:  40%| 4/10\r")
    sup = Supervisor(log, [], then_ready=False)
    stalled: list[bool] = []
    err = io.StringIO()
    rc = wait_until_ready(
        FakeProc(),
        log,
        io.StringIO(),
        err,
        on_stall=lambda: stalled.append(True),
        stall_s=300,
        poll_s=0.5,
        state=sup.state,
        clock=sup.clock,
        sleep=sup.sleep,
    )
    assert rc == 1 and stalled == [True]
    assert 300 < sup.now <= 301
    assert "stalled" in err.getvalue() and "answer sentence vectors:  40%| 4/10" in err.getvalue()


def test_a_supervisor_that_exits_fails_with_its_error(tmp_path: Path) -> None:
    log = tmp_path / "supervisor.log"
    log.write_text("starting\n")
    (tmp_path / "state" / "last-error.txt").write_text("port(s) already taken: 50061 (lexical)")
    err = io.StringIO()
    rc = wait_until_ready(FakeProc(1), log, io.StringIO(), err, stall_s=5, poll_s=0.05, state=Ready())
    assert rc == 1 and "rulesage up failed: port(s) already taken" in err.getvalue()
