# Issue 9 device run: wheels, fast GPU tests, the preset benchmarks against the Taichi CUDA peer, slow
# GPU tests as time allows. Everything is logged under $OUT (at most 8 files). Needs, carried:
# .whl (wheels) and out/ with the bunny states: python benchmarks/bench_gpu.py --presets bunnies_14@native
# bunny_drop@1000000 --write-states out   (here, where trimesh is). Run: bash .whl/run_bench.sh
set -o pipefail
BUDGET=${BUDGET:-515}
left() { echo $(( BUDGET - SECONDS )); }
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
export PYTHONPATH=/tmp/site:$PWD PYTHONUNBUFFERED=1 MOCHI_KERNEL_CACHE=/tmp/mochi_kernels TI_DEVICE_MEMORY_GB=12
{ nvidia-smi; nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.sm,clocks.max.sm,temperature.gpu,power.draw --format=csv
  python3 -c "import cupy, numba, taichi; print('cupy', cupy.__version__, 'numba', numba.__version__, 'taichi', taichi.__version__)"; nproc; } > $OUT/device.txt 2>&1
echo "== install done at ${SECONDS}s"
timeout 130 python3 -m pytest -p no:cacheprovider tests/gpu -m "not slow" -q -rs > $OUT/tests_fast.log 2>&1; echo "rc=$? at ${SECONDS}s" >> $OUT/tests_fast.log
tail -15 $OUT/tests_fast.log
timeout $(( $(left) - 110 )) python3 benchmarks/bench_gpu.py \
  --presets freefall@1000000,2000000,5000000 rotating_gravity changing_radii_small changing_radii_large \
  bunnies_14@native bunny_drop@native --state bunnies_14=out/bunnies_14_native.npz \
  --state bunny_drop=out/bunny_drop_1000000.npz --steps 150 --warmup 10 --repeats 3 --repeats-large 2 \
  --late --taichi-spring-too --sweep 1 2 5 10 20 50 100 --profile --out $OUT/bench_gpu.json > $OUT/bench.log 2>&1
echo "bench rc=$? at ${SECONDS}s" | tee -a $OUT/bench.log
sed -n '/^| scene/,$p' $OUT/bench.log | cut -c1-200
if [ $(left) -gt 75 ]; then timeout 60 python3 benchmarks/bench_colliders.py --particles 1000000 --steps 100 --backends cuda,optix \
  --json $OUT/bench_colliders.json > $OUT/colliders.log 2>&1; echo "colliders rc=$? at ${SECONDS}s" | tee -a $OUT/colliders.log; tail -6 $OUT/colliders.log; fi
T=$(( $(left) - 5 ))
if [ $T -gt 30 ]; then timeout $T python3 -m pytest -p no:cacheprovider tests/gpu -m slow -q -rs -x > $OUT/tests_slow.log 2>&1; echo "rc=$? at ${SECONDS}s" >> $OUT/tests_slow.log; tail -5 $OUT/tests_slow.log; fi
echo "== done at ${SECONDS}s"
