"""`python -m services.doorman`: serve the Doorman on RULESAGE_HOST:RULESAGE_PORT (default port 50067)."""

from __future__ import annotations

import sys

from rulesage import runner
from services.doorman.server import DoormanService

if __name__ == "__main__":
    sys.exit(runner.main("doorman", DoormanService))
