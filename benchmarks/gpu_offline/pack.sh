#!/usr/bin/env bash
# Packs TensorFlow (GPU build) and seed's other dependencies for a GPU host that has CUDA 13, no
# network and takes files in parts of at most PART_MIB (the device machines lent to this project:
# see ../experiments/2026-11-24-tensorflow-on-rented-gpus.md). Run here, after ./tests/run.sh has made .venv; writes
# .whl/p1 ... .whl/pN (ignored by git), each to be carried by one device call, and copies learn.sh
# beside them. Versions are .venv's, for the host's Python (PY_VERSION, 3.12 on those machines).
# Beside a learning run, start it as `chrt -i 0 bash benchmarks/gpu_offline/pack.sh`: nice alone does not
# keep it off a run started in another session (../experiments/2026-11-24-tensorflow-on-rented-gpus.md).
set -euo pipefail
cd "$(dirname "$0")/../.."
PY_VERSION=${PY_VERSION:-3.12}
PART_MIB=${PART_MIB:-46}   # a device call carries 64 MiB with the working tree (~14 MiB)
WORK=${WORK:-/tmp/seed_gpu_pack}
XZ_LEVEL=${XZ_LEVEL:-6}      # 0 packs fast (for checking this script), 6 packs ~20 % smaller
[[ -x .venv/bin/python ]] || { echo "pack.sh: no .venv; run ./tests/run.sh --co -q first" >&2; exit 2; }
version() { .venv/bin/python -c "import importlib.metadata as m; print(m.version('$1'))"; }
TF=$(version tensorflow-cpu 2>/dev/null || version tensorflow)
PACKAGES=("tensorflow==$TF")
for name in keras numpy grpcio protobuf ml_dtypes h5py optree namex gymnasium ale-py gin-config \
            farama-notifications gast astunparse google-pasta termcolor flatbuffers opt_einsum wrapt \
            tensorboard absl-py cloudpickle typing_extensions rich markdown-it-py mdurl pygments six packaging; do
  PACKAGES+=("$name==$(version "$name")")
done
# The CUDA 12 pieces TensorFlow opens under its own names and that have no CUDA 13 twin with the
# same interface (learn.sh links the rest to the host's CUDA 13 builds).
CUDA12=12.5.82
PACKAGES+=("nvidia-cuda-runtime-cu12==$CUDA12" "nvidia-nvjitlink-cu12==$CUDA12" "nvidia-cuda-nvrtc-cu12==$CUDA12")
PLATFORMS=()
for p in manylinux_2_28_x86_64 manylinux_2_27_x86_64 manylinux_2_17_x86_64 manylinux2014_x86_64 manylinux1_x86_64 any; do
  PLATFORMS+=(--platform "$p")
done
TARGET=(--only-binary=:all: --python-version "$PY_VERSION" --implementation cp "${PLATFORMS[@]}")
rm -rf "$WORK" && mkdir -p "$WORK"
.venv/bin/python -m pip download -q --no-deps "${TARGET[@]}" -d "$WORK/wheels" "${PACKAGES[@]}"
.venv/bin/python -m pip install -q --no-deps --no-index --no-compile "${TARGET[@]}" --target "$WORK/site" "$WORK"/wheels/*.whl
rm -rf "$WORK/site/tensorflow/include" "$WORK/site/bin"   # C++ headers (431 MB): not needed to run
tar -C "$WORK/site" -cf - . | xz -"$XZ_LEVEL" -T0 > "$WORK/site.tar.xz"
rm -rf .whl/p[0-9]* && mkdir -p .whl
grep -qx '/.whl/' .git/info/exclude 2>/dev/null || echo '/.whl/' >> .git/info/exclude
split -b "${PART_MIB}M" -d -a 2 "$WORK/site.tar.xz" "$WORK/site.tar.xz."
n=0
for part in "$WORK"/site.tar.xz.[0-9]*; do
  n=$((n + 1)); mkdir -p ".whl/p$n"; mv "$part" ".whl/p$n/"
done
cp benchmarks/gpu_offline/learn.sh .whl/
echo "pack.sh: $n parts of at most $PART_MIB MiB in .whl/p1 ... .whl/p$n (TensorFlow $TF for Python $PY_VERSION)"
