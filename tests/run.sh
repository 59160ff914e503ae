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
# Debian packages some tests need, installed where we may (as root with apt-get), else those tests are
# skipped, saying why: PACKAGE, a command that succeeds once it is there, and who needs it.
ensure_system_package() {
  local package=$1 present=$2 who=$3
  bash -c "$present" >/dev/null 2>&1 && return 0
  if [[ $(id -u) == 0 ]] && command -v apt-get >/dev/null; then
    echo "tests/run.sh: installing $package for $who (apt-get install $package, once)" >&2
    apt-get install -y -q --no-install-recommends "$package" >/dev/null 2>&1 \
      || { apt-get update -q >/dev/null 2>&1 && apt-get install -y -q --no-install-recommends "$package" >/dev/null 2>&1; } \
      || echo "tests/run.sh: could not install $package; $who will be skipped, saying why" >&2
  else
    echo "tests/run.sh: no $package and no root to install it; $who will be skipped" >&2
  fi
}
# envpool's Procgen loads the system's Qt 5 runtime; the packet-loss tests drop packets with nftables.
ensure_system_package libqt5gui5 "ldconfig -p | grep -q 'libQt5Gui\.so\.5'" "Procgen's tests"
ensure_system_package nftables "command -v nft" "the packet-loss tests"
export TF_CPP_MIN_LOG_LEVEL=${TF_CPP_MIN_LOG_LEVEL:-2}
workers=(-n auto --dist worksteal)
for arg in "$@"; do
  case $arg in -n|-n*|--numprocesses*) workers=() ;; esac
done
exec .venv/bin/python -m pytest "${workers[@]}" "$@"
