#!/usr/bin/env bash
# The device run, one command on a lent GPU machine (repository root; see benchmarks/device/README.md):
#   bash benchmarks/device/run.sh      (with the ignored folders .whl, .gl and out copied beside it;
#                                       it fits in 10 minutes; results land in $OUT)
# 1. installs the carried cp312 wheels in .whl/ (pyoptix-contrib built for OptiX 9.0, slangpy and taichi
#    shrunk by benchmarks/device/pack_wheels.py, dill, plyfile, tqdm, trimesh, msgspec, tomli-w) into
#    /tmp/site, and the Vulkan loader from .gl/ where the image has none;
# 2. records the device and which backends start, with the reason for those that do not, the OptiX
#    self-check that 'auto' runs, and the rt backend's devices (Vulkan, CUDA);
# 3. the GPU tests that are not slow, and the rt tests on the GPU's own Vulkan driver;
# 4. the rt backend on Vulkan and on CUDA (slangpy) beside the CUDA grid, OptiX and the Taichi peer on the
#    same states, at the sizes its host round trips allow: $OUT/gpu_<day>_<gpu>_rt.json;
# 5. benchmarks/bench_gpu.py over the paper's presets on cuda and optix beside the Taichi CUDA peer, with
#    the rebuild-interval sweep: $OUT/gpu_<day>_<gpu>.json;
# 6. the collider benchmark ($OUT/colliders_gpu.json) and the slow GPU tests as time allows;
# 7. the GPU section of docs/benchmarks.md rendered from the new JSON ($OUT/benchmarks.md).
# Every JSON is rewritten after each row, so a run cut short keeps what it measured. At most 8 files come
# back from $OUT, so every log goes, section after section, into the one $OUT/run.log.
# Afterwards, here: copy gpu_*.json into benchmarks/results/ and run python benchmarks/make_gpu_doc.py.
# Needs out/ with the bunny states, made where trimesh is:
#   .venv/bin/python benchmarks/bench_gpu.py --presets bunnies_14@native bunny_drop@1000000 --write-states out
set -o pipefail
BUDGET=${BUDGET:-580}
left() { echo $(( BUDGET - SECONDS )); }
OUT=${OUT:-/tmp/mochi_device_out}
LOGS=/tmp/mochi_device_logs
mkdir -p "$OUT" "$LOGS"
LOG="$OUT/run.log"
# section NAME: appends $LOGS/NAME.log to run.log under a heading, and prints its end.
section() { { echo; echo "===== $1 (at ${SECONDS}s)"; cat "$LOGS/$1.log"; } >> "$LOG"; tail -"${2:-8}" "$LOGS/$1.log"; }
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
# The rt backend's Vulkan device needs the loader (libvulkan.so.1) and the NVIDIA driver's ICD file.
if ! ldconfig -p | grep -q libvulkan.so.1 && [ -d .gl ]; then for f in .gl/*.deb; do dpkg -x "$f" /; done; ldconfig; fi
NVIDIA_ICD=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
if [ -e "$NVIDIA_ICD" ] && ! ls /usr/share/vulkan/icd.d/nvidia* /etc/vulkan/icd.d/nvidia* >/dev/null 2>&1; then
  export VK_DRIVER_FILES=$NVIDIA_ICD
fi
export PYTHONPATH=/tmp/site:$PWD PYTHONUNBUFFERED=1 MOCHI_KERNEL_CACHE=/tmp/mochi_kernels TI_DEVICE_MEMORY_GB=12
GPU=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1 | tr -c 'A-Za-z0-9\n' '_' | tr -s '_' | sed 's/_$//')
RESULT="$OUT/gpu_$(date -u +%Y%m%d)_${GPU:-unknown}.json"
{ nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm --format=csv
  python3 -c "import cupy, numba; print('cupy', cupy.__version__, 'numba', numba.__version__)"; nproc
  ldconfig -p | grep libvulkan; echo "VK_DRIVER_FILES=${VK_DRIVER_FILES:-}"; } > "$LOGS/device.log" 2>&1
section device 20
timeout 90 python3 - > "$LOGS/backends.log" 2>&1 <<'PY'
from engine.backends.select import choose_backend_name, probe_backends
for name, ok, text in probe_backends():
    print(f"{name}: {'available' if ok else 'unavailable'}: {text}")
print("auto ->", choose_backend_name(log=print))
from engine.backends.optix_self_check import run_self_check
print("optix self-check:", run_self_check())
from engine.backends.rt_device import open_rt_device
for kind in ("vulkan", "cuda"):
    try:
        rt = open_rt_device(kind)
        print(f"rt:{kind}: available: {rt.describe()}")
        rt.device.close()
    except Exception as exc:
        print(f"rt:{kind}: unavailable: {exc}")
PY
section backends 20
echo "== set up at ${SECONDS}s"
timeout 150 python3 -m pytest -p no:cacheprovider -p no:pytest-blender tests/gpu -m "not slow" -q -rs > "$LOGS/tests_fast.log" 2>&1
echo "rc=$? at ${SECONDS}s" >> "$LOGS/tests_fast.log"; section tests_fast 15
timeout 90 python3 -m pytest -p no:cacheprovider -p no:pytest-blender tests/engine/test_rt_detect.py \
  tests/engine/test_rt_backend.py -q -rs -x > "$LOGS/tests_rt.log" 2>&1
echo "rc=$? at ${SECONDS}s" >> "$LOGS/tests_rt.log"; section tests_rt 6
# The rt backend reads the positions back and builds its pair rows on the host every step (docs/rt.md):
# fewer steps and sizes than the device-resident backends, every backend on the same states.
timeout 120 python3 benchmarks/bench_gpu.py --backends rt:vulkan,rt:cuda,cuda,optix \
  --presets freefall@100000,1000000 --steps 20 --warmup 2 --repeats 1 --late --late-max-particles 100000 \
  --out "${RESULT%.json}_rt.json" > "$LOGS/bench_rt.log" 2>&1
echo "bench rt rc=$? at ${SECONDS}s" >> "$LOGS/bench_rt.log"; section bench_rt 1
sed -n '/^| scene/,$p' "$LOGS/bench_rt.log" | cut -c1-200
timeout $(( $(left) - 150 )) python3 benchmarks/bench_gpu.py --backends cuda,optix \
  --presets freefall@1000000,2000000,5000000 rotating_gravity changing_radii_small changing_radii_large \
  bunnies_14@native bunny_drop@native --state bunnies_14=out/bunnies_14_native.npz \
  --state bunny_drop=out/bunny_drop_1000000.npz --steps 150 --warmup 10 --repeats 3 --repeats-large 2 \
  --late --sweep 1 2 5 10 20 50 100 --out "$RESULT" > "$LOGS/bench.log" 2>&1
echo "bench rc=$? at ${SECONDS}s" >> "$LOGS/bench.log"; section bench 1
sed -n '/^| scene/,$p' "$LOGS/bench.log" | cut -c1-200
if [ "$(left)" -gt 90 ]; then
  timeout 70 python3 benchmarks/bench_colliders.py --particles 1000000 --steps 100 --backends cuda,optix \
    --json "$OUT/colliders_gpu.json" > "$LOGS/colliders.log" 2>&1
  echo "colliders rc=$? at ${SECONDS}s" >> "$LOGS/colliders.log"; section colliders 6
fi
cp docs/benchmarks.md "$OUT/benchmarks.md"
python3 benchmarks/make_gpu_doc.py --results "$OUT" --doc "$OUT/benchmarks.md" || echo "doc rendering failed"
T=$(( $(left) - 5 ))
if [ $T -gt 30 ]; then
  timeout $T python3 -m pytest -p no:cacheprovider -p no:pytest-blender tests/gpu -m slow -q -rs -x > "$LOGS/tests_slow.log" 2>&1
  echo "rc=$? at ${SECONDS}s" >> "$LOGS/tests_slow.log"; section tests_slow 5
fi
echo "== done at ${SECONDS}s"
