"""Every test run gets its own state folder (embedded Postgres, logs, mesh state), so the suite never touches
the checkout's own ``.rulesage/`` and passes while a ``rulesage up`` mesh of the same checkout runs.

The exported embedder is the one thing reused across runs: $RULESAGE_MODELS_DIR, by default a cache folder
in the user's cache directory (exporting it again costs a minute on two cores)."""

from __future__ import annotations

import atexit
import os
import shutil
import tempfile
from pathlib import Path

_state = Path(tempfile.mkdtemp(prefix="rulesage-test-state-"))
os.environ["RULESAGE_STATE_DIR"] = str(_state)
os.environ.setdefault(
    "RULESAGE_MODELS_DIR",
    str(Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "rulesage" / "models"),
)


def _cleanup() -> None:
    from rulesage import db

    db.stop_embedded()  # the run's own server, in its own folder
    shutil.rmtree(_state, ignore_errors=True)


atexit.register(_cleanup)
