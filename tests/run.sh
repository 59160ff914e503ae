#!/usr/bin/env bash
# The test command: creates .venv on first use, installs seed with its test
# extra, then runs pytest (arguments pass through, e.g. ./tests/run.sh -k vtrace).
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON_BIN=${SEED_PYTHON:-python3}
if [[ ! -x .venv/bin/python ]]; then
  echo "tests/run.sh: creating .venv" >&2
  "$PYTHON_BIN" -m venv .venv
fi
STAMP=.venv/.seed-test-installed
WANT=$(cat setup.cfg pyproject.toml | cksum)
if [[ ! -f "$STAMP" || "$(cat "$STAMP")" != "$WANT" ]]; then
  .venv/bin/python -m pip install -q --upgrade pip
  .venv/bin/python -m pip install -q -e '.[test]'
  echo "$WANT" > "$STAMP"
  echo "$WANT" > .venv/.seed-installed  # what run_local.sh needs is a subset
fi
export TF_CPP_MIN_LOG_LEVEL=${TF_CPP_MIN_LOG_LEVEL:-2}
exec .venv/bin/python -m pytest "$@"
