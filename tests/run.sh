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
# Procgen's tests need the system's Qt 5 runtime (envpool's Procgen loads it); install it where we may.
if ! ldconfig -p 2>/dev/null | grep -q 'libQt5Gui\.so\.5'; then
  if [[ $(id -u) == 0 ]] && command -v apt-get >/dev/null; then
    echo "tests/run.sh: installing the Qt 5 runtime for Procgen (apt-get install libqt5gui5, once)" >&2
    apt-get install -y -q --no-install-recommends libqt5gui5 >/dev/null 2>&1 \
      || { apt-get update -q >/dev/null 2>&1 && apt-get install -y -q --no-install-recommends libqt5gui5 >/dev/null 2>&1; } \
      || echo "tests/run.sh: could not install libqt5gui5; Procgen's tests will be skipped, saying why" >&2
  else
    echo "tests/run.sh: no Qt 5 runtime (libqt5gui5) and no root to install it; Procgen's tests will be skipped" >&2
  fi
fi
export TF_CPP_MIN_LOG_LEVEL=${TF_CPP_MIN_LOG_LEVEL:-2}
workers=(-n auto --dist worksteal)
for arg in "$@"; do
  case $arg in -n|-n*|--numprocesses*) workers=() ;; esac
done
exec .venv/bin/python -m pytest "${workers[@]}" "$@"
