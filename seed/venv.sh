# Sourced by run_local.sh and tests/run.sh (bash): the project's .venv, made on first use.
#
#   ensure_venv CALLER EXTRAS     e.g. ensure_venv run_local.sh gpu; ensure_venv tests/run.sh test
#
# Installs this checkout (editable) with EXTRAS (comma-separated, may be empty) and every extra
# installed before, again whenever setup.cfg or pyproject.toml change. .venv/.seed-installed holds
# the checksum of those files on its first line and one installed extra per line after it.
ensure_venv() {
  local caller=$1 extras=$2 stamp=.venv/.seed-installed want have=() wanted=() extra
  if [[ ! -x .venv/bin/python ]]; then
    echo "$caller: creating .venv (first run; installs TensorFlow, ale-py, ... once)" >&2
    "${SEED_PYTHON:-python3}" -m venv .venv
  fi
  want=$(cat setup.cfg pyproject.toml | cksum)
  [[ -f $stamp ]] && mapfile -t have < <(tail -n +2 "$stamp")
  local missing=0
  IFS=, read -ra wanted <<< "$extras"
  for extra in "${wanted[@]}"; do
    [[ " ${have[*]} " == *" $extra "* ]] || { have+=("$extra"); missing=1; }
  done
  [[ -f $stamp && "$(head -n 1 "$stamp")" == "$want" && $missing == 0 ]] && return 0
  # A .venv from before seed depended on the full TensorFlow build holds tensorflow-cpu: both wheels
  # write the same files, so the one uninstalled later would take the other's with it.
  if .venv/bin/python -m pip show -q tensorflow-cpu >/dev/null 2>&1; then
    echo "$caller: replacing tensorflow-cpu in .venv with tensorflow (runs on the CPU, and on a GPU with the gpu extra)" >&2
    .venv/bin/python -m pip uninstall -q -y tensorflow-cpu tensorflow >&2
  fi
  local spec=.
  if [[ ${#have[@]} -gt 0 ]]; then spec=".[$(IFS=,; echo "${have[*]}")]"; fi
  [[ " ${have[*]} " == *" gpu "* ]] && echo "$caller: installing TensorFlow's CUDA and cuDNN wheels (a few GB, once)" >&2
  .venv/bin/python -m pip install -q --upgrade pip >&2
  .venv/bin/python -m pip install -q -e "$spec" >&2
  printf '%s\n' "$want" "${have[@]}" > "$stamp"
}
