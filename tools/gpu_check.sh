#!/usr/bin/env bash
# Issue 13's GPU proof in one command on a machine with an NVIDIA GPU and CUDA's compiler but no
# package registry (the device tool's machines): build ggml from the pinned libggml-python source
# distribution with CUDA, build the engine against it, run the golden tests on the CUDA device, and
# print milliseconds per stream step (F16, Q8_0, Q4_K; both families, full size, random weights)
# with graph builds, buffer growth and host<->device bytes per step.
#
#   bash tools/gpu_check.sh --prepare   # where pip works: the source distribution and the wheels
#                                       # the GPU machine lacks, into .gpu_check/ (git-ignored)
#   bash tools/gpu_check.sh             # on the GPU machine (device tool: carry [".gpu_check"])
#   bash tools/gpu_check.sh --cpu       # the same steps without CUDA, mid-size models: checks this
#                                       # script on any machine
#
# Output: the log and JSON rows in $OUT (the device tool's folder) or /tmp/gpu_check/out.
# GPU_CHECK_BUDGET_S (default 540) bounds the whole run: a step that would not fit is skipped and
# says so. GPU_CHECK_CUDA_ARCH (default: the GPU's, from nvidia-smi) is CMAKE_CUDA_ARCHITECTURES.
set -uo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
PREP=$ROOT/.gpu_check
MODE=cuda
case "${1:-}" in
  --prepare) MODE=prepare ;;
  --cpu) MODE=cpu ;;
  "") ;;
  *) echo "usage: bash tools/gpu_check.sh [--prepare|--cpu]" >&2; exit 2 ;;
esac
VERSION=$(sed -n 's/.*"libggml-python==\([^"]*\)".*/\1/p' "$ROOT/pyproject.toml" | head -n 1)

if [ "$MODE" = prepare ]; then
  set -e
  mkdir -p "$PREP/wheels"
  python3 -m pip download -q --no-deps --no-binary libggml-python -d "$PREP" "libggml-python==$VERSION"
  # what the tests and benches import beyond the GPU image's packages (numpy, pytest, safetensors, ...)
  WANT=""
  for name in gguf soundfile cffi pycparser; do
    WANT="$WANT $name==$(python3 -m pip show "$name" | sed -n 's/^Version: //p')"
  done
  # shellcheck disable=SC2086  # one word per requirement
  python3 -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
    --platform manylinux_2_28_x86_64 --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64 \
    -d "$PREP/wheels" $WANT
  du -sh "$PREP"
  exit 0
fi

START=$(date +%s)
BUDGET=${GPU_CHECK_BUDGET_S:-540}
W=/tmp/gpu_check
OUTDIR=${OUT:-$W/out}
mkdir -p "$W" "$OUTDIR"
LOG=$OUTDIR/gpu_check.log
exec > >(tee -a "$LOG") 2>&1
left() { echo $((BUDGET - ($(date +%s) - START))); }
step() { echo; echo "=== $1 ($(( $(date +%s) - START )) s in, $(left) s left)"; }
# fits NEED: true when NEED seconds are left, else says what is skipped
fits() { if [ "$(left)" -ge "$1" ]; then return 0; fi; echo "skipped: $2 (needs ~$1 s, $(left) s left)"; return 1; }
FAILED=0

step "machine"
date -u
echo "mode $MODE; $(nproc) cores; $(python3 -V 2>&1); $(cmake --version | head -n 1)"
if [ "$MODE" = cuda ]; then
  nvidia-smi --query-gpu=name,memory.total,driver_version,compute_cap --format=csv,noheader || exit 1
  command -v nvcc && nvcc --version | tail -n 2
  ARCH=${GPU_CHECK_CUDA_ARCH:-$(nvidia-smi --query-gpu=compute_cap --format=csv,noheader | head -n 1 | tr -d .)}
fi

step "Python packages the image lacks"
SITE=$W/site
mkdir -p "$SITE"
if [ "$MODE" = cuda ] && ls "$PREP"/wheels/*.whl >/dev/null 2>&1; then  # built for the image's Python 3.12
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target "$W/deps" \
    "$PREP"/wheels/*.whl || exit 1
  export PYTHONPATH=$SITE:$W/deps:$ROOT/bench
else
  echo "using the installed packages"
  export PYTHONPATH=$SITE:$ROOT/bench
fi

step "ggml $VERSION from its source distribution"
SDIST=$(ls "$PREP"/libggml_python-"$VERSION".tar.gz 2>/dev/null | head -n 1)
if [ -z "$SDIST" ]; then echo "no source distribution in $PREP: run bash tools/gpu_check.sh --prepare first"; exit 1; fi
rm -rf "$W/src" && mkdir -p "$W/src" && tar xzf "$SDIST" -C "$W/src" || exit 1
GEN=""
command -v ninja >/dev/null && GEN="-G Ninja"
EXTRA=""
# one CPU module (ggml's AVX2 default: GGML_NATIVE cannot be combined with loadable backends, and on
# a GPU machine the CPU does only the host's share)
if [ "$MODE" = cuda ]; then
  EXTRA="-DGGML_CUDA=ON -DGGML_CUDA_NCCL=OFF -DCMAKE_CUDA_ARCHITECTURES=$ARCH"
  # the toolkit around the nvcc on PATH (CMake's own search misses a toolkit outside /usr/local/cuda)
  NVCC=$(command -v nvcc || true)
  [ -n "$NVCC" ] && EXTRA="$EXTRA -DCMAKE_CUDA_COMPILER=$NVCC -DCUDAToolkit_ROOT=$(dirname "$(dirname "$(readlink -f "$NVCC")")")"
fi
T0=$(date +%s)
# shellcheck disable=SC2086
cmake -S "$W/src/libggml_python-$VERSION" -B "$W/build-ggml" $GEN -DCMAKE_BUILD_TYPE=Release \
  -DBUILD_SHARED_LIBS=ON -DGGML_BACKEND_DL=ON -DGGML_NATIVE=OFF -DGGML_LLAMAFILE=ON -DGGML_OPENMP=OFF \
  -DGGML_CCACHE=OFF -DCMAKE_INSTALL_PREFIX="$SITE/libggml" $EXTRA >"$W/ggml-configure.log" 2>&1 \
  || { tail -n 40 "$W/ggml-configure.log"; exit 1; }
cmake --build "$W/build-ggml" -j "$(nproc)" >"$W/ggml-build.log" 2>&1 || { tail -n 60 "$W/ggml-build.log"; exit 1; }
cmake --install "$W/build-ggml" >/dev/null || exit 1
echo "built in $(( $(date +%s) - T0 )) s: $(ls "$SITE"/libggml/lib*/ | tr '\n' ' ')"

step "the engine against it"
T0=$(date +%s)
# shellcheck disable=SC2086
cmake -S "$ROOT/engine" -B "$W/build-engine" $GEN -DCMAKE_BUILD_TYPE=Release -DCMAKE_PREFIX_PATH="$SITE/libggml" \
  -Dpybind11_DIR="$(python3 -m pybind11 --cmakedir)" -DPython_EXECUTABLE="$(command -v python3)" \
  >"$W/engine-configure.log" 2>&1 || { tail -n 40 "$W/engine-configure.log"; exit 1; }
cmake --build "$W/build-engine" -j "$(nproc)" >"$W/engine-build.log" 2>&1 || { tail -n 60 "$W/engine-build.log"; exit 1; }
rm -rf "$SITE/captionist" && cp -r "$ROOT/app/captionist" "$SITE/captionist"
cp "$W"/build-engine/_engine*.so "$SITE/captionist/" || exit 1
echo "built in $(( $(date +%s) - T0 )) s"
cd "$ROOT" || exit 1
python3 -c "from captionist import engine; [print(' ', d) for d in engine.compute_devices()]" || exit 1
BACKEND=cpu
if [ "$MODE" = cuda ]; then
  BACKEND=cuda
  python3 -c "from captionist import engine; import sys; sys.exit(not any(d.backend.lower() == 'cuda' for d in engine.compute_devices()))" \
    || { echo "FAIL: the build lists no CUDA device"; exit 1; }
fi

step "golden tests on every non-CPU device (tests/engine/test_backends_golden.py)"
if fits 60 "the golden tests"; then
  python3 -m pytest -q -p no:cacheprovider -o addopts="" -rs tests/engine/test_backends_golden.py || FAILED=1
fi

step "hot path per step on every device, tiny reference models (bench/bench_hot_path.py)"
fits 30 "the tiny hot-path counts" && { python3 bench/bench_hot_path.py --work-dir "$W/tiny" || FAILED=1; }

# full size in the GPU run; mid-size / tiny with --cpu (the same code, seconds instead of minutes)
DIMS=full; FC_SIZES=0.6b,120m
[ "$MODE" = cpu ] && { DIMS=mid; FC_SIZES=tiny; }
VOX=$W/voxtral; FC=$W/fastconformer
THREADS=$(( $(nproc) < 8 ? $(nproc) : 8 ))  # for the host's share (mel, copies) and the CPU run
bench() {  # bench FILE...: ms per step on $BACKEND
  python3 bench/bench_device_steps.py --backend "$BACKEND" --threads "$THREADS" --json "$OUTDIR/steps-$(basename "$(dirname "$1")")-$(basename "$1" .gguf).json" "$@" \
    || FAILED=1
}
step "Voxtral $DIMS: F16 and Q4_K"
if fits 150 "writing the Voxtral F16 / Q4_K files"; then
  python3 bench/make_synthetic_gguf.py --dims "$DIMS" --out "$VOX" --types f16,q4_k --threads "$(nproc)" || FAILED=1
  fits 40 "the Voxtral step timings" && bench "$VOX/voxtral-synth-$DIMS-q4_k.gguf" "$VOX/voxtral-synth-$DIMS-f16.gguf"
fi
step "FastConformer $FC_SIZES: F16, Q8_0, Q4_K"
if fits 120 "writing the FastConformer files"; then
  python3 bench/make_synthetic_fastconformer.py --sizes "$FC_SIZES" --out "$FC" --types f16,q8_0,q4_k \
    --threads "$(nproc)" || FAILED=1
  for size in ${FC_SIZES//,/ }; do
    fits 30 "FastConformer $size timings" && bench "$FC/fastconformer-$size"/{f16,q8_0,q4_k}.gguf
  done
fi
step "Voxtral $DIMS: Q8_0"
if fits 90 "writing and timing Voxtral Q8_0"; then
  python3 bench/make_synthetic_gguf.py --dims "$DIMS" --out "$VOX" --types q8_0 --threads "$(nproc)" || FAILED=1
  bench "$VOX/voxtral-synth-$DIMS-q8_0.gguf"
fi

step "targets"
python3 - "$OUTDIR" "$DIMS" <<'PY' || FAILED=1
import json, pathlib, sys
rows = [r for f in sorted(pathlib.Path(sys.argv[1]).glob("steps-*.json")) for r in json.loads(f.read_text())]
bad = 0
for r in rows:
    if "error" in r:
        print(f"FAIL {r['file']}: {r['error']}")
        bad += 1
        continue
    # allocations: compute buffers enlarged while the stream runs (graph builds are reported: a
    # Voxtral cache view widens every 256 positions until its ring is full)
    ok = r["grows"] == 0
    print(f"{'ok  ' if ok else 'FAIL'} {r['file']}: {r['grows']:.2f} buffer allocations, "
          f"{r['builds']:.3f} graph builds per step; {r['bytes_in']:.0f} B in, {r['bytes_out']:.0f} B out")
    bad += not ok
    if r["architecture"] == "voxtral_realtime" and "q4_k" in r["file"] and sys.argv[2] == "full":
        ok = r["decoder_ms"] <= 5.0
        print(f"{'ok  ' if ok else 'FAIL'} {r['file']}: decoder {r['decoder_ms']:.2f} ms per step (target <= 5 ms)")
        bad += not ok
sys.exit(1 if bad or not rows else 0)
PY
echo
echo "gpu_check: $([ $FAILED = 0 ] && echo PASS || echo FAIL) in $(( $(date +%s) - START )) s; log $LOG"
exit $FAILED
