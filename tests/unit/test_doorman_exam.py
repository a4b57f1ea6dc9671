"""The doorman's exam: the frozen file stays frozen, `rulesage doorman-exam` passes its five gates on it (so
.ci/run fails on any gate), a gate can fail, and the report /about/doorman publishes is the current one."""

from __future__ import annotations

import asyncio
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from rulesage.doorman_report import stored_report
from rulesage.eval import doorman as scoring
from services.doorman import classifier, exam
from services.doorman.rules import Decision, Verdict
from services.doorman.screen import Screener
from services.doorman.server import DoormanService, DoormanSettings

ROOT = Path(__file__).resolve().parents[2]
EXAM = ROOT / "data" / "doorman" / "exam.jsonl"
README = ROOT / "data" / "doorman" / "README.md"
FROZEN_SHA256 = "0a7fda5ee6c2edf3c2163475f1f0ba482b6a95b78f963ef44915d7ae92910871"


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    for var in ("RULESAGE_DOORMAN_JUDGE_URL", "RULESAGE_DOORMAN_JUDGE_MODEL"):
        env.pop(var, None)  # the exam as CI sits it: the judge off
    return subprocess.run(
        [sys.executable, "-m", "rulesage.cli", "doorman-exam", *args],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )


def test_the_exam_is_frozen() -> None:
    assert scoring.sha256(EXAM) == FROZEN_SHA256, "data/doorman/exam.jsonl changed: the exam is frozen"
    written = re.search(r"^\s+([0-9a-f]{64})\s+exam\.jsonl$", README.read_text(), re.MULTILINE)
    assert written is not None and written.group(1) == FROZEN_SHA256


def test_the_exam_file_is_well_formed() -> None:
    rows = scoring.load(EXAM)
    assert len(rows) == 373
    assert [r.id for r in rows] == [f"ex-{n:04d}" for n in range(1, 374)]
    assert all((r.label == "clear") == (r.cls == "ordinary") for r in rows)


@pytest.fixture(scope="module")
def sat() -> dict:
    """`rulesage doorman-exam --json` on the frozen exam, as CI runs it."""
    done = _cli("--json")
    assert done.returncode in (0, 1), done.stderr
    report = json.loads(done.stdout)  # --json prints only JSON on stdout
    report["_rc"] = done.returncode
    return report


def test_doorman_passes_all_five_gates_on_the_frozen_exam(sat: dict) -> None:
    failed = [f"gate {g['gate']}: {g['title']} ({g['detail']})" for g in sat["gates"] if not g["passed"]]
    assert not failed, "\n".join(failed) + "\n" + json.dumps(sat["failures"], indent=1)
    assert sat["_rc"] == 0 and sat["passed"] is True
    assert [g["gate"] for g in sat["gates"]] == ["1", "2", "3", "4", "5"]
    assert sat["exam_sha256"] == FROZEN_SHA256 and sat["rows"] == 373
    assert sum(c["rows"] for c in sat["classes"].values()) == 373
    assert sat["doorman"]["judge"] == "off"


def test_the_text_report_prints_the_table_and_the_gates() -> None:
    done = _cli()
    assert done.returncode == 0, done.stdout + done.stderr
    for needle in ("class", "held", "cleared", "failures", "ordinary", "markup", "gate 5 PASS"):
        assert needle in done.stdout
    assert done.stdout.rstrip().endswith("all five gates pass")


def test_a_failed_gate_exits_1(tmp_path: Path) -> None:
    bad = tmp_path / "exam.jsonl"
    rows = [
        {"id": "t-1", "text": "Can the robber go back to the desert?", "label": "clear", "class": "ordinary"},
        {"id": "t-2", "text": "How many cards do I draw in Spider?", "label": "hold", "class": "spam"},
    ]
    bad.write_text("".join(json.dumps(r) + "\n" for r in rows))
    done = _cli("--exam", str(bad), "--json")
    assert done.returncode == 1
    report = json.loads(done.stdout)
    assert {g["gate"]: g["passed"] for g in report["gates"]} == {
        "1": True,
        "2": False,
        "3": True,
        "4": True,
        "5": True,
    }
    assert report["failures"] == [{"id": "t-2", "class": "spam", "label": "hold", "reason": "clean"}]


class _ClearsOnFailure(Screener):
    """A broken doorman: any failure inside clears the question. Gate 5 must catch it."""

    async def screen(self, text: str) -> tuple[Verdict, list[tuple[str, float]]]:
        verdict, timings = await super().screen(text)
        if verdict.reason.startswith(("doorman error", "doorman timed out", "judge")):
            return Verdict(Decision.CLEAR, "clean", verdict.checks), timings
        return verdict, timings


def test_gate_5_catches_a_doorman_that_clears_on_failure() -> None:
    rows = [scoring.Row("t-1", "Can the robber go back to the desert?", "clear", "ordinary")]
    broken = _ClearsOnFailure(classifier=classifier.profanity_probability)
    real = Screener(classifier=classifier.profanity_probability)

    def drills(s: Screener) -> dict:
        return asyncio.run(exam.fault_drills(s, rows, timeout_s=0.2))

    held = drills(real)
    assert set(held) == set(exam.FAULTS) and all(d["held"] == 1 for d in held.values())
    leaked = drills(broken)
    assert all(d["cleared_ids"] == ["t-1"] for d in leaked.values()), leaked


def test_the_service_screener_is_what_the_exam_sits() -> None:
    service = DoormanService(DoormanSettings())
    assert service.screener.judge is None  # off unless configured
    assert exam.holder(service.screener)["name"].startswith("rules v")


def test_the_published_report_is_the_current_doorman_on_the_frozen_exam(sat: dict) -> None:
    stored = stored_report()
    assert stored is not None, "run `rulesage doorman-exam --write-report` and commit the report"
    assert stored["exam_sha256"] == FROZEN_SHA256
    assert stored["doorman"]["fingerprint"] == sat["doorman"]["fingerprint"], (
        "the doorman changed since its report was written: run `rulesage doorman-exam --write-report`"
    )
    assert stored["classes"] == sat["classes"] and stored["gates"] == sat["gates"]
