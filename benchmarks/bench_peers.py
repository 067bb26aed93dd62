"""Mochi's CPU backend against LAMMPS and LIGGGHTS, per core, on the same states and physics.

States (deterministic, seed 1; grains of radius 5–6 mm, density 2500 kg/m³, in a closed box whose floor
grows with the particle count, 2 m tall):
  * freefall: grains at rest on random sites of a cubic lattice (spacing 2.2 r_max), no contacts;
  * pile: grains stacked from the floor up in each other's hollows (an fcc stack) and settled with
    Mochi (made once, cached as PLY under $MOCHI_BENCH_CACHE, default ~/.cache/mochi-bench).
Physics in every code (LAMMPS: engine/lammps/law.py; LIGGGHTS: benchmarks/peers/physics.py): Hooke normal
force k = 5000 N/m, damping of restitution e = 0.5 with Mochi's γ_n = 2β sqrt(m_eff k) (LAMMPS: ``damping
tsuji`` with its input chosen so that α = 2β, exact; LIGGGHTS: ``hooke/stiffness`` with gamman per
radius-type pair, within ``liggghts_damping_error``), no tangential force, the six box walls, gravity
9.81 m/s², dt 1e-4 s, the same neighbour skin (Mochi's first choice). Each code runs as one process on one
thread; the runs are interleaved (each repeat runs every code once, in rotating order) and the best repeat
is reported. A run also reports kinetic energy and grain–grain contact count after its last step, so the
table shows that the codes did the same work.

Also measured (Mochi only): 2-thread speed-up on the pile, cost per particle-step of the freefall from
10k to 1M particles, and the peak resident memory of a 1M-particle freefall.

    bash benchmarks/peers/setup.sh            # once: Debian's lammps and liggghts
    PYTHONPATH=. .venv/bin/python benchmarks/bench_peers.py --json benchmarks/results/peers_100k.json

Options: --steps (200), --repeats (3), --particles (100000), --skip-scaling, --skip-memory, --baseline REV
(also time the engine of git revision REV, interleaved, e.g. d20ae39 = before issue 19), --law full (the
add-on's default physics on the same states, with LAMMPS' ``pair granular hooke … tangential
linear_history … rolling sds`` and ``fix nve/sphere`` beside it; LIGGGHTS runs the paper's model only). The whole
default run takes 4.5–7 minutes on the shared 2-core machine (the first run adds ~3 minutes to settle
and cache the pile).
"""

from __future__ import annotations

import argparse
import inspect
import json
import os
import platform
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))
if os.environ.get("BENCH_ENGINE_ROOT"):  # a Mochi child timing another revision's engine (--baseline)
    sys.path.insert(0, os.environ["BENCH_ENGINE_ROOT"])

RADIUS = (0.005, 0.006)     # [m]
DENSITY = 2500.0            # [kg/m³]
STIFFNESS = 5000.0          # [N/m]: ~11 steps per grain–grain collision at dt 1e-4
DT = 1.0e-4                 # [s]
RESTITUTION = 0.5
HEIGHT = 2.0                # box height [m]
FLOOR_PER_100K = 0.5        # box floor side at 100k grains [m]; area scales with the count
SPACING = 2.2 * RADIUS[1]   # lattice spacing [m]
PILE_SETTLE_STEPS = 8000    # 0.8 s: the stack has compacted and rung down
CACHE = Path(os.environ.get("MOCHI_BENCH_CACHE", Path.home() / ".cache" / "mochi-bench"))
STATE_VERSION = 1           # bump when the recipe of a state changes


def box_side(particles: int) -> float:
    return FLOOR_PER_100K * float(np.sqrt(particles / 100_000))


#: ``--law full``: the add-on's default physics (rotation, velocity Verlet, static friction, rolling
#: resistance) instead of the paper's model; LAMMPS runs it beside Mochi (peers/lammps_input.py).
FULL_LAW = {"friction": 0.5, "rolling_friction": 0.1}


def make_setup(positions: np.ndarray, radius: np.ndarray, velocities: np.ndarray | None = None,
               law: str | None = None):
    """The benchmark's scene around a state (one material, closed box, constant gravity); ``law``
    "paper" or "full", by default from ``$MOCHI_BENCH_LAW`` (the parent passes it to its children)."""
    from engine.model import Domain, Gravity, Material
    from engine.scene import setup_from_arrays

    side = box_side(positions.shape[0])
    full = (law or os.environ.get("MOCHI_BENCH_LAW", "paper")) == "full"
    friction = FULL_LAW["friction"] if full else 0.0
    rolling = FULL_LAW["rolling_friction"] if full else 0.0
    return setup_from_arrays(
        positions=positions, radius=radius, velocities=velocities,
        materials=(Material(name="grain", density=DENSITY, restitution=RESTITUTION, friction=friction,
                            rolling_friction=rolling),),
        domain=Domain(lo=(0.0, 0.0, 0.0), hi=(side, HEIGHT, side), wall_restitution=RESTITUTION,
                      wall_friction=friction, wall_rolling_friction=rolling),
        gravity=Gravity(vector=(0.0, -9.81, 0.0)), dt=DT, stiffness=STIFFNESS, fps=25.0,
        friction_model="spring" if full else "damper", name="peers", rotation=full,
        integrator="verlet" if full else "euler")  # by default the paper's model, as the peers run it


def lattice(particles: int, rng: np.random.Generator) -> np.ndarray:
    """Centres of every lattice site of the box, layer by layer from the floor, (sites, 3)."""
    side = box_side(particles)
    nx = int(side / SPACING)
    ny = int(HEIGHT / SPACING)
    if nx * nx * ny < particles:
        raise SystemExit(f"the box holds only {nx * nx * ny} lattice sites, fewer than {particles}")
    iy, ix, iz = np.meshgrid(np.arange(ny), np.arange(nx), np.arange(nx), indexing="ij")
    return (np.stack([ix.ravel(), iy.ravel(), iz.ravel()], axis=1) + 0.5) * SPACING


def freefall_state(particles: int, seed: int = 1) -> tuple[np.ndarray, np.ndarray]:
    """(positions (n, 3) float32, radii (n,) float32): grains at rest on random lattice sites."""
    rng = np.random.default_rng(seed)
    sites = lattice(particles, rng)
    chosen = np.sort(rng.choice(sites.shape[0], particles, replace=False))
    radius = rng.uniform(*RADIUS, particles)
    return sites[chosen].astype(np.float32), radius.astype(np.float32)


def state_path(kind: str, particles: int) -> Path:
    return CACHE / f"{kind}_{particles}_v{STATE_VERSION}.ply"


def save_state(path: Path, positions, radius, velocities) -> None:
    from engine.ply import write_points

    path.parent.mkdir(parents=True, exist_ok=True)
    write_points(path, {"x": positions[:, 0], "y": positions[:, 1], "z": positions[:, 2], "radius": radius,
                        "vx": velocities[:, 0], "vy": velocities[:, 1], "vz": velocities[:, 2]})


def ensure_freefall(particles: int) -> Path:
    path = state_path("freefall", particles)
    if not path.exists():
        positions, radius = freefall_state(particles)
        save_state(path, positions, radius, np.zeros_like(positions))
    return path


def stacked_sites(particles: int) -> np.ndarray:
    """The lowest ``particles`` sites of square layers stacked in each other's hollows (an fcc
    stack, stable without friction), spaced so that even the largest grains start apart."""
    side = box_side(particles)
    a = SPACING
    rise = float(np.sqrt((2.0 * RADIUS[1]) ** 2 - 0.5 * a * a)) + 0.05 * RADIUS[1]
    sites = []
    y = RADIUS[1] * 1.05
    layer = 0
    while sum(s.shape[0] for s in sites) < particles:
        shift = 0.5 * a * (layer % 2)
        coords = np.arange(0.5 * a + shift, side - 0.5 * a + 1e-12, a)
        gx, gz = np.meshgrid(coords, coords, indexing="ij")
        sites.append(np.stack([gx.ravel(), np.full(gx.size, y), gz.ravel()], axis=1))
        y += rise
        layer += 1
    return np.concatenate(sites)[:particles]


def ensure_pile(particles: int) -> Path:
    """The settled pile: the grains on ``stacked_sites``, settled with Mochi's CPU backend for
    PILE_SETTLE_STEPS steps."""
    path = state_path("pile", particles)
    if path.exists():
        return path
    from engine.backends.cpu import BackendCpu

    rng = np.random.default_rng(2)
    sites = stacked_sites(particles)
    radius = rng.uniform(*RADIUS, particles).astype(np.float32)
    setup = make_setup(sites.astype(np.float32), radius, law="paper")  # the state is the same for both laws
    backend = BackendCpu(setup.model)
    backend.set_state(setup.state)
    began = time.perf_counter()
    for chunk in range(PILE_SETTLE_STEPS // 500):
        backend.step(500)
        state = backend.get_state()
        print(f"  settling the pile: step {(chunk + 1) * 500}, kinetic energy "
              f"{kinetic_energy(setup.model.mass, state.velocities):.3g} J ({time.perf_counter() - began:.0f} s)",
              flush=True)
    state = backend.get_state()
    save_state(path, state.positions, radius, state.velocities)
    return path


def load_state(path: Path):
    from engine.ply import read_particles

    positions, radius, velocities = read_particles(path)
    return make_setup(positions, radius, velocities)


def kinetic_energy(mass: np.ndarray, velocities: np.ndarray) -> float:
    return 0.5 * float((np.asarray(mass, np.float64) * (velocities.astype(np.float64) ** 2).sum(axis=1)).sum())


# --- one run of each code ---------------------------------------------------------------------------


def mochi_child(path: str, steps: int) -> dict:
    """In a child process (thread count from NUMBA_NUM_THREADS): time ``steps`` steps of the state."""
    import numba

    from engine.backends.cpu import BackendCpu
    from engine.benchmark import run_benchmark

    setup = load_state(Path(path))
    # The first list build is setup, outside the timed loop, as in the peers' "Loop time" (their
    # "Neighbor list builds" count only the builds during the run, as Mochi's "rebuilds" then do).
    # An engine from before Backend.prepare (--baseline) times it inside.
    untimed = "untimed_setup" in inspect.signature(run_benchmark).parameters
    result = run_benchmark(setup, backend="cpu", steps=steps, warmup=3, **({"untimed_setup": True} if untimed else {}))
    # The same steps again for what they leave behind (run_benchmark keeps its backend to itself).
    backend = BackendCpu(setup.model)
    backend.set_state(setup.state)
    backend.step(1)
    skin = backend.neighbors.skin
    backend.set_state(setup.state)
    if untimed:
        backend.prepare()
    wall, cpu = time.perf_counter(), time.process_time()
    backend.step(steps)
    final = backend.get_state()
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    keep = ("ms_per_step", "build_ms_per_step", "detect_ms_per_step", "update_ms_per_step", "fused_ms_per_step",
            "rebuilds", "particles", "steps", "backend")
    out = {key: result[key] for key in keep if key in result}
    out["untimed_setup"] = untimed
    # CPU time of the same steps again: what a loaded machine's waiting does not inflate.
    out.update(cpu_ms_per_step=1e3 * cpu / steps, cpu_share=cpu / wall / numba.get_num_threads())
    out.update(threads=numba.get_num_threads(), skin=skin, kinetic_energy=kinetic_energy(setup.model.mass, final.velocities),
               contacts=int(backend.contact_pairs().shape[0]), list_entries=backend.neighbors.pair_count)
    return out


def baseline_engine(revision: str) -> Path:
    """This repository's engine/ at ``revision``, extracted once under the cache (its numba cache too)."""
    commit = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "--short=12", revision], capture_output=True,
                            text=True, check=True).stdout.strip()
    folder = CACHE / f"engine-{commit}"
    if not (folder / "engine").exists():
        folder.mkdir(parents=True, exist_ok=True)
        archive = subprocess.run(["git", "-C", str(ROOT), "archive", commit, "engine"], capture_output=True, check=True)
        subprocess.run(["tar", "-x", "-C", str(folder)], input=archive.stdout, check=True)
    return folder


def run_mochi(path: Path, steps: int, threads: int = 1, engine_root: Path | None = None) -> dict:
    env = dict(os.environ, NUMBA_NUM_THREADS=str(threads), PYTHONPATH=str(ROOT))
    if engine_root is not None:
        env["BENCH_ENGINE_ROOT"] = str(engine_root)
    done = subprocess.run([sys.executable, __file__, "--mochi-child", str(path), "--steps", str(steps)],
                          capture_output=True, text=True, env=env, check=False)
    if done.returncode != 0:
        raise RuntimeError("Mochi child failed:\n" + done.stderr[-3000:])
    return json.loads(done.stdout.strip().splitlines()[-1])


def run_peer_on(name: str, path: Path, steps: int, skin: float) -> dict:
    from peers.lammps_input import write_lammps_run
    from peers.liggghts_input import write_liggghts_run
    from peers.runner import run_peer

    setup = load_state(path)
    s = setup.state
    extra = {}
    with tempfile.TemporaryDirectory(prefix=f"mochi-{name}-") as folder:
        if name == "lammps":
            script = write_lammps_run(folder, setup.model, s.positions, s.velocities, steps=steps, skin=skin)
        else:
            script, error = write_liggghts_run(folder, setup.model, s.positions, s.velocities, steps=steps, skin=skin)
            extra["liggghts_damping_error"] = error
        run = run_peer(name, script, folder)
    columns, rows = run.thermo[-1]
    # LAMMPS heads the columns c_ke / v_contacts, LIGGGHTS ke / contacts.
    last = {name.split("_", 1)[-1] if name[:2] in ("c_", "v_") else name: value
            for name, value in zip(columns, rows[-1])}
    neighbours = [line for line in run.log.splitlines() if line.startswith(("Neighbor list builds", "Total # of neighbors"))]
    # LAMMPS prints the CPU share of the loop ("99.1% CPU use"); LIGGGHTS 3.8 does not.
    share = re.findall(r"([0-9.]+)% CPU use", run.log)
    cpu = 1e3 * run.loop_s[-1] * float(share[-1]) / 100 / steps if share else None
    return {"ms_per_step": 1e3 * run.loop_s[-1] / steps, "cpu_ms_per_step": cpu, "steps": steps,
            "particles": int(last["Atoms"]),
            "kinetic_energy": last["ke"], "contacts": int(round(last["contacts"])), "skin": skin,
            "neighbour_lines": neighbours, "wall_s": run.wall_s, **extra}


# --- the measurements ---------------------------------------------------------------------------------


def compare_state(kind: str, path: Path, steps: int, repeats: int, peers: list[str],
                  baseline: Path | None = None) -> dict:
    runs: dict[str, list[dict]] = {"mochi": [], **({"mochi_baseline": []} if baseline else {}),
                                   **{p: [] for p in peers}}
    codes = list(runs)
    skin = None
    for r in range(repeats):
        order = codes[r % len(codes):] + codes[:r % len(codes)]
        if skin is None:  # the peers take Mochi's skin: Mochi goes first once
            order = ["mochi"] + [c for c in order if c != "mochi"]
        for code in order:
            began = time.perf_counter()
            if code == "mochi":
                result = run_mochi(path, steps)
                skin = result["skin"]
            elif code == "mochi_baseline":
                result = run_mochi(path, steps, engine_root=baseline)
            else:
                result = run_peer_on(code, path, steps, skin)
            runs[code].append(result)
            print(f"  {kind} repeat {r + 1}: {code} {result['ms_per_step']:.2f} ms/step, KE "
                  f"{result['kinetic_energy']:.4g} J, {result['contacts']} contacts "
                  f"({time.perf_counter() - began:.0f} s wall)", flush=True)
    best = {code: min(rs, key=lambda x: x["ms_per_step"]) for code, rs in runs.items()}
    return {"state": kind, "path": str(path), "runs": runs, "best": best,
            "speedup": {p: best[p]["ms_per_step"] / best["mochi"]["ms_per_step"] for p in list(runs)[1:]}}


def scaling(counts: list[int], steps: int) -> list[dict]:
    rows = []
    for n in counts:
        result = run_mochi(ensure_freefall(n), steps)
        result["ns_per_particle_step"] = 1e6 * result["ms_per_step"] / n
        rows.append(result)
        print(f"  freefall {n}: {result['ms_per_step']:.2f} ms/step, {result['ns_per_particle_step']:.1f} ns per "
              f"particle-step", flush=True)
    return rows


def peak_memory(particles: int, steps: int = 20) -> float:
    """Peak resident memory [MB] of a child process loading and stepping a freefall state."""
    path = ensure_freefall(particles)
    code = (f"import resource, sys; sys.path.insert(0, {str(ROOT / 'benchmarks')!r}); import bench_peers as b;"
            "from engine.backends.cpu import BackendCpu;"
            f"s = b.load_state(b.Path({str(path)!r})); k = BackendCpu(s.model); k.set_state(s.state); k.step({steps});"
            "print(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024)")
    env = dict(os.environ, NUMBA_NUM_THREADS="1", PYTHONPATH=str(ROOT))
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, env=env)
    return float(out.stdout.strip().splitlines()[-1])


def load_average() -> list[float]:
    return list(os.getloadavg())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--particles", type=int, default=100_000)
    parser.add_argument("--steps", type=int, default=200)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--states", nargs="*", default=["freefall", "pile"])
    parser.add_argument("--peers", nargs="*", default=["lammps", "liggghts"], choices=["lammps", "liggghts"])
    parser.add_argument("--skip-scaling", action="store_true")
    parser.add_argument("--skip-memory", action="store_true")
    parser.add_argument("--baseline", help="also time the engine of this git revision (e.g. the commit before "
                                           "a change), interleaved like a peer")
    parser.add_argument("--law", choices=["paper", "full"], default="paper",
                        help="full: the add-on's default physics (rotation, Verlet, friction 0.5 with a "
                             "tangential spring, rolling resistance 0.1), beside LAMMPS only")
    parser.add_argument("--json", help="write all results here")
    parser.add_argument("--mochi-child", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.mochi_child:
        print(json.dumps(mochi_child(args.mochi_child, args.steps)))
        return
    if args.law == "full":
        if "liggghts" in args.peers:
            print("--law full runs LAMMPS beside Mochi; no LIGGGHTS input is written for the full law.")
        args.peers = [p for p in args.peers if p == "lammps"]
        os.environ["MOCHI_BENCH_LAW"] = "full"  # the children build their scenes from it
    from peers.runner import PeerMissing, find_peer

    try:
        for name in args.peers:
            find_peer(name)
    except PeerMissing as missing:
        raise SystemExit(str(missing))  # one sentence, exit status 1
    result = {"machine": platform.processor() or platform.machine(), "cpu_count": os.cpu_count(),
              "load_before": load_average(), "argv": sys.argv[1:], "python": sys.version, "law": args.law}
    paths = {"freefall": ensure_freefall(args.particles), "pile": ensure_pile(args.particles)}
    baseline = baseline_engine(args.baseline) if args.baseline else None
    result["baseline"] = args.baseline
    result["states"] = [compare_state(kind, paths[kind], args.steps, args.repeats, args.peers, baseline)
                        for kind in args.states]
    if "pile" in args.states:
        two = min((run_mochi(paths["pile"], args.steps, threads=2) for _ in range(args.repeats)),
                  key=lambda x: x["ms_per_step"])
        one = next(s for s in result["states"] if s["state"] == "pile")["best"]["mochi"]
        result["threads_2_pile"] = {"run": two, "speedup": one["ms_per_step"] / two["ms_per_step"]}
        print(f"  pile on 2 threads: {two['ms_per_step']:.2f} ms/step, {result['threads_2_pile']['speedup']:.2f}× "
              f"one thread", flush=True)
    if not args.skip_scaling:
        result["scaling"] = scaling([10_000, 100_000, 1_000_000], 100)
    if not args.skip_memory:
        result["peak_rss_mb_1m"] = peak_memory(1_000_000)
        print(f"  peak resident memory, 1M freefall, 20 steps: {result['peak_rss_mb_1m']:.0f} MB", flush=True)
    result["load_after"] = load_average()
    print(f"\n{args.particles:,} particles, {args.steps} steps, best of {args.repeats} interleaved repeats, 1 thread/"
          f"process; load average before {result['load_before'][0]:.2f}, after {result['load_after'][0]:.2f}\n")
    others = (["mochi_baseline"] if args.baseline else []) + args.peers
    print("| state | Mochi ms/step | " + " | ".join(f"{p} ms/step" for p in others) + " | KE after [J] (Mochi / "
          + " / ".join(others) + ") | contacts after |")
    print("| --- " * (3 + len(others)) + "| --- |")
    for s in result["states"]:
        b = s["best"]
        cells = " | ".join(f"{b[p]['ms_per_step']:.2f} (Mochi {s['speedup'][p]:.2f}×)" for p in others)
        ke = " / ".join(f"{b[c]['kinetic_energy']:.4g}" for c in ["mochi"] + others)
        contacts = " / ".join(str(b[c]["contacts"]) for c in ["mochi"] + others)
        print(f"| {s['state']} | {b['mochi']['ms_per_step']:.2f} | {cells} | {ke} | {contacts} |")
    if args.json:
        Path(args.json).write_text(json.dumps(result, indent=1, default=str))


if __name__ == "__main__":
    main()
