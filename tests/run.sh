#!/usr/bin/env bash
# The test command: creates .venv on first use, installs seed with its test
# extra, then runs pytest (arguments pass through, e.g. ./tests/run.sh -k vtrace).
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=../seed/venv.sh
source seed/venv.sh
ensure_venv tests/run.sh test
export TF_CPP_MIN_LOG_LEVEL=${TF_CPP_MIN_LOG_LEVEL:-2}
exec .venv/bin/python -m pytest "$@"
