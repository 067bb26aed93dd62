# Device run: install carried wheels, GPU tests, benchmark, slow tests; logs to $OUT.
set -o pipefail
python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .whl/*.whl || exit 1
export PYTHONPATH=/tmp/site:$PWD PYTHONUNBUFFERED=1 MOCHI_KERNEL_CACHE=/tmp/mochi_kernels
{ nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader; python3 -c "import cupy, numba; print('cupy', cupy.__version__, 'numba', numba.__version__)"; } 2>&1 | tee $OUT/device.txt
timeout ${T_FAST:-200} python3 -m pytest -p no:cacheprovider tests/gpu -m "not slow" -q -rs --maxfail=25 2>&1 | tee $OUT/tests_fast.log | tail -40
timeout ${T_BENCH:-200} python3 benchmarks/bench_gpu.py --particles ${BENCH_N:-1000000} --steps 200 --out $OUT/bench.json $BENCH_ARGS 2>&1 | tee $OUT/bench.log | tail -25
timeout ${T_SLOW:-200} python3 -m pytest -p no:cacheprovider tests/gpu -m slow -q -rs --maxfail=10 2>&1 | tee $OUT/tests_slow.log | tail -25
