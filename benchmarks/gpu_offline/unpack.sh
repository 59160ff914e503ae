#!/usr/bin/env bash
# Here, after device calls ran learn.sh (and learn.sh --more): puts the run directories they brought
# back (runs.tgz.00, .01, ... spread over the calls' files_at folders) under
# runs/learning (or $DEST), where learning.py --resume goes on with them (benchmarks/report.py publish
# then copies a finished run into benchmarks/results/), and prints
# the last lines of each learning.py's output.
#   bash benchmarks/gpu_offline/unpack.sh FILES_AT [FILES_AT ...]   # each device call's folder of returned files
set -euo pipefail
cd "$(dirname "$0")/../.."
(( $# > 0 )) || { echo "usage: unpack.sh FILES_AT [FILES_AT ...], the folders where device calls put runs.tgz.NN" >&2; exit 2; }
DEST=${DEST:-runs/learning}
PARTS=()
while IFS=$'\t' read -r number path; do
  if (( 10#$number != ${#PARTS[@]} )); then
    echo "unpack.sh: part runs.tgz.$(printf %02d ${#PARTS[@]}) is missing from $*; bring it back with 'bash .whl/learn.sh --more' on the warm host" >&2
    exit 2
  fi
  PARTS+=("$path")
done < <(for dir in "$@"; do for f in "$dir"/runs.tgz.[0-9]*; do [[ -f "$f" ]] && printf '%s\t%s\n' "${f##*.}" "$f"; done; done | sort -n)
(( ${#PARTS[@]} > 0 )) || { echo "unpack.sh: no runs.tgz.NN in $*" >&2; exit 2; }
mkdir -p "$DEST"
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
cat "${PARTS[@]}" | tar -xzf - -C "$TMP" || { echo "unpack.sh: the ${#PARTS[@]} parts do not make a whole archive; is the last part missing? ('bash .whl/learn.sh --more')" >&2; exit 3; }
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
