#!/usr/bin/env bash
# Here, after a device call ran learn.sh: puts the run directories it brought back (runs.tgz.0, .1,
# ... in the call's files_at folder) under benchmarks/results/learning, where learning.py --resume
# goes on with them, and prints the last lines of each learning.py's output.
#   bash benchmarks/gpu_offline/unpack.sh /work/.device/N
set -euo pipefail
cd "$(dirname "$0")/../.."
FROM=${1:?usage: unpack.sh FILES_AT, the folder where a device call put runs.tgz.0, runs.tgz.1, ...}
ls "$FROM"/runs.tgz.[0-9] > /dev/null 2>&1 || { echo "unpack.sh: no runs.tgz.N in $FROM" >&2; exit 2; }
DEST=benchmarks/results/learning
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
cat "$FROM"/runs.tgz.[0-9] | tar -xzf - -C "$TMP"
for run in "$TMP"/*_seed*/; do
  run=${run%/}; name=$(basename "$run")
  if [[ -d "$DEST/$name" ]]; then   # the device's copy is the one that trained last
    echo "unpack.sh: replacing $DEST/$name ($(tail -n 1 "$DEST/$name/episodes.csv" 2>/dev/null | cut -d, -f1) frames here)"
    rm -rf "${DEST:?}/$name"
  fi
  mv "$run" "$DEST/"
  if [[ -f "$run.log" ]]; then mv "$run.log" "$DEST/"; fi
  echo "unpack.sh: $DEST/$name, $(tail -n 1 "$DEST/$name/episodes.csv" | cut -d, -f1) frames"
done
for out in "$TMP"/learning*.out; do
  if [[ -f "$out" ]]; then echo "== $(basename "$out")"; tail -n 2 "$out"; fi
done
