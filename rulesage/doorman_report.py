"""The doorman's last exam report, as `rulesage doorman-exam --write-report` stores it: a JSON file shipped in
the package, read by the gateway's /about/doorman page and wrench (which never import the service)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

REPORT_PATH = Path(__file__).resolve().parent / "doorman_exam_report.json"


def stored_report(path: Path = REPORT_PATH) -> dict[str, Any] | None:
    """The last exam written with --write-report, or None when there is none or it cannot be read."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def write_report(report: dict[str, Any], path: Path = REPORT_PATH) -> None:
    path.write_text(json.dumps(report, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
