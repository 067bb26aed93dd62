"""Threads against one thread, on a quiet machine and with one core kept busy by another process.

Issue 27 point 5: an artist's machine always has other load, and numba's parallel loops wait at every
barrier for the thread that shares its core with it. This times the CPU backend on the 100k freefall
and settled pile of bench_peers.py (same states, same physics: the paper's law, or with ``--law full`` the
add-on's default physics, as ``bench_peers.py --law full``) in four ways, each in a fresh process:

  * ``1 thread``      NUMBA_NUM_THREADS=1;
  * ``all, before``   every core, as before issue 27: the thread count forced
                      (``BackendCpu.adaptive_threads = False``) and OpenMP's default wait (spinning);
  * ``all, passive``  every core, forced, waiting threads sleep at once (``OMP_WAIT_POLICY=passive``:
                      the engine's wait from issue 27 to run 3);
  * ``all, fixed``    every core, forced, with the engine's wait (a short spin, then sleep:
                      ``engine.prefer_short_spin``);
  * ``all, chosen``   the backend's default: the engine's wait, and it steps on the cheaper of all
                      threads and one, measured as it runs (engine.backends.cpu_threads);

each on a quiet machine and while a competing process (``while True: pass``) keeps one core busy. Runs
are interleaved over the repeats; the table reports the best and the median. The machine these numbers
come from is shared: read the load averages stored with them.

    PYTHONPATH=. .venv/bin/python benchmarks/bench_threads.py --json benchmarks/results/threads_100k_run1.json
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

#: name → (threads: 1 or every core, adaptive thread choice, extra environment). 'before' is the
#: engine before issue 27: OpenMP's default wait (spinning), thread count fixed. A wait named in the
#: environment is left alone by the engine (engine.prefer_short_spin).
CONFIGS = {
    "1 thread": (1, False, {}),
    "all, before": (0, False, {"OMP_WAIT_POLICY": ""}),
    "all, passive": (0, False, {"OMP_WAIT_POLICY": "PASSIVE"}),
    "all, fixed": (0, False, {}),
    "all, chosen": (0, True, {}),
}
LOADS = ("quiet", "busy core")


def child(path: str, steps: int, adaptive: bool) -> dict:
    """In a fresh process: time ``steps`` steps of the state at ``path`` (first list build untimed)."""
    import numba

    from bench_peers import load_state
    from engine.backends.cpu import BackendCpu

    setup = load_state(Path(path))
    backend = BackendCpu(setup.model)
    backend.adaptive_threads = adaptive
    backend.set_state(setup.state)
    backend.step(3)  # compile and warm up
    backend.set_state(setup.state)
    backend.threads = None  # the choice starts afresh, as in a new bake
    backend.prepare()
    began = time.perf_counter()
    backend.step(steps)
    backend.get_state()
    seconds = time.perf_counter() - began
    chooser = backend.threads
    return {"ms_per_step": 1e3 * seconds / steps, "threads": numba.get_num_threads(),
            "steps_by_count": {str(k): v for k, v in (chooser.steps_by_count if chooser else {}).items()},
            "switches": chooser.switches if chooser else 0, "skipped": chooser.skipped if chooser else 0,
            "wait": {key: os.environ.get(key) for key in ("OMP_WAIT_POLICY", "GOMP_SPINCOUNT")}}


def run_child(path: Path, steps: int, config: str) -> dict:
    threads, adaptive, extra = CONFIGS[config]
    # The wait this process got from the engine (if it imported it) must not reach the child: each
    # configuration names its own or gets the engine's default.
    env = {key: value for key, value in os.environ.items() if key not in ("OMP_WAIT_POLICY", "GOMP_SPINCOUNT")}
    env.update(PYTHONPATH=str(ROOT), **extra)
    env["NUMBA_NUM_THREADS"] = str(threads or os.cpu_count())
    done = subprocess.run([sys.executable, __file__, "--child", str(path), "--steps", str(steps)]
                          + (["--adaptive"] if adaptive else []), capture_output=True, text=True, env=env)
    if done.returncode != 0:
        raise RuntimeError("benchmark child failed:\n" + done.stderr[-3000:])
    return json.loads(done.stdout.strip().splitlines()[-1])


def with_load(load: str, work):
    """Run ``work()`` with one core kept busy by a child process when ``load`` is 'busy core'."""
    if load == "quiet":
        return work()
    spinner = subprocess.Popen([sys.executable, "-c", "while True: pass"])
    try:
        time.sleep(0.2)  # let it take its core
        return work()
    finally:
        spinner.kill()
        spinner.wait()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--particles", type=int, default=100_000)
    parser.add_argument("--steps", type=int, default=300)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--states", nargs="*", default=["freefall", "pile"])
    parser.add_argument("--configs", nargs="*", default=list(CONFIGS), choices=list(CONFIGS))
    parser.add_argument("--law", choices=["paper", "full"], default="paper",
                        help="full: rotation, Verlet, static friction and rolling resistance (bench_peers.py)")
    parser.add_argument("--json", help="write the results here")
    parser.add_argument("--child", help=argparse.SUPPRESS)
    parser.add_argument("--adaptive", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print(json.dumps(child(args.child, args.steps, args.adaptive)))
        return
    from bench_peers import ensure_freefall, ensure_pile

    os.environ["MOCHI_BENCH_LAW"] = args.law  # the children build their scenes from it

    paths = {"freefall": ensure_freefall, "pile": ensure_pile}
    results = {"particles": args.particles, "steps": args.steps, "repeats": args.repeats, "law": args.law,
               "cores": os.cpu_count(),
               "load_average_before": list(os.getloadavg()), "runs": []}
    for state in args.states:
        path = paths[state](args.particles)
        for repeat in range(args.repeats):
            for load in LOADS:
                for config in args.configs:
                    run = with_load(load, lambda: run_child(path, args.steps, config))
                    run.update(state=state, load=load, config=config, repeat=repeat,
                               load_average=list(os.getloadavg()))
                    results["runs"].append(run)
                    print(f"{state:8s} {load:9s} {config:20s} {run['ms_per_step']:8.2f} ms/step "
                          f"{run['steps_by_count'] or ''}", flush=True)
    results["load_average_after"] = list(os.getloadavg())
    results["summary"] = summary(results["runs"])
    print(table(results["summary"]))
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=2) + "\n")


def summary(runs: list[dict]) -> list[dict]:
    """Best and median ms/step per (state, load, config), with the speed-up over 1 thread of each."""
    out = []
    keys = sorted({(r["state"], r["load"], r["config"]) for r in runs}, key=lambda k: (k[0], LOADS.index(k[1]),
                                                                                      list(CONFIGS).index(k[2])))
    for state, load, config in keys:
        times = [r["ms_per_step"] for r in runs if (r["state"], r["load"], r["config"]) == (state, load, config)]
        one = [r["ms_per_step"] for r in runs if (r["state"], r["load"], r["config"]) == (state, load, "1 thread")]
        row = {"state": state, "load": load, "config": config, "best_ms": min(times),
               "median_ms": statistics.median(times)}
        if one:
            row["speedup_best"] = min(one) / min(times)
            row["speedup_median"] = statistics.median(one) / statistics.median(times)
        out.append(row)
    return out


def table(rows: list[dict]) -> str:
    lines = ["| state | load | threads | best ms/step | median ms/step | × 1 thread (best / median) |",
             "| --- | --- | --- | --- | --- | --- |"]
    for r in rows:
        speed = f"{r['speedup_best']:.2f} / {r['speedup_median']:.2f}" if "speedup_best" in r else ""
        lines.append(f"| {r['state']} | {r['load']} | {r['config']} | {r['best_ms']:.2f} | {r['median_ms']:.2f} | "
                     f"{speed} |")
    return "\n".join(lines)


if __name__ == "__main__":
    main()
