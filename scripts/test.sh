#!/usr/bin/env bash
# The whole test suite: lint, layering and types (ruff, import-linter, mypy), the evaluation gate (a part of
# the real shelf through the real mesh, against the gold floors in rulesage/eval/gate.toml), then unit,
# integration (real gRPC servers + a real embedded Postgres) and the end-to-end page tests in headless
# Chromium. Installs what it needs first (system packages too when run as root). Arguments go to pytest;
# with any, the gate is skipped (a partial run).
set -euo pipefail
cd "$(dirname "$0")/.."
RULESAGE_SYSTEM_DEPS=${RULESAGE_SYSTEM_DEPS:-1} RULESAGE_WITH_LLAMA=${RULESAGE_WITH_LLAMA:-1} ./scripts/bootstrap.sh
.venv/bin/ruff check .
.venv/bin/lint-imports --no-cache
.venv/bin/mypy rulesage services gateway training
if [ $# -eq 0 ]; then
  .venv/bin/rulesage figures --check
  .venv/bin/rulesage gate
fi
exec .venv/bin/python -m pytest -q "$@"
