#!/usr/bin/env bash
# Trains on this machine: one learner and NUM_ACTORS actor processes.
#
#   ./run_local.sh [--docker] ENV AGENT NUM_ACTORS ENVS_PER_ACTOR [options]
#   ./run_local.sh atari vtrace 4 4
#   ./run_local.sh --docker atari vtrace 4 4     (the same job inside the seed image)
#   ./run_local.sh atari vtrace 4 4 --game Breakout
#   ./run_local.sh classic vtrace 2 4 --gin_bindings 'VTraceLoss.entropy_cost=0.005'
#
# ENV (its games for --game; the extra it needs, installed with .venv/bin/pip install -e '.[EXTRA]'):
#   atari     any ale-py game: Pong (default), Breakout, SpaceInvaders, ...; no extra
#   classic   any gymnasium id with Box observations: CartPole-v1 (default), Acrobot-v1, Pendulum-v1 (SAC's
#             default), ...; no extra
#   mujoco    gymnasium's v5 tasks: HalfCheetah-v5 (default), Hopper-v5, Walker2d-v5, Ant-v5, ...; extra mujoco
#   dmc       dm_control's suite from states as DOMAIN-TASK: cheetah-run (default), walker-walk, hopper-hop, ...;
#             extra dmc
#   football  Google Research Football scenarios: 11_vs_11_easy_stochastic (default), academy_empty_goal_close,
#             academy_3_vs_1_with_keeper, ...; extra football (Python 3.11)
#   procgen   the 16 Procgen games: starpilot (default), bigfish, coinrun, fruitbot, ...; extra procgen (Python
#             3.11) and the system's Qt 5 runtime (apt install libqt5gui5)
#   dmlab     DeepMind Lab levels: explore_goal_locations_small (default) and the rest of DMLab-30, or any
#             level script; needs DeepMind Lab's own deepmind_lab module, built from github.com/deepmind/lab
# AGENT is vtrace, r2d2, ppo or sac, where seed/configs/<ENV>_<AGENT>.gin exists (docs/envs.md has the table).
#
# Options:
#   --game NAME          the game or task of ENV (above)
#   --frames N           frame budget: env frames to train, e.g. 10M, 500k or 2_000_000 (default: the
#                        config's training.total_environment_frames; 10M for Atari). Where the config
#                        sets training.schedule_frames (atari_vtrace, atari_r2d2) N moves the stop only;
#                        elsewhere the schedules span the budget and stretch with it
#   --logdir DIR         run directory; default: resume the newest runs/<game>_<agent>_* with a
#                        checkpoint (else the newest), or start one
#   --new                start a new run directory instead of resuming the newest
#   --resume_with_changes  resume although the settings asked for differ from the run's (else refused)
#   --gpu                the learner on this machine's NVIDIA GPU: installs TensorFlow's CUDA wheels into
#                        .venv once (the gpu extra) and binds inference.device='gpu' (refused at start,
#                        saying why, when no GPU is usable); with --docker, the GPU image and --gpus all
#   --verbose            every log line on the terminal (TensorFlow's start-up too), not only the
#                        progress line, the start-up summary, warnings and errors
#   --gin_config FILE    extra gin file, applied after seed/configs/<ENV>_<AGENT>.gin (repeatable)
#   --gin_bindings B     gin binding for both roles (repeatable)
#   --tensorboard        also start TensorBoard on a free loopback port for this run (stops with it)
#
# The first run creates .venv and installs seed into it (not with --docker,
# or with SEED_NO_VENV=1: then seed must be installed for $SEED_PYTHON). With
# --docker, docker/Dockerfile is built (SEED_CONTAINER_ENGINE=podman for
# podman) and runs/ is mounted into the container. Ctrl-C stops every
# process within seconds and saves a checkpoint; the same command resumes.
# A learner killed by a signal or crashed is restarted from its latest
# checkpoint (at most SEED_LEARNER_RESTARTS times, default 3), an actor killed
# by a signal is restarted (seed/launchers/restarts.py). This script only makes
# the environment; the launcher is seed/launchers/local.py.
set -euo pipefail
cd "$(dirname "$0")"

usage() { awk 'NR > 1 && !/^#/ { exit } NR > 1 { sub(/^# ?/, ""); print }' "$0"; exit "${1:-2}"; }  # the header
die() { echo "run_local.sh: $*" >&2; exit 2; }

[[ "${1:-}" == "-h" || "${1:-}" == "--help" ]] && usage 0
DOCKER=0
if [[ "${1:-}" == "--docker" ]]; then DOCKER=1; shift; fi
[[ $# -ge 4 ]] || { echo "run_local.sh: need ENV AGENT NUM_ACTORS ENVS_PER_ACTOR" >&2; usage 2; }
GPU=0
for arg in "$@"; do
  case "$arg" in
    --gpu) GPU=1 ;;
    -h|--help) usage 0 ;;
  esac
done

# --- --docker: build the image and run this same command inside it
if [[ $DOCKER == 1 ]]; then
  ENGINE=${SEED_CONTAINER_ENGINE:-docker}
  command -v "$ENGINE" >/dev/null || die "--docker needs '$ENGINE' on PATH (install Docker, or set SEED_CONTAINER_ENGINE=podman)"
  "$ENGINE" info >/dev/null 2>&1 || die "--docker: '$ENGINE' cannot reach a container engine (is the daemon running?); without --docker the job runs natively"
  [[ -f "seed/configs/${1}_${2}.gin" ]] || die "no config for ENV '$1' and AGENT '$2' (seed/configs/${1}_${2}.gin)"
  VARIANT=cpu GPU_RUN_ARGS=()
  if [[ $GPU == 1 ]]; then
    VARIANT=gpu
    # Docker's NVIDIA container toolkit takes --gpus; podman takes the CDI device it generates.
    if [[ "$ENGINE" == *podman* ]]; then GPU_RUN_ARGS=(--device nvidia.com/gpu=all); else GPU_RUN_ARGS=(--gpus all); fi
  fi
  IMAGE=${SEED_IMAGE:-seed:$VARIANT}
  # Extra engine arguments, split on spaces: SEED_BUILD_ARGS for the build (an offline base image and
  # wheels: docker/build_offline.sh), SEED_RUN_ARGS for the run (e.g. --network host).
  read -ra BUILD_ARGS <<< "${SEED_BUILD_ARGS:-}"
  read -ra RUN_ARGS <<< "${SEED_RUN_ARGS:-}"
  echo "run_local.sh: building $IMAGE from docker/Dockerfile" >&2
  "$ENGINE" build "${BUILD_ARGS[@]}" --build-arg "VARIANT=$VARIANT" -f docker/Dockerfile -t "$IMAGE" .
  mkdir -p runs
  TTY=(); [[ -t 0 ]] && TTY=(-it)
  # --init forwards Ctrl-C to run_local.sh inside; runs/ stays on the host, owned by this user.
  exec "$ENGINE" run --rm --init "${TTY[@]}" "${GPU_RUN_ARGS[@]}" "${RUN_ARGS[@]}" --user "$(id -u):$(id -g)" -e HOME=/tmp \
    -v "$PWD/runs:/app/runs" "$IMAGE" ./run_local.sh "$@"
fi

# --- the command line, checked before the first run spends minutes making the .venv (stdlib only)
"${SEED_PYTHON:-python3}" -m seed.launchers.local --check "$@" || exit $?

# --- environment: a .venv with seed installed, refreshed when setup.cfg changes
if [[ "${SEED_NO_VENV:-0}" == 1 ]]; then  # (an image has seed installed and no setup.cfg)
  PY=${SEED_PYTHON:-python3}
else
  # shellcheck source=seed/venv.sh
  source seed/venv.sh
  ensure_venv run_local.sh "$([[ $GPU == 1 ]] && echo gpu)"
  PY=.venv/bin/python
fi
# The launcher replaces this shell, so Ctrl-C, a closed terminal or pipe reach it directly.
exec "$PY" -m seed.launchers.local "$@"
