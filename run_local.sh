#!/usr/bin/env bash
# Trains on this machine: one learner and NUM_ACTORS actor processes.
#
#   ./run_local.sh [--docker] ENV AGENT NUM_ACTORS ENVS_PER_ACTOR [options]
#   ./run_local.sh atari vtrace 4 4
#   ./run_local.sh --docker atari vtrace 4 4     (the same job inside the seed image)
#   ./run_local.sh atari vtrace 4 4 --game Breakout
#   ./run_local.sh classic vtrace 2 4 --gin_bindings 'VTraceLoss.entropy_cost=0.005'
#
# Options:
#   --game NAME          Atari game (default Pong) or gymnasium env id (default CartPole-v1)
#   --frames N           frame budget: env frames to train, e.g. 10M, 500k or 2_000_000 (default: the
#                        config's run_learner.total_environment_frames; 10M for Atari). Where the config
#                        sets run_learner.schedule_frames (atari_vtrace, atari_r2d2) N moves the stop only;
#                        elsewhere the schedules span the budget and stretch with it
#   --logdir DIR         run directory; default: resume the newest runs/<game>_<agent>_* with a
#                        checkpoint (else the newest), or start one
#   --new                start a new run directory instead of resuming the newest
#   --resume_with_changes  resume although the settings asked for differ from the run's (else refused)
#   --gpu                the learner on this machine's NVIDIA GPU: installs TensorFlow's CUDA wheels into
#                        .venv once (the gpu extra) and binds run_learner.device='gpu' (refused at start,
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
# checkpoint (at most SEED_LEARNER_RESTARTS times, default 3).
set -euo pipefail
cd "$(dirname "$0")"

usage() { awk 'NR > 1 && !/^#/ { exit } NR > 1 { sub(/^# ?/, ""); print }' "$0"; exit "${1:-2}"; }  # the header
die() { echo "run_local.sh: $*" >&2; exit 2; }

[[ "${1:-}" == "-h" || "${1:-}" == "--help" ]] && usage 0
DOCKER=0
if [[ "${1:-}" == "--docker" ]]; then DOCKER=1; shift; fi
ARGS=("$@")
[[ $# -ge 4 ]] || { echo "run_local.sh: need ENV AGENT NUM_ACTORS ENVS_PER_ACTOR" >&2; usage 2; }
ENV_NAME=$1 AGENT=$2 NUM_ACTORS=$3 ENVS_PER_ACTOR=$4
shift 4
[[ "$NUM_ACTORS" =~ ^[1-9][0-9]*$ ]] || die "NUM_ACTORS must be a positive integer, got '$NUM_ACTORS'"
[[ "$ENVS_PER_ACTOR" =~ ^[1-9][0-9]*$ ]] || die "ENVS_PER_ACTOR must be a positive integer, got '$ENVS_PER_ACTOR'"
CONFIG="seed/configs/${ENV_NAME}_${AGENT}.gin"
if [[ ! -f "$CONFIG" ]]; then
  available=$(cd seed/configs && ls *.gin | sed 's/\.gin$//' | grep -v sticky | tr '\n' ' ')
  die "no config for ENV '$ENV_NAME' and AGENT '$AGENT' ($CONFIG); available: $available"
fi

GAME="" LOGDIR="" NEW=0 TENSORBOARD=0 FRAMES="" GPU=0 VERBOSE=0 RESUME_WITH_CHANGES=0
GIN_ARGS=(--gin_config "$CONFIG")
CONFIGS=("$CONFIG")
while [[ $# -gt 0 ]]; do
  case "$1" in
    --game) GAME=${2:?--game needs a name}; shift 2 ;;
    --frames)
      FRAMES=${2:?--frames needs a number of env frames, e.g. 10M}; shift 2
      [[ "$FRAMES" =~ ^([0-9][0-9_]*)([kKmM]?)$ ]] || die "--frames takes env frames like 10M, 500k or 2_000_000, got '$FRAMES'"
      FRAMES=${BASH_REMATCH[1]//_/}
      case "${BASH_REMATCH[2]}" in k|K) FRAMES=$((FRAMES * 1000)) ;; m|M) FRAMES=$((FRAMES * 1000000)) ;; esac
      (( FRAMES > 0 )) || die "--frames must be more than 0" ;;
    --logdir) LOGDIR=${2:?--logdir needs a directory}; shift 2 ;;
    --new) NEW=1; shift ;;
    --resume_with_changes) RESUME_WITH_CHANGES=1; shift ;;
    --gpu) GPU=1; shift ;;
    --verbose) VERBOSE=1; shift ;;
    --tensorboard) TENSORBOARD=1; shift ;;
    --gin_config) GIN_ARGS+=(--gin_config "${2:?--gin_config needs a file}"); CONFIGS+=("$2"); shift 2 ;;
    --gin_bindings)
      BINDING=${2:?--gin_bindings needs a binding}; shift 2
      # The game names the run directory: it comes from --game (or a GAME binding) only.
      if [[ "$BINDING" =~ ^[[:space:]]*GAME[[:space:]]*=[[:space:]]*[\'\"]([^\'\"]*)[\'\"][[:space:]]*$ ]]; then
        GAME=${BASH_REMATCH[1]}; continue
      fi
      [[ "$BINDING" =~ ^[[:space:]]*[A-Za-z_]+\.(game|env_id)[[:space:]]*= ]] && \
        die "'$BINDING' would train another game than the run directory says; use --game NAME"
      GIN_ARGS+=(--gin_bindings "$BINDING") ;;
    -h|--help) usage 0 ;;
    *) die "unknown option '$1' (see ./run_local.sh --help)" ;;
  esac
done
[[ $NEW == 1 && -n "$LOGDIR" && -f "$LOGDIR/checkpoints/checkpoint" ]] && \
  die "--new, but --logdir $LOGDIR holds a run with a checkpoint: name a new directory, or drop --new to resume it"
# Every env family's config names its game or task in the GAME macro (seed/envs/); the last
# config file that sets it wins, as in gin, unless --game (or a GAME binding) names one.
if [[ -n "$GAME" ]]; then
  GIN_ARGS+=(--gin_bindings "GAME='$GAME'")
else
  for file in "${CONFIGS[@]}"; do
    [[ -f "$file" ]] || file="seed/configs/$(basename "$file")"  # a bare name, as gin_setup resolves it
    FOUND=$(sed -n "s/^GAME = '\([^']*\)'.*/\1/p" "$file" 2>/dev/null | tail -n 1 || true)
    GAME=${FOUND:-$GAME}
  done
  [[ -n "$GAME" ]] || die "$CONFIG sets no GAME macro (GAME = 'Name'); every env family's config needs one"
fi
GIN_ARGS+=(--gin_bindings "run_actor.num_envs=$ENVS_PER_ACTOR")
[[ -n "$FRAMES" ]] && GIN_ARGS+=(--gin_bindings "run_learner.total_environment_frames=$FRAMES")
[[ $GPU == 1 ]] && GIN_ARGS+=(--gin_bindings "run_learner.device='gpu'")
ROLE_ARGS=()
[[ $VERBOSE == 1 ]] && ROLE_ARGS+=(--verbose)
LEARNER_ARGS=("${ROLE_ARGS[@]}")
[[ $RESUME_WITH_CHANGES == 1 ]] && LEARNER_ARGS+=(--resume_with_changes)

# --- --docker: build the image and run this same command inside it
if [[ $DOCKER == 1 ]]; then
  ENGINE=${SEED_CONTAINER_ENGINE:-docker}
  command -v "$ENGINE" >/dev/null || die "--docker needs '$ENGINE' on PATH (install Docker, or set SEED_CONTAINER_ENGINE=podman)"
  "$ENGINE" info >/dev/null 2>&1 || die "--docker: '$ENGINE' cannot reach a container engine (is the daemon running?); without --docker the job runs natively"
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
    -v "$PWD/runs:/app/runs" "$IMAGE" ./run_local.sh "${ARGS[@]}"
fi

# --- environment: a .venv with seed installed, refreshed when setup.cfg changes
if [[ "${SEED_NO_VENV:-0}" == 1 ]]; then  # (an image has seed installed and no setup.cfg)
  PY=${SEED_PYTHON:-python3}
else
  # shellcheck source=seed/venv.sh
  source seed/venv.sh
  ensure_venv run_local.sh "$([[ $GPU == 1 ]] && echo gpu)"
  PY=.venv/bin/python
fi

# --- run directory: resume the newest matching one unless told otherwise
if [[ -z "$LOGDIR" ]]; then
  PREFIX="runs/${GAME}_${AGENT}_"
  # The newest run with a checkpoint, else the newest: a start stopped before its first
  # checkpoint must not hide the run that trained.
  NEWEST="" LATEST=""
  while IFS= read -r dir; do
    NEWEST=${NEWEST:-$dir}
    if [[ -f "$dir/checkpoints/checkpoint" ]]; then LATEST=$dir; break; fi
  done < <(ls -d "$PREFIX"* 2>/dev/null | sort -r)
  LATEST=${LATEST:-$NEWEST}
  if [[ $NEW == 0 && -n "$LATEST" ]]; then
    LOGDIR=$LATEST
    SKIPPED=""
    [[ "$LATEST" != "$NEWEST" ]] && SKIPPED="; $NEWEST is newer but has no checkpoint"
    echo "run_local.sh: resuming $LOGDIR (--new starts a fresh run$SKIPPED)" >&2
  else
    LOGDIR="$PREFIX$(date +%Y%m%d_%H%M%S)"
  fi
fi
FRESH=0
[[ -e "$LOGDIR" ]] || FRESH=1
mkdir -p "$LOGDIR/logs"
rm -f "$LOGDIR/learner_address"
echo "run_local.sh: run directory $LOGDIR; tensorboard --logdir $LOGDIR" >&2

# --- processes
PIDS=()
stop_all() {
  trap - INT TERM HUP
  trap '' PIPE  # a reader that went away (| head) must not cut the stop short
  echo "run_local.sh: stopping every process (the learner saves a checkpoint if it still can)" >&2 || true
  for pid in "${PIDS[@]}"; do kill -TERM "$pid" 2>/dev/null || true; done
  for _ in $(seq 100); do
    alive=0
    for pid in "${PIDS[@]}"; do kill -0 "$pid" 2>/dev/null && alive=1; done
    [[ $alive == 0 ]] && break
    sleep 0.1
  done
  for pid in "${PIDS[@]}"; do kill -KILL "$pid" 2>/dev/null || true; done
  wait 2>/dev/null || true
  report_checkpoint
}

# What a restart will resume from, read from the learner's checkpoints/latest.json.
report_checkpoint() {
  "$PY" - "$LOGDIR" >&2 <<'PYTHON' || true
import json, os, sys, time
logdir = sys.argv[1]
try:
    with open(os.path.join(logdir, "checkpoints", "latest.json")) as f:
        latest = json.load(f)
except (OSError, ValueError):
    print(f"run_local.sh: stopped; {logdir} has no checkpoint, so the same command starts this run from "
          "the beginning (the learner saves one every run_learner.checkpoint_interval_s and when it stops cleanly)")
    sys.exit()
age = time.time() - latest["time"]
age = f"{age:.0f} s" if age < 120 else f"{age / 60:.0f} min"
if latest.get("budget_reached"):
    print(f"run_local.sh: done: trained to its budget, {latest['environment_frames']:,} environment frames "
          f"({latest['checkpoint']}); the same command with a larger --frames trains it on")
    sys.exit()
print(f"run_local.sh: stopped; the last checkpoint holds {latest['environment_frames']:,} environment frames, "
      f"saved {age} ago ({latest['checkpoint']}); run the same command to resume from it")
PYTHON
}
# A closed terminal (HUP) or a closed pipe (PIPE: `./run_local.sh ... | head`) stops the run as Ctrl-C
# does, rather than leaving the learner and the actors running without this script.
trap 'stop_all; exit 130' INT TERM HUP PIPE

# The learner exited before it listened (bad settings; its error is on stderr). A run directory
# made for this attempt holds only its logs, which repeat that error: remove it, so runs/ keeps
# only runs that ran.
failed_at_start() {
  local code=0
  wait "$LEARNER" || code=$?
  if [[ $FRESH == 1 ]]; then
    rm -rf "$LOGDIR"
    echo "run_local.sh: removed $LOGDIR (the learner did not start)" >&2
  fi
  exit $(( code == 0 ? 1 : code ))
}

start_learner() {
  "$PY" -m learner --logdir "$LOGDIR" --address "$1" "${LEARNER_ARGS[@]}" "${GIN_ARGS[@]}" &
  LEARNER=$!
}
start_learner 127.0.0.1:0
PIDS+=("$LEARNER")
for _ in $(seq 1200); do
  [[ -f "$LOGDIR/learner_address" ]] && break
  kill -0 "$LEARNER" 2>/dev/null || failed_at_start
  sleep 0.1
done
[[ -f "$LOGDIR/learner_address" ]] || { stop_all; die "learner did not start listening within 120 s"; }
ADDRESS=$(cat "$LOGDIR/learner_address")
for ((i = 0; i < NUM_ACTORS; i++)); do
  "$PY" -m actors --logdir "$LOGDIR" --learner_address "$ADDRESS" --actor_index "$i" "${ROLE_ARGS[@]}" "${GIN_ARGS[@]}" \
    >"$LOGDIR/logs/actor_$i.stdout" 2>&1 &
  PIDS+=("$!")
done
echo "run_local.sh: learner at $ADDRESS, $NUM_ACTORS actor(s) x $ENVS_PER_ACTOR envs (logs in $LOGDIR/logs)" >&2
if [[ $TENSORBOARD == 1 ]]; then
  # Port 0 lets the OS pick a free port; TensorBoard then binds it (a race only with another
  # process binding in the same instant). --load_fast=false: no separate data-server process,
  # which outlived TensorBoard on Ctrl-C.
  TB_PORT=$("$PY" -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
  "$PY" -m tensorboard.main --logdir "$LOGDIR" --host 127.0.0.1 --port "$TB_PORT" --load_fast=false \
    >"$LOGDIR/logs/tensorboard.stdout" 2>&1 &
  PIDS+=("$!")
  echo "run_local.sh: tensorboard at http://127.0.0.1:$TB_PORT/ (log in $LOGDIR/logs/tensorboard.stdout)" >&2
fi

# Actors exit on their own only when they cannot go on (the learner refused them, or no learner
# for run_actor.reconnect_timeout_s): with none left the learner would wait for ever.
ACTORS=("${PIDS[@]:1:$NUM_ACTORS}")
# A learner that dies from a signal (the out-of-memory killer's SIGKILL, say) or crashes is started
# again from its latest checkpoint on the same address, where the actors reconnect on their own;
# at most SEED_LEARNER_RESTARTS times (3). Exit 0 (budget reached, clean stop) and 2 (bad settings)
# are final.
MAX_RESTARTS=${SEED_LEARNER_RESTARTS:-3}
[[ "$MAX_RESTARTS" =~ ^[0-9]+$ ]] || die "SEED_LEARNER_RESTARTS must be a count, got '$MAX_RESTARTS'"
RESTARTS=0
set +e
while true; do
  while kill -0 "$LEARNER" 2>/dev/null; do
    running=0
    for pid in "${ACTORS[@]}"; do kill -0 "$pid" 2>/dev/null && running=1; done
    if [[ $running == 0 ]]; then
      wait "${ACTORS[0]}"
      code=$?
      # An actor exits 0 only when a signal stopped it: the Ctrl-C sent to the whole process group
      # reached the actors before this shell ran its trap (seen under load). That is a stop, not a failure.
      if [[ $code == 0 ]]; then stop_all; exit 130; fi
      echo "run_local.sh: every actor has exited; actor_0 said: $(tail -n 1 "$LOGDIR/logs/actor_0.stdout")" >&2
      stop_all
      exit "$code"
    fi
    sleep 1
  done
  wait "$LEARNER"
  STATUS=$?
  if [[ $STATUS == 0 || $STATUS == 2 ]]; then break; fi
  REASON="exit code $STATUS"
  (( STATUS > 128 )) && REASON="signal $(kill -l $((STATUS - 128)) 2>/dev/null || echo $((STATUS - 128)))"
  if (( RESTARTS >= MAX_RESTARTS )); then
    echo "run_local.sh: the learner died ($REASON) after $RESTARTS restarts; giving up (SEED_LEARNER_RESTARTS=$MAX_RESTARTS)" >&2
    break
  fi
  RESTARTS=$((RESTARTS + 1))
  echo "run_local.sh: the learner died ($REASON); restarting it from its latest checkpoint on $ADDRESS" \
       "(restart $RESTARTS of $MAX_RESTARTS; its log: $LOGDIR/logs)" >&2
  rm -f "$LOGDIR/learner_address"
  start_learner "$ADDRESS"
  PIDS[0]=$LEARNER
done
set -e
stop_all
exit "$STATUS"
