#!/usr/bin/env bash
# The test command: creates .venv on first use, installs seed with its test
# extra, then runs pytest (arguments pass through, e.g. ./tests/run.sh -k vtrace).
# Tests run on one worker per core (pytest-xdist): most of their time is spent
# waiting on processes, sockets and emulators, so two workers on two cores take
# about half the time of one; -n 0 runs them in this process.
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=../seed/venv.sh
source seed/venv.sh
ensure_venv tests/run.sh test
export TF_CPP_MIN_LOG_LEVEL=${TF_CPP_MIN_LOG_LEVEL:-2}
workers=(-n auto --dist worksteal)
for arg in "$@"; do
  case $arg in -n|-n*|--numprocesses*) workers=() ;; esac
done
exec .venv/bin/python -m pytest "${workers[@]}" "$@"
