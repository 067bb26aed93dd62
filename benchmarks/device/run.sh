#!/usr/bin/env bash
# The device run, one command on a lent GPU machine (repository root; see benchmarks/device/README.md):
#   run(command="bash benchmarks/device/run.sh", carry=[".whl", "out"], timeout_s=600)
# 1. installs the carried cp312 wheels in .whl/ (pyoptix-contrib built for OptiX 9.0, taichi, dill,
#    plyfile, tqdm, trimesh) into /tmp/site;
# 2. records the device ($OUT/device.txt) and which backends start, with the reason for those that
#    do not, and the OptiX self-check that 'auto' runs ($OUT/backends.txt);
# 3. the GPU tests that are not slow ($OUT/tests_fast.log);
# 4. benchmarks/bench_gpu.py over the paper's presets beside the Taichi CUDA peer, with the
#    rebuild-interval sweep: $OUT/gpu_<day>_<gpu>.json (rewritten after every row, so a run cut short
#    keeps what it measured);
# 5. the collider benchmark ($OUT/colliders_gpu.json) and the slow GPU tests as time allows;
# 6. the GPU section of docs/benchmarks.md rendered from the new JSON ($OUT/benchmarks.md).
# Afterwards, here: copy gpu_*.json into benchmarks/results/ and run python benchmarks/make_gpu_doc.py.
# Needs out/ with the bunny states, made where trimesh is:
#   .venv/bin/python benchmarks/bench_gpu.py --presets bunnies_14@native bunny_drop@1000000 --write-states out
set -o pipefail
BUDGET=${BUDGET:-580}
left() { echo $(( BUDGET - SECONDS )); }
OUT=${OUT:-/tmp/mochi_device_out}
mkdir -p "$OUT"
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
export PYTHONPATH=/tmp/site:$PWD PYTHONUNBUFFERED=1 MOCHI_KERNEL_CACHE=/tmp/mochi_kernels TI_DEVICE_MEMORY_GB=12
GPU=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1 | tr -c 'A-Za-z0-9\n' '_' | tr -s '_' | sed 's/_$//')
RESULT="$OUT/gpu_$(date -u +%Y%m%d)_${GPU:-unknown}.json"
{ nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm --format=csv
  python3 -c "import cupy, numba; print('cupy', cupy.__version__, 'numba', numba.__version__)"; nproc; } > "$OUT/device.txt" 2>&1
python3 - > "$OUT/backends.txt" 2>&1 <<'PY'
from engine.backends.select import choose_backend_name, probe_backends
for name, ok, text in probe_backends():
    print(f"{name}: {'available' if ok else 'unavailable'}: {text}")
print("auto ->", choose_backend_name(log=print))
from engine.backends.optix_self_check import run_self_check
print("optix self-check:", run_self_check())
PY
cat "$OUT/device.txt" "$OUT/backends.txt"
echo "== set up at ${SECONDS}s"
timeout 150 python3 -m pytest -p no:cacheprovider tests/gpu -m "not slow" -q -rs > "$OUT/tests_fast.log" 2>&1
echo "rc=$? at ${SECONDS}s" >> "$OUT/tests_fast.log"; tail -15 "$OUT/tests_fast.log"
timeout $(( $(left) - 150 )) python3 benchmarks/bench_gpu.py --backends cuda,optix \
  --presets freefall@1000000,2000000,5000000 rotating_gravity changing_radii_small changing_radii_large \
  bunnies_14@native bunny_drop@native --state bunnies_14=out/bunnies_14_native.npz \
  --state bunny_drop=out/bunny_drop_1000000.npz --steps 150 --warmup 10 --repeats 3 --repeats-large 2 \
  --late --sweep 1 2 5 10 20 50 100 --out "$RESULT" > "$OUT/bench.log" 2>&1
echo "bench rc=$? at ${SECONDS}s" | tee -a "$OUT/bench.log"
sed -n '/^| scene/,$p' "$OUT/bench.log" | cut -c1-200
if [ "$(left)" -gt 90 ]; then
  timeout 70 python3 benchmarks/bench_colliders.py --particles 1000000 --steps 100 --backends cuda,optix \
    --json "$OUT/colliders_gpu.json" > "$OUT/colliders.log" 2>&1
  echo "colliders rc=$? at ${SECONDS}s" | tee -a "$OUT/colliders.log"; tail -6 "$OUT/colliders.log"
fi
cp docs/benchmarks.md "$OUT/benchmarks.md"
python3 benchmarks/make_gpu_doc.py --results "$OUT" --doc "$OUT/benchmarks.md" || echo "doc rendering failed"
T=$(( $(left) - 5 ))
if [ $T -gt 30 ]; then
  timeout $T python3 -m pytest -p no:cacheprovider tests/gpu -m slow -q -rs -x > "$OUT/tests_slow.log" 2>&1
  echo "rc=$? at ${SECONDS}s" >> "$OUT/tests_slow.log"; tail -5 "$OUT/tests_slow.log"
fi
echo "== done at ${SECONDS}s"
