"""The doorman sits its exam for `rulesage doorman-exam` (rulesage/eval/doorman.py scores it): the screening
the service builds from its settings (judge off unless set), warmed, over the exam's rows, then the fault
drills over the rows it cleared. Apart from exam.py, which the servicer imports, so the two do not import
each other."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Any

from services.doorman.exam import Sitting, holder, sit_async


def sit(rows: Sequence[Sitting]) -> tuple[list[tuple[bool, str]], dict[str, dict[str, Any]], dict[str, str]]:
    """(cleared, reason) per row, the fault drills ({fault: rows, held, cleared_ids}) and who sat it."""
    from services.doorman import classifier
    from services.doorman.server import DoormanService, warm_screen_model

    service = DoormanService()
    classifier.warm()
    warm_screen_model(service.screener)
    decided, drills = asyncio.run(sit_async(service.screener, rows))
    return decided, drills, holder(service.screener)
