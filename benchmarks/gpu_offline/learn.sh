#!/usr/bin/env bash
# On the GPU host, from the repository root, after every part that pack.sh made has been moved to
# /tmp/parts (one device call per part: `mkdir -p /tmp/parts && mv .whl/pK/* /tmp/parts/`):
# unpacks TensorFlow and seed's dependencies into /tmp/site, links the CUDA 12 library names
# TensorFlow opens to the host's CUDA 13 builds (not a supported mix: it ran V-trace's and PPO's
# training and inference on an H100 and an H200; where `pip install tensorflow[and-cuda]` works, use
# that), checks a convolution and its gradient on GPU:0, then runs benchmarks/learning.py with the
# given arguments, its run directories under /tmp/lout.
#   bash .whl/learn.sh atari vtrace --actors 14 --envs 8 --frames 20000000 --seeds 1 --label gpu --timeout_s 470
# SEEDS="2 3" runs one learning.py per seed side by side (the arguments then name no --seeds): one
# run's 4 actors leave most of the host's 16 CPUs idle. RUNS=FILE does the same for runs that differ
# in more than the seed: one line of learning.py arguments per run (shell quoting, '#' comments),
# each run with the command line's arguments followed by its line. Side by side suits actor-bound
# runs (two PPO Pong runs: 7,600 frames/s each); learner-bound ones share the GPU badly but still
# train more frames together (four V-trace replay mixes on an H100: 1.4-1.55 updates/s each, 7,500
# frames/s in all; one alone: 3.6-3.8 updates/s, 4,650-4,850 frames/s).
# Everything comes back as parts
# runs.tgz.00, .01, ... of 15 MiB: learning.py's output and each run directory with its latest
# checkpoint only. A call brings back at most 64 MiB, so a call takes 4 parts to $OUT and leaves the
# rest in $BACK_PARTS; `bash .whl/learn.sh --more` (on the same warm host) takes the next 4. Unpack
# them here with unpack.sh, naming every call's folder, and go on with --resume on either machine
# (on the same warm host, learn.sh again with --resume: the runs are still in /tmp/lout).
# REQUIRE_GPU=0 skips the check, for a CPU-only baseline on the same host (with CUDA_VISIBLE_DEVICES=-1).
# BEFORE="benchmarks/update_loop.py --xla ..." runs that script first, in the same environment, for at
# most BEFORE_TIMEOUT_S seconds (300); its output goes to /tmp/back/before.out and the console, and its
# failure does not stop the learning run. Its words are split as a shell would (trusted as ARGS are).
set -uo pipefail
T0=$(date +%s)
BACK_PARTS=${BACK_PARTS:-/tmp/parts_back}
PARTS_PER_CALL=4   # of 15 MiB: a device call brings back at most 8 files and 64 MiB
mkdir -p "${OUT:=/tmp/out}"
send_parts() {   # the next PARTS_PER_CALL parts to $OUT, and what is left
  local parts=() part
  while IFS= read -r part; do parts+=("$part"); done < <(ls "$BACK_PARTS" 2>/dev/null | sort)
  if (( ${#parts[@]} == 0 )); then echo "learn.sh: no parts left in $BACK_PARTS" >&2; return 2; fi
  for part in "${parts[@]:0:PARTS_PER_CALL}"; do mv "$BACK_PARTS/$part" "$OUT/"; done
  ls -l "$OUT"
  local left
  left=$(ls "$BACK_PARTS" | wc -l)
  if (( left > 0 )); then
    echo "learn.sh: $left more part(s) in $BACK_PARTS on this host: bring them back with 'bash .whl/learn.sh --more' while it is warm"
  else
    echo "learn.sh: every part is back (unpack.sh with each call's folder)"
  fi
}
if [[ "${1:-}" == --more ]]; then send_parts; exit; fi
mkdir -p /tmp/parts /tmp/site /tmp/lout
mv .whl/p[0-9]*/* /tmp/parts/ 2>/dev/null
if [[ ! -d /tmp/site/tensorflow ]]; then
  echo "learn.sh: unpacking $(ls /tmp/parts | wc -l) parts ($(du -sh /tmp/parts | cut -f1))"
  if command -v xz > /dev/null; then
    cat /tmp/parts/site.tar.xz.* | xz -dc -T0 | tar -x -C /tmp/site || exit 3
  else
    cat /tmp/parts/site.tar.xz.* | python3 -c "import sys, tarfile; tarfile.open(fileobj=sys.stdin.buffer, mode='r|xz').extractall('/tmp/site')" || exit 3
  fi
fi
LINKS=/tmp/cuda12; mkdir -p $LINKS
C13=/usr/local/cuda-13.0/targets/x86_64-linux/lib
T13=$(ls -d /opt/*/.venv/lib/python3*/site-packages/nvidia/cu13/lib 2>/dev/null | head -1)
for pair in libcublas.so.12:libcublas.so.13 libcublasLt.so.12:libcublasLt.so.13 libcufft.so.11:libcufft.so.12 \
            libcusolver.so.11:libcusolver.so.12 libcusparse.so.12:libcusparse.so.12 libcurand.so.10:libcurand.so.10; do
  src=$(ls "$C13/${pair#*:}" "${T13:-/nonexistent}/${pair#*:}" 2>/dev/null | head -1)
  if [[ -n "$src" ]]; then ln -sf "$src" "$LINKS/${pair%%:*}"; else echo "learn.sh: no ${pair#*:} on this host" >&2; fi
done
N=/tmp/site/nvidia
export PYTHONPATH=/tmp/site:$PWD PYTHONUNBUFFERED=1 TF_CPP_MIN_LOG_LEVEL=1 SEED_NO_VENV=1 SEED_PYTHON=python3
export LD_LIBRARY_PATH=$LINKS:$C13:${T13:+$T13:}$N/cuda_runtime/lib:$N/nvjitlink/lib:$N/cuda_nvrtc/lib
REQUIRE_GPU=${REQUIRE_GPU:-1} python3 - <<'PY' 2>&1 | grep -v "oneDNN\|absl::InitializeLog" || exit 4
import os
import tensorflow as tf
print("learn.sh: tensorflow", tf.__version__, [d.name for d in tf.config.list_logical_devices("GPU")])
with tf.device("GPU:0" if tf.config.list_logical_devices("GPU") else "CPU:0"):
    x = tf.random.normal([8, 84, 84, 4])
    k = tf.Variable(tf.random.normal([8, 8, 4, 32]))
    with tf.GradientTape() as tape:
        y = tf.reduce_sum(tf.nn.conv2d(x, k, 4, "VALID"))
    device = tape.gradient(y, k).device
assert "GPU" in device or os.environ["REQUIRE_GPU"] == "0", f"the gradient was computed on {device}, not a GPU"
PY
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
echo "learn.sh: ready after $(( $(date +%s) - T0 )) s"
export TF_FORCE_GPU_ALLOW_GROWTH=true   # learners side by side share the GPU's memory
rm -rf /tmp/back && mkdir -p /tmp/back
if [[ -n "${BEFORE:-}" ]]; then
  eval "before_args=($BEFORE)"
  timeout "${BEFORE_TIMEOUT_S:-300}" python3 "${before_args[@]}" 2>&1 | grep --line-buffered -v "oneDNN\|absl::InitializeLog" | tee /tmp/back/before.out
  echo "learn.sh: BEFORE exited with ${PIPESTATUS[0]} (124: timed out) after $(( $(date +%s) - T0 )) s"
fi
if [[ -n "${SEEDS:-}" ]]; then
  RUNS=/tmp/runs_from_seeds && printf -- '--seeds %s\n' $SEEDS > "$RUNS"
fi
if [[ -n "${RUNS:-}" ]]; then
  [[ -f "$RUNS" ]] || { echo "learn.sh: RUNS=$RUNS is not a file" >&2; exit 2; }
  i=0
  while IFS= read -r line; do
    [[ -z "${line// }" || "$line" == \#* ]] && continue
    i=$((i + 1)); eval "run_args=($line)"
    python3 benchmarks/learning.py "$@" "${run_args[@]}" --out /tmp/lout --report_interval_s 30 \
      > "/tmp/back/learning_run$i.out" 2>&1 &
  done < "$RUNS"
  wait
  tail -n 3 /tmp/back/learning_run*.out
else
  python3 benchmarks/learning.py "$@" --out /tmp/lout --report_interval_s 30 2>&1 | tee /tmp/back/learning.out
fi
for run in /tmp/lout/*_seed*/; do   # every file but the summaries and all checkpoints but the latest
  run=${run%/}
  name=$(basename "$run")
  mkdir -p "/tmp/back/$name/checkpoints"
  find "$run" -maxdepth 1 -type f -exec cp {} "/tmp/back/$name/" \;
  [[ -d "$run/logs" ]] && cp -r "$run/logs" "/tmp/back/$name/"
  [[ -f "$run.log" ]] && cp "$run.log" /tmp/back/
  latest=$(sed -n 's/^model_checkpoint_path: "\(.*\)"$/\1/p' "$run/checkpoints/checkpoint" 2>/dev/null)
  if [[ -n "$latest" ]]; then
    cp "$run/checkpoints/$latest".* "/tmp/back/$name/checkpoints/"
    cp "$run/checkpoints/latest.json" "/tmp/back/$name/checkpoints/" 2>/dev/null
    printf 'model_checkpoint_path: "%s"\nall_model_checkpoint_paths: "%s"\n' "$latest" "$latest" \
      > "/tmp/back/$name/checkpoints/checkpoint"
  fi
done
cp /tmp/lout/*.png /tmp/back/ 2>/dev/null
rm -rf "$BACK_PARTS" && mkdir -p "$BACK_PARTS"
tar -C /tmp/back -czf - . | split -b 15M -d -a 2 - "$BACK_PARTS/runs.tgz."
send_parts
echo "learn.sh: done after $(( $(date +%s) - T0 )) s"
