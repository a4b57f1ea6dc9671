"""`python -m services.rerank`: serve the Reranker on RULESAGE_HOST:RULESAGE_PORT (default port 50065)."""

from __future__ import annotations

import sys

from rulesage import runner
from services.rerank.server import RerankService

if __name__ == "__main__":
    sys.exit(runner.main("rerank", RerankService))
