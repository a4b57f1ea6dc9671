"""`rulesage doorman-exam`: the doorman's exam run from the command line (apart from exam.py, which the
servicer imports, so the two do not import each other)."""

from __future__ import annotations

import json
from pathlib import Path

from rulesage.doorman_report import REPORT_PATH, write_report
from services.doorman.exam import DEFAULT_EXAM, run, text


def main(exam_path: str | None, as_json: bool, write: str | None) -> int:
    """`rulesage doorman-exam`: the screening the service runs, from the same settings (judge off unless set),
    over the exam; the per-class table and the five gates; 1 when any gate fails."""
    from services.doorman import classifier
    from services.doorman.server import DoormanService, warm_screen_model

    service = DoormanService()
    classifier.warm()
    warm_screen_model(service.screener)
    report = run(service.screener, Path(exam_path) if exam_path else DEFAULT_EXAM)
    if write:
        write_report(report, Path(write) if write != "-" else REPORT_PATH)
    print(json.dumps(report, indent=2, ensure_ascii=False, default=str) if as_json else text(report))
    return 0 if report["passed"] else 1
