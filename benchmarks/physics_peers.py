"""Issue 16 validation: Mochi's rotation, rolling resistance and integrator against LAMMPS on the same states.

Each case starts Mochi and LAMMPS from one state (``engine/lammps/data_file.py``): ~2,500 slightly
polydisperse grains on a jittered lattice with random velocities in a closed box, settled under
gravity with the same Hooke spring, restitution damping, tangential spring, rolling spring and walls.
The same estimator then reads both final states: packing fraction and coordination in the bed's core
(away from the walls and the free surface) and bed height.

Cases:
- ``no_rotation``: Mochi's paper model (rotation off, Euler) vs LAMMPS ``fix nve`` (ω never integrated).
- ``frictional``: μ = 0.5, rotating (Mochi Verlet) vs LAMMPS ``fix nve/sphere``.
- ``rolling``: the same plus rolling resistance μ_r = 0.3 (LAMMPS ``rolling sds``).
- ``energy``: an elastic, frictionless gas without gravity: drift of the total energy (kinetic plus the
  elastic ½kδ² of every overlap, from the states every 1,000 steps) over 20,000 steps at 10 steps per
  contact, Mochi Euler, Mochi Verlet and LAMMPS (velocity Verlet).

Run: ``PYTHONPATH=. python benchmarks/physics_peers.py [--particles 2000] [--cases ...]`` → JSON in
benchmarks/results/physics_peers.json and a Markdown table on stdout (docs/physics.md).

LAMMPS parameters that match Mochi's law: ``hooke k e'`` with ``damping tsuji`` and e' chosen so that
LAMMPS' α(e') √(m_eff k) is Mochi's γ_n = 2β(e)√(m_eff k) (the Debian LAMMPS of 2021 has no
``coeff_restitution`` damping; elastic runs use ``damping velocity`` with η = 0), ``tangential linear_history 2/7k √(2/7) μ`` (γ_t = √(2/7) γ_n, Mochi's
2β√(m_eff k_t)), ``rolling sds 2/7k γ_r μ_r`` with γ_r Mochi's rolling damping for the mean pair mass
(LAMMPS' γ_r is a constant, Mochi's scales with √m_eff: equal for equal grains). Known differences:
LAMMPS caps friction with |F_n| including damping, Mochi with max(f_n, 0).
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from engine.lammps.data_file import write_sphere_data  # noqa: E402
from engine.lammps.deck import setup_lines  # noqa: E402
from engine.lammps.law import LawLammps, hooke_coeffs  # noqa: E402
from benchmarks.peers.runner import run_peer  # noqa: E402

RADIUS = 0.0025        # mean grain radius [m] (±8 %)
DENSITY = 2500.0       # [kg/m³]
STIFFNESS = 2.0e3      # [N/m]
RESTITUTION = 0.5
DT = 4.0e-5            # [s]: ~16 steps per contact
SIDE = 0.06            # box side [m]: 12 diameters
HEIGHT = 0.25          # box height [m]
SETTLE_STEPS = 20000   # 0.8 s


def initial_state(count: int, seed: int = 1):
    """Jittered lattice with random velocities: (positions (n, 3), radii (n,), velocities (n, 3))."""
    rng = np.random.default_rng(seed)
    spacing = 2.3 * RADIUS * 1.08
    per_side = int(SIDE / spacing)
    layers = math.ceil(count / per_side ** 2)
    grid = np.stack(np.meshgrid(np.arange(per_side), np.arange(per_side), np.arange(layers), indexing="ij"),
                    -1).reshape(-1, 3)[:count]
    positions = (grid + 0.5) * spacing + rng.uniform(-0.05, 0.05, (count, 3)) * spacing
    radii = RADIUS * rng.uniform(0.92, 1.08, count)
    velocities = rng.normal(0.0, 0.3, (count, 3))
    return positions.astype(np.float32), radii.astype(np.float32), velocities.astype(np.float32)


def mean_pair_mass(radii) -> float:
    """m_eff [kg] of a pair of mean grains: LAMMPS' sds rolling damping is one constant, taken there
    (engine.lammps.law)."""
    mass = DENSITY * 4.0 / 3.0 * math.pi * float(np.mean(np.asarray(radii, np.float64) ** 3))
    return 0.5 * mass


def run_mochi(positions, radii, velocities, *, friction, rolling, rotation, integrator, gravity, steps,
              restitution=RESTITUTION, energy_every=0, dt=DT):
    from engine.backends.cpu import BackendCpu
    from engine.model import Domain, Gravity, Material
    from engine.scene import setup_from_arrays

    material = Material(density=DENSITY, restitution=restitution, friction=friction, rolling_friction=rolling)
    domain = Domain(lo=(0, 0, 0), hi=(SIDE, SIDE, HEIGHT), wall_restitution=restitution, wall_friction=friction,
                    wall_rolling_friction=rolling)
    setup = setup_from_arrays(positions=positions, radius=radii, velocities=velocities, materials=(material,),
                              domain=domain, gravity=Gravity(vector=gravity), dt=dt, stiffness=STIFFNESS,
                              rotation=rotation, integrator=integrator)
    backend = BackendCpu(setup.model)
    backend.set_state(setup.state)
    energies = [total_energy(*_arrays(setup.model, backend.get_state()))] if energy_every else []
    began = time.perf_counter()
    chunk = energy_every or steps
    for _ in range(steps // chunk):
        backend.step(chunk)
        if energy_every:
            energies.append(total_energy(*_arrays(setup.model, backend.get_state())))
    elapsed = time.perf_counter() - began
    state = backend.get_state()
    return state.positions.astype(np.float64), setup.model.radius.astype(np.float64), energies, elapsed


def _arrays(model, state):
    return (state.positions.astype(np.float64), model.radius.astype(np.float64), state.velocities.astype(np.float64),
            state.angular_velocities.astype(np.float64))


def total_energy(positions, radii, velocities, omega) -> float:
    """Kinetic (translation + rotation) plus the elastic energy ½ k δ² of every grain–grain and
    grain–wall overlap [J]: what an elastic, frictionless system conserves."""
    from scipy.spatial import cKDTree

    mass = DENSITY * 4.0 / 3.0 * math.pi * radii ** 3
    energy = (0.5 * mass * (velocities ** 2).sum(1)).sum() + (0.2 * mass * radii ** 2 * (omega ** 2).sum(1)).sum()
    pairs = cKDTree(positions).query_pairs(2.0 * radii.max(), output_type="ndarray")
    if len(pairs):
        d = np.linalg.norm(positions[pairs[:, 0]] - positions[pairs[:, 1]], axis=1)
        overlap = np.maximum(radii[pairs[:, 0]] + radii[pairs[:, 1]] - d, 0.0)
        energy += 0.5 * STIFFNESS * (overlap ** 2).sum()
    hi = np.array([SIDE, SIDE, HEIGHT])
    walls = np.maximum(radii[:, None] - positions, 0.0) ** 2 + np.maximum(radii[:, None] - (hi - positions), 0.0) ** 2
    return float(energy + 0.5 * STIFFNESS * walls.sum())


def granular_model(*, friction, rolling, pair_mass, restitution=RESTITUTION) -> str:
    """LAMMPS ``pair granular`` model of Mochi's full law (engine.lammps.law): Hooke normal force damped to
    ``restitution``, the tangential spring with friction, SDS rolling resistance at ``pair_mass`` [kg]."""
    from engine.contact_law import damping_ratio

    return hooke_coeffs(STIFFNESS, damping_ratio(restitution), friction=friction, rolling=rolling, m_eff=pair_mass)


def granular_box_lines(model: str, *, dt: float, hi: tuple, rotation: bool, gravity=(0.0, 0.0, 0.0)) -> str:
    """The input's common part (engine.lammps.deck): spheres read from data.txt, ``model`` between grains and
    on the walls x, y, z = 0 … ``hi`` (a bound of None leaves that side open), the integrator, gravity."""
    law = LawLammps(pair_coeffs={(1, 1): model}, wall_coeffs=(model,), rotation=rotation, dt=dt,
                    gravity=tuple(gravity), lo=(0.0, 0.0, 0.0), hi=tuple(hi))
    return setup_lines(law, data_name="data.txt", skin=0.4 * RADIUS)


def lammps_script(*, friction, rolling, pair_mass, rotation, gravity, steps, restitution=RESTITUTION,
                  energy_every=0, dt=DT) -> str:
    model = granular_model(friction=friction, rolling=rolling, pair_mass=pair_mass, restitution=restitution)
    lines = [granular_box_lines(model, dt=dt, hi=(SIDE, SIDE, HEIGHT), rotation=rotation, gravity=gravity)]
    if energy_every:
        lines += [f"dump trajectory all custom {energy_every} traj.dump id radius x y z vx vy vz omegax omegay omegaz",
                  "dump_modify trajectory sort id format float %.12g"]
    lines += ["compute rke all erotate/sphere", "thermo_style custom step ke c_rke",
              f"thermo {energy_every or steps}", "thermo_modify norm no", f"run {steps}",
              "write_dump all custom final.dump id radius x y z modify sort id"]
    return "\n".join(lines) + "\n"


def run_lammps(positions, radii, velocities, folder: Path, **kwargs):
    folder.mkdir(parents=True, exist_ok=True)
    write_sphere_data(folder / "data.txt", positions, radii, np.full(len(radii), DENSITY), (0, 0, 0),
                      (SIDE, SIDE, HEIGHT), velocities=velocities)
    run = run_peer("lammps", lammps_script(**kwargs), folder, threads=1)
    rows = np.loadtxt(folder / "final.dump", skiprows=9)
    energies = []
    if kwargs.get("energy_every"):
        count = len(radii)
        lines = (folder / "traj.dump").read_text().splitlines()
        for start in range(0, len(lines), count + 9):
            frame = np.array([[float(v) for v in line.split()] for line in lines[start + 9:start + 9 + count]])
            energies.append(total_energy(frame[:, 2:5], frame[:, 1], frame[:, 5:8], frame[:, 8:11]))
    return rows[:, 2:5], rows[:, 1], energies, run.loop_s[-1] if run.loop_s else run.wall_s


def bed_metrics(positions, radii) -> dict:
    """Packing fraction and mean coordination in the core of the bed, and the bed height.

    Core: centres at least 2 mean diameters from the side walls and the floor and below
    (bed height − 2 diameters). Bed height: the 99th percentile of the grains' tops.
    """
    from scipy.spatial import cKDTree

    x = np.asarray(positions, np.float64)
    r = np.asarray(radii, np.float64)
    height = float(np.percentile(x[:, 2] + r, 99))
    margin = 4.0 * RADIUS
    lo = np.array([margin, margin, margin])
    hi = np.array([SIDE - margin, SIDE - margin, height - margin])
    core = np.all((x >= lo) & (x <= hi), axis=1)
    fraction = float((4.0 / 3.0 * math.pi * r[core] ** 3).sum() / np.prod(hi - lo)) if hi[2] > lo[2] else float("nan")
    tree = cKDTree(x)
    pairs = tree.query_pairs(2.0 * r.max(), output_type="ndarray")
    d = np.linalg.norm(x[pairs[:, 0]] - x[pairs[:, 1]], axis=1)
    touching = pairs[d <= r[pairs[:, 0]] + r[pairs[:, 1]]]
    contacts = np.bincount(touching.ravel(), minlength=len(x))
    return {"packing_fraction": round(fraction, 4), "coordination": round(float(contacts[core].mean()), 3),
            "bed_height_m": round(height, 5), "core_grains": int(core.sum())}


SETTLE_CASES = {
    "no_rotation": dict(friction=0.5, rolling=0.0, rotation=False),
    "frictional": dict(friction=0.5, rolling=0.0, rotation=True),
    "rolling": dict(friction=0.5, rolling=0.3, rotation=True),
}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--particles", type=int, default=2500)
    parser.add_argument("--cases", nargs="*", default=[*SETTLE_CASES, "energy"])
    parser.add_argument("--out", default=str(REPO / "benchmarks" / "results" / "physics_peers.json"))
    args = parser.parse_args(argv)
    positions, radii, velocities = initial_state(args.particles)
    pair_mass = mean_pair_mass(radii)
    results = {"particles": args.particles, "dt": DT, "stiffness": STIFFNESS, "restitution": RESTITUTION,
               "settle_steps": SETTLE_STEPS, "command": "PYTHONPATH=. python benchmarks/physics_peers.py "
               + " ".join(argv if argv is not None else sys.argv[1:]), "cases": {}}
    work = Path(tempfile.mkdtemp(prefix="mochi_peers_"))
    for name in args.cases:
        if name == "energy":
            # 10 steps per contact of two mean grains, as in the measurement.
            mass = DENSITY * 4.0 / 3.0 * math.pi * float(np.mean(radii.astype(np.float64) ** 3))
            gas_dt = math.pi * math.sqrt(0.5 * mass / STIFFNESS) / 10.0
            gas = dict(friction=0.0, rolling=0.0, gravity=(0.0, 0.0, 0.0), steps=20000, restitution=1.0,
                       energy_every=1000, dt=gas_dt)
            entry = {}
            for label, integrator in (("mochi_euler", "euler"), ("mochi_verlet", "verlet")):
                _, _, energy, seconds = run_mochi(positions, radii, velocities * 3.0, rotation=True,
                                                  integrator=integrator, **gas)
                entry[label] = {"drift": round(energy[-1] / energy[0] - 1.0, 5), "seconds": round(seconds, 1)}
            _, _, energy, seconds = run_lammps(positions, radii, velocities * 3.0, work / name, rotation=True,
                                               pair_mass=pair_mass, **gas)
            entry["lammps"] = {"drift": round(energy[-1] / energy[0] - 1.0, 5), "seconds": round(seconds, 1)}
            entry["dt"] = gas_dt
            results["cases"][name] = entry
        else:
            case = SETTLE_CASES[name]
            common = dict(friction=case["friction"], rolling=case["rolling"], rotation=case["rotation"],
                          gravity=(0.0, 0.0, -9.81), steps=SETTLE_STEPS)
            mochi_x, mochi_r, _, mochi_s = run_mochi(positions, radii, velocities,
                                                     integrator="verlet" if case["rotation"] else "euler", **common)
            peer_x, peer_r, _, peer_s = run_lammps(positions, radii, velocities, work / name, pair_mass=pair_mass,
                                                   **common)
            results["cases"][name] = {"mochi": {**bed_metrics(mochi_x, mochi_r), "seconds": round(mochi_s, 1)},
                                      "lammps": {**bed_metrics(peer_x, peer_r), "seconds": round(peer_s, 1)}}
        print(name, json.dumps(results["cases"][name]), flush=True)
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(results, indent=2) + "\n")
    print(markdown(results))
    return 0


def markdown(results) -> str:
    lines = ["| case | code | packing fraction | coordination | bed height [mm] |", "|---|---|---|---|---|"]
    for name, entry in results["cases"].items():
        if name == "energy":
            continue
        for code in ("mochi", "lammps"):
            m = entry[code]
            lines.append(f"| {name} | {code} | {m['packing_fraction']:.3f} | {m['coordination']:.2f} | "
                         f"{1000 * m['bed_height_m']:.1f} |")
    if "energy" in results["cases"]:
        lines += ["", "| integrator | energy drift over 20,000 steps |", "|---|---|"]
        for code, m in results["cases"]["energy"].items():
            if code == "dt":
                continue
            lines.append(f"| {code} | {100 * m['drift']:+.3f} % |")
    return "\n".join(lines)


if __name__ == "__main__":
    raise SystemExit(main())
