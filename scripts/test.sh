#!/usr/bin/env bash
# The whole test suite: unit, integration (real gRPC servers + a real embedded Postgres) and the end-to-end
# page test in headless Chromium. Installs what it needs first (system packages too when run as root).
set -euo pipefail
cd "$(dirname "$0")/.."
RULESAGE_SYSTEM_DEPS=${RULESAGE_SYSTEM_DEPS:-1} RULESAGE_WITH_LLAMA=${RULESAGE_WITH_LLAMA:-1} ./scripts/bootstrap.sh
.venv/bin/ruff check .
exec .venv/bin/python -m pytest -q "$@"
