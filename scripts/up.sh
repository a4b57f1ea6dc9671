#!/usr/bin/env bash
# Bring the whole mesh up on the embedded Postgres with the bundled demo shelf and serve the page.
# First run: installs into .venv, exports the MiniLM embedder and ingests the demo shelf (a few minutes).
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/bootstrap.sh
exec .venv/bin/rulesage up "$@"
