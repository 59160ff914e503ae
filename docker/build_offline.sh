#!/usr/bin/env bash
# Builds seed's image where no image registry can be reached (air-gapped clusters, this project's
# build machines): a Debian bookworm base made with debootstrap and imported, and Python packages
# installed only from wheels downloaded beforehand. Needs root, podman, runc and debootstrap
# (apt-get install podman runc debootstrap) and, once, the Debian and PyPI mirrors.
#
#   docker/build_offline.sh          # base image, wheels, then the image (SEED_IMAGE, default seed:offline)
#   docker/build_offline.sh --run    # and a short real job in it: ./run_local.sh --docker classic vtrace 1 2
#
# Podman here runs with runc, cgroupfs and no default rlimits (crun and the default ulimits are
# refused on such hosts); a containers.conf saying so is written unless CONTAINERS_CONF is set.
set -euo pipefail
cd "$(dirname "$0")/.."
ENGINE=${SEED_CONTAINER_ENGINE:-podman}
BASE=${SEED_BASE_IMAGE:-localhost/seed-base:bookworm}
IMAGE=${SEED_IMAGE:-seed:offline}
ROOTFS=${SEED_ROOTFS:-/tmp/seed-rootfs}
MIRROR=${DEBIAN_MIRROR:-http://deb.debian.org/debian}
say() { echo "build_offline.sh: $*" >&2; }
command -v "$ENGINE" >/dev/null || { say "needs $ENGINE (apt-get install podman runc debootstrap)"; exit 2; }

if [[ -z "${CONTAINERS_CONF:-}" ]]; then
  CONTAINERS_CONF=$(mktemp --suffix=.conf)
  printf '[containers]\ndefault_ulimits = []\n[engine]\nruntime = "runc"\ncgroup_manager = "cgroupfs"\n' \
    > "$CONTAINERS_CONF"
  export CONTAINERS_CONF
fi

if ! "$ENGINE" image exists "$BASE"; then
  command -v debootstrap >/dev/null || { say "needs debootstrap to build $BASE"; exit 2; }
  say "building the base image $BASE with debootstrap (Debian bookworm, python3) in $ROOTFS"
  debootstrap --variant=minbase --include=python3,python3-venv,python-is-python3,ca-certificates \
    bookworm "$ROOTFS" "$MIRROR" >&2
  tar -C "$ROOTFS" -c . | "$ENGINE" import - "$BASE" >&2
fi

# The host downloads the wheels (its pip knows this network's index, proxy and certificates), with a
# Python of the base's version, so that the wheels' ABI matches (SEED_PYTHON picks another one).
HOST_PYTHON=${SEED_PYTHON:-python3}
BASE_VERSION=$("$ENGINE" run --rm --network host "$BASE" python -c 'import sys; print("%d.%d" % sys.version_info[:2])')
HOST_VERSION=$("$HOST_PYTHON" -c 'import sys; print("%d.%d" % sys.version_info[:2])')
[[ "$BASE_VERSION" == "$HOST_VERSION" ]] || {
  say "$BASE has Python $BASE_VERSION but $HOST_PYTHON is $HOST_VERSION; set SEED_PYTHON to a Python $BASE_VERSION"
  exit 2; }
say "downloading wheels for Python $BASE_VERSION into docker/wheels/"
"$HOST_PYTHON" -m pip download -q -d docker/wheels ".[video,mujoco,dmc]" "setuptools>=68" wheel >&2

say "building $IMAGE from docker/Dockerfile with no package index"
# --format docker: podman's default OCI format drops the Dockerfile's SHELL (bash with pipefail).
SEED_BUILD_ARGS="--network host --format docker --build-arg BASE_IMAGE=$BASE --build-arg OFFLINE=1"
"$ENGINE" build $SEED_BUILD_ARGS -f docker/Dockerfile -t "$IMAGE" . >&2
say "built $IMAGE"

if [[ "${1:-}" == --run ]]; then
  say "running ./run_local.sh --docker classic vtrace 1 2 in $IMAGE for about a minute"
  SEED_CONTAINER_ENGINE=$ENGINE SEED_IMAGE=$IMAGE SEED_BUILD_ARGS=$SEED_BUILD_ARGS SEED_RUN_ARGS="--network host" \
    ./run_local.sh --docker classic vtrace 1 2 --new --gin_bindings training.total_environment_frames=150_000
fi
