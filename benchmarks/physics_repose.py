"""Issue 16 validation: angle of repose (Mochi vs LAMMPS) and cohesion (Mochi vs LIGGGHTS) on one state.

A column of ~2,000 slightly polydisperse grains (radius 2.5 mm ± 8 %, on a jittered lattice against the
back wall x = 0) is released in a 150 × 40 mm box whose +x side is open: the column collapses, grains
that run out through x = 150 mm are lost (Mochi: inactive; LAMMPS/LIGGGHTS: ``thermo_modify lost
ignore`` with the box ending at x = 150 mm), and what stays is a half-pile leaning on the back wall.
The same Python function (``repose_angle``) reads both codes' final positions: the top of the grains
in 2-diameter bins along x, a straight-line fit of that surface where it stands more than 3 diameters
above the floor and at least 2 diameters from the back wall and the open edge; the angle is atan of
minus the slope.

Physics as in ``benchmarks/physics_peers.py`` (k = 2000 N/m, e = 0.5, μ = 0.5 grains and walls,
dt = 40 µs, LAMMPS ``pair granular`` hooke + damping tsuji + tangential linear_history + rolling sds).

Cases (LAMMPS): ``no_rotation`` (paper model / ``fix nve``), ``frictional`` (rotating, μ_r = 0),
``rolling_0.1`` and ``rolling_0.3`` (μ_r on grains and walls).

Cohesion (LIGGGHTS 3.8, LAMMPS has no SJKR): the same pile, rotating, μ = 0.5, without cohesion and with
SJKR cohesion c = 1.0 and 1.1 × k/(2π R_eff) between grains (R_eff = R/2, the binding threshold of
docs/physics.md; walls not cohesive, as Mochi's default wall_cohesion = 0). LIGGGHTS runs ``model hooke/stiffness
tangential history cohesion sjkr`` with kn, kt = 2/7 k, and gamman, gammat per radius-type pair (the
approach of ``benchmarks/peers/liggghts_input.py``: LIGGGHTS damps with gamma·m_eff, so the grains are
split into radius types and each pair gets 2β√(k/m̄_eff), gammat = √(2/7) gamman).

Beds (``bed_liggghts_*``): the 2,500-grain bed of ``benchmarks/physics_peers.py`` settled in its closed box,
rotating, μ = 0.5, without and with cohesion 1.1 c*, Mochi vs LIGGGHTS, read by its ``bed_metrics``.

Run: ``PYTHONPATH=. python benchmarks/physics_repose.py [--cases ...]`` → JSON in
benchmarks/results/physics_repose.json and a Markdown table on stdout (docs/physics.md).
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
from benchmarks.peers.runner import run_peer  # noqa: E402
from benchmarks.physics_peers import (DENSITY, DT, RADIUS, RESTITUTION, STIFFNESS,  # noqa: E402
                                      granular_box_lines, granular_model, mean_pair_mass)

LENGTH = 0.15          # box length along x [m]; the +x side is open
WIDTH = 0.04           # box width along y [m] (8 diameters, walls on both sides)
HEIGHT = 0.30          # box height [m]
COLUMN = 0.06          # column length along x [m]
STEPS = 50000          # 2 s
FRICTION = 0.5
#: k/(2π R_eff) [Pa] for two mean grains (R_eff = R/2): the SJKR cohesion above which a linear spring binds
#: (docs/physics.md). 1.5 × this makes grains snap into each other faster than dt resolves (Mochi stops
#: with SimulationDiverged), so the cohesive cases sit at 1.0 × and 1.1 ×.
COHESION_THRESHOLD = STIFFNESS / (2.0 * math.pi * 0.5 * RADIUS)


def column_state(count: int, seed: int = 2):
    """Jittered lattice column against x = 0, at rest: (positions (n, 3), radii (n,), velocities (n, 3))."""
    rng = np.random.default_rng(seed)
    spacing = 2.3 * RADIUS * 1.08
    nx, ny = int(COLUMN / spacing), int(WIDTH / spacing)
    layers = math.ceil(count / (nx * ny))
    grid = np.stack(np.meshgrid(np.arange(nx), np.arange(ny), np.arange(layers), indexing="ij"), -1).reshape(-1, 3)
    grid = grid[np.lexsort((grid[:, 1], grid[:, 0], grid[:, 2]))][:count]  # fill layer by layer from the floor
    positions = (grid + 0.5) * spacing + rng.uniform(-0.05, 0.05, (count, 3)) * spacing
    radii = RADIUS * rng.uniform(0.92, 1.08, count)
    velocities = rng.normal(0.0, 0.05, (count, 3))
    return positions.astype(np.float32), radii.astype(np.float32), velocities.astype(np.float32)


def run_mochi(positions, radii, velocities, *, rolling, rotation, cohesion=0.0, steps=STEPS,
              box=(LENGTH, WIDTH, HEIGHT), open_sides=("+x",)):
    """Mochi CPU backend; returns (positions of the grains still in the box (m, 3), their radii, seconds)."""
    from engine.backends.cpu import BackendCpu
    from engine.model import Domain, Gravity, Material
    from engine.scene import setup_from_arrays

    material = Material(density=DENSITY, restitution=RESTITUTION, friction=FRICTION, rolling_friction=rolling,
                        cohesion=cohesion)
    domain = Domain(lo=(0, 0, 0), hi=tuple(box), open_sides=tuple(open_sides), wall_restitution=RESTITUTION,
                    wall_friction=FRICTION, wall_rolling_friction=rolling)
    setup = setup_from_arrays(positions=positions, radius=radii, velocities=velocities, materials=(material,),
                              domain=domain, gravity=Gravity(vector=(0.0, 0.0, -9.81)), dt=DT, stiffness=STIFFNESS,
                              rotation=rotation, integrator="verlet" if rotation else "euler")
    backend = BackendCpu(setup.model)
    backend.set_state(setup.state)
    began = time.perf_counter()
    backend.step(steps)
    elapsed = time.perf_counter() - began
    state = backend.get_state()
    keep = state.active.astype(bool)
    return (state.positions[keep].astype(np.float64), setup.model.radius[keep].astype(np.float64), elapsed)


def _box_data(folder: Path, positions, radii, velocities, types=None, type_count=None, box=(LENGTH, WIDTH, HEIGHT),
              open_x=True):
    # The box ends at the open side (grains leaving through it are lost) and has a margin elsewhere.
    pad = 0.01
    write_sphere_data(folder / "data.txt", positions, radii, np.full(len(radii), DENSITY), (-pad, -pad, -pad),
                      (box[0] + (0.0 if open_x else pad), box[1] + pad, box[2] + pad), velocities=velocities,
                      material_index=types, type_count=type_count)


def lammps_script(*, rolling, pair_mass, rotation, steps=STEPS) -> str:
    model = granular_model(friction=FRICTION, rolling=rolling, pair_mass=pair_mass)
    lines = [granular_box_lines(model, dt=DT, hi=(None, WIDTH, HEIGHT), rotation=rotation,
                                gravity=(0.0, 0.0, -9.81)),
             "thermo_style custom step atoms ke", "thermo 5000", "thermo_modify norm no lost ignore",
             f"run {steps}", "write_dump all custom final.dump id radius x y z modify sort id"]
    return "\n".join(lines) + "\n"


def run_lammps(positions, radii, velocities, folder: Path, **kwargs):
    folder.mkdir(parents=True, exist_ok=True)
    _box_data(folder, positions, radii, velocities)
    run = run_peer("lammps", lammps_script(**kwargs), folder, threads=1)
    rows = np.atleast_2d(np.loadtxt(folder / "final.dump", skiprows=9))
    return rows[:, 2:5], rows[:, 1], run.loop_s[-1] if run.loop_s else run.wall_s


# --- LIGGGHTS: Mochi's Hooke law with friction and SJKR cohesion ---------------------------------------
# Separate from benchmarks/peers/liggghts_input.py (branch issue19, frictionless, no cohesion), whose
# radius-type approach to LIGGGHTS' mass-scaled damping it reuses through radius_types/type_masses.

def liggghts_script(radii, *, cohesion, steps=STEPS, box=(LENGTH, WIDTH, HEIGHT), open_x=True) -> tuple[str, np.ndarray]:
    """(input script, 0-based radius type of each grain) for the frictional (+ cohesive) pile or bed."""
    from benchmarks.peers.liggghts_input import RADIUS_TYPES, radius_types, type_masses
    from engine.contact_law import damping_ratio

    r = np.asarray(radii, np.float64)
    mass = DENSITY * 4.0 / 3.0 * math.pi * r ** 3
    types, _ = radius_types(r)
    masses = type_masses(r, mass, types, RADIUS_TYPES)
    n = RADIUS_TYPES + 1  # the wall type last
    beta = float(np.float32(damping_ratio(RESTITUTION)))
    m_eff = np.empty((n, n))
    m_eff[:-1, :-1] = masses[:, None] * masses[None, :] / (masses[:, None] + masses[None, :])
    m_eff[:-1, -1] = m_eff[-1, :-1] = masses
    m_eff[-1, -1] = masses.mean()
    gamman = 2.0 * beta * np.sqrt(STIFFNESS / m_eff)
    coh = np.full((n, n), cohesion)
    coh[-1, :] = coh[:, -1] = 0.0  # walls are not cohesive (Mochi's wall_cohesion = 0)

    def table(name, values):
        v = np.broadcast_to(np.asarray(values, np.float64), (n, n))
        return f"fix {name} all property/global {name} peratomtypepair {n} " + " ".join(repr(float(x)) for x in v.ravel())

    props = [table("kn", STIFFNESS), table("kt", 2.0 / 7.0 * STIFFNESS), table("gamman", gamman),
             table("gammat", math.sqrt(2.0 / 7.0) * gamman), table("coefficientFriction", FRICTION)]
    model = "model hooke/stiffness tangential history"
    if cohesion > 0:
        props.append(table("cohesionEnergyDensity", coh))
        model += " cohesion sjkr"
    planes = [("x", "lo", 0.0), ("x", "hi", box[0]), ("y", "lo", 0.0), ("y", "hi", box[1]), ("z", "lo", 0.0),
              ("z", "hi", box[2])]
    walls = [f"fix w_{a}{s} all wall/gran {model} primitive type {n} {a}plane {float(p)!r}"
             for a, s, p in planes if not (open_x and a == "x" and s == "hi")]
    lines = ["units si", "atom_style granular", "atom_modify map array", "boundary f f f", "newton off",
             "communicate single vel yes", "read_data data.txt", f"neighbor {0.4 * RADIUS!r} bin",
             "neigh_modify delay 0", *props, f"pair_style gran {model}", "pair_coeff * *", *walls,
             "fix integrate all nve/sphere", "fix grav all gravity 9.81 vector 0.0 0.0 -1.0", f"timestep {DT!r}",
             "thermo_style custom step atoms ke", "thermo 5000", "thermo_modify norm no lost ignore",
             f"run {steps}", "write_dump all custom final.dump id radius x y z modify sort id"]
    return "\n".join(lines) + "\n", types


def run_liggghts(positions, radii, velocities, folder: Path, *, cohesion, steps=STEPS, box=(LENGTH, WIDTH, HEIGHT),
                 open_x=True):
    folder.mkdir(parents=True, exist_ok=True)
    script, types = liggghts_script(radii, cohesion=cohesion, steps=steps, box=box, open_x=open_x)
    from benchmarks.peers.liggghts_input import RADIUS_TYPES

    _box_data(folder, positions, radii, velocities, types=types, type_count=RADIUS_TYPES + 1, box=box,
              open_x=open_x)
    run = run_peer("liggghts", script, folder, threads=1)
    # LIGGGHTS' write_dump has no 'modify sort'; read the header's column names.
    lines = (folder / "final.dump").read_text().splitlines()
    header = next(i for i, line in enumerate(lines) if line.startswith("ITEM: ATOMS"))
    columns = lines[header].split()[2:]
    rows = np.atleast_2d(np.array([[float(v) for v in line.split()] for line in lines[header + 1:]]))
    pick = [columns.index(c) for c in ("x", "y", "z")]
    return rows[:, pick], rows[:, columns.index("radius")], run.loop_s[-1] if run.loop_s else run.wall_s


# --- One estimator for every code ----------------------------------------------------------------------

def repose_angle(positions, radii) -> dict:
    """Angle of repose of the half-pile [deg], from a straight-line fit of its surface.

    Surface: the highest grain top (z + r) in bins 2 mean diameters wide along x. Fitted bins: centre
    at least 2 diameters from the back wall and from the open edge, surface more than 3 diameters above
    the floor (the run-out layer is left out). Also returns the pile height at the wall and grains kept.
    """
    x = np.asarray(positions, np.float64)
    r = np.asarray(radii, np.float64)
    d = 2.0 * RADIUS
    edges = np.arange(0.0, LENGTH + 1e-9, 2.0 * d)
    centres = 0.5 * (edges[1:] + edges[:-1])
    tops = np.full(centres.shape, 0.0)
    which = np.clip(np.searchsorted(edges, x[:, 0], side="right") - 1, 0, len(centres) - 1)
    np.maximum.at(tops, which, x[:, 2] + r)
    use = (centres > 2 * d) & (centres < LENGTH - 2 * d) & (tops > 3 * d)
    if use.sum() < 3:
        return {"angle_deg": float("nan"), "fitted_bins": int(use.sum()), "grains": len(x)}
    slope, _ = np.polyfit(centres[use], tops[use], 1)
    return {"angle_deg": round(math.degrees(math.atan(-slope)), 2), "fitted_bins": int(use.sum()),
            "height_at_wall_m": round(float(tops[0]), 4), "grains": len(x)}


def pile_metrics(positions, radii) -> dict:
    """Angle of repose plus the run-out (99th percentile of the grains' front x + r [m]), the mean
    coordination (contacts counted on overlap) and the mean overlap of touching pairs over the mean radius."""
    from scipy.spatial import cKDTree

    x = np.asarray(positions, np.float64)
    r = np.asarray(radii, np.float64)
    pairs = cKDTree(x).query_pairs(2.0 * r.max(), output_type="ndarray")
    dist = np.linalg.norm(x[pairs[:, 0]] - x[pairs[:, 1]], axis=1)
    touching = pairs[dist <= r[pairs[:, 0]] + r[pairs[:, 1]]]
    contacts = np.bincount(touching.ravel(), minlength=len(x))
    overlap = (r[touching[:, 0]] + r[touching[:, 1]] - np.linalg.norm(x[touching[:, 0]] - x[touching[:, 1]], axis=1))
    return {**repose_angle(x, r), "runout_m": round(float(np.percentile(x[:, 0] + r, 99)), 4),
            "coordination": round(float(contacts.mean()), 3),
            "mean_overlap_over_radius": round(float(overlap.mean() / RADIUS), 4) if len(overlap) else 0.0}


LAMMPS_CASES = {
    "no_rotation": dict(rolling=0.0, rotation=False),
    "frictional": dict(rolling=0.0, rotation=True),
    "rolling_0.1": dict(rolling=0.1, rotation=True),
    "rolling_0.3": dict(rolling=0.3, rotation=True),
}
LIGGGHTS_CASES = {"liggghts_frictional": 0.0, "liggghts_cohesion_1.0": COHESION_THRESHOLD,
                  "liggghts_cohesion_1.1": 1.1 * COHESION_THRESHOLD}
#: Beds of benchmarks/physics_peers.py (2,500 grains settled in its closed box, rotating, μ = 0.5) with and
#: without cohesion, Mochi vs LIGGGHTS: packing fraction, coordination and bed height by its bed_metrics.
BED_CASES = {"bed_liggghts_frictional": 0.0, "bed_liggghts_cohesion_1.1": 1.1 * COHESION_THRESHOLD}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--particles", type=int, default=2000)
    parser.add_argument("--cases", nargs="*", default=[*LAMMPS_CASES, *LIGGGHTS_CASES, *BED_CASES])
    parser.add_argument("--out", default=str(REPO / "benchmarks" / "results" / "physics_repose.json"))
    args = parser.parse_args(argv)
    positions, radii, velocities = column_state(args.particles)
    pair_mass = mean_pair_mass(radii)
    out = Path(args.out)
    results = json.loads(out.read_text()) if out.exists() else {}
    results.update({"particles": args.particles, "dt": DT, "stiffness": STIFFNESS, "restitution": RESTITUTION,
                    "friction": FRICTION, "steps": STEPS, "cohesion_threshold_pa": round(COHESION_THRESHOLD, 1),
                    "box_m": [LENGTH, WIDTH, HEIGHT], "column_m": COLUMN})
    results.setdefault("cases", {})
    work = Path(tempfile.mkdtemp(prefix="mochi_repose_"))
    for name in args.cases:
        if name in LAMMPS_CASES:
            case = LAMMPS_CASES[name]
            mx, mr, ms = run_mochi(positions, radii, velocities, **case)
            px, pr, ps = run_lammps(positions, radii, velocities, work / name, pair_mass=pair_mass, **case)
            entry = {"mochi": {**pile_metrics(mx, mr), "seconds": round(ms, 1)},
                     "lammps": {**pile_metrics(px, pr), "seconds": round(ps, 1)}}
        elif name in BED_CASES:
            from benchmarks import physics_peers as bed

            cohesion = BED_CASES[name]
            bx, br, bv = bed.initial_state(2500)
            box = (bed.SIDE, bed.SIDE, bed.HEIGHT)
            common = dict(cohesion=cohesion, steps=bed.SETTLE_STEPS, box=box)
            mx, mr, ms = run_mochi(bx, br, bv, rolling=0.0, rotation=True, open_sides=(), **common)
            px, pr, ps = run_liggghts(bx, br, bv, work / name, open_x=False, **common)
            entry = {"cohesion_pa": round(cohesion, 1), "particles": 2500, "steps": bed.SETTLE_STEPS,
                     "mochi": {**bed.bed_metrics(mx, mr), "seconds": round(ms, 1)},
                     "liggghts": {**bed.bed_metrics(px, pr), "seconds": round(ps, 1)}}
        else:
            cohesion = LIGGGHTS_CASES[name]
            mx, mr, ms = run_mochi(positions, radii, velocities, rolling=0.0, rotation=True, cohesion=cohesion)
            px, pr, ps = run_liggghts(positions, radii, velocities, work / name, cohesion=cohesion)
            entry = {"cohesion_pa": round(cohesion, 1), "mochi": {**pile_metrics(mx, mr), "seconds": round(ms, 1)},
                     "liggghts": {**pile_metrics(px, pr), "seconds": round(ps, 1)}}
        entry["command"] = "PYTHONPATH=. python benchmarks/physics_repose.py --cases " + name
        results["cases"][name] = entry
        print(name, json.dumps(entry), flush=True)
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(json.dumps(results, indent=2) + "\n")  # after each case: a partial run keeps its results
    print(markdown(results))
    return 0


def markdown(results) -> str:
    lines = ["| case | code | angle of repose [°] | height at wall [mm] | run-out [mm] | grains left | "
             "coordination | mean overlap / R |", "|---|---|---|---|---|---|---|---|"]
    for name, entry in results["cases"].items():
        for code in ("mochi", "lammps", "liggghts"):
            if code in entry and "angle_deg" in entry[code]:
                m = entry[code]
                lines.append(f"| {name} | {code} | {m['angle_deg']:.1f} | {1000 * m.get('height_at_wall_m', 0):.1f} | "
                             f"{1000 * m['runout_m']:.1f} | {m['grains']} | {m['coordination']:.2f} | "
                             f"{m['mean_overlap_over_radius']:.3f} |")
    lines += ["", "| bed | code | packing fraction | coordination | bed height [mm] |", "|---|---|---|---|---|"]
    for name, entry in results["cases"].items():
        for code in ("mochi", "liggghts"):
            if code in entry and "packing_fraction" in entry[code]:
                m = entry[code]
                lines.append(f"| {name} | {code} | {m['packing_fraction']:.3f} | {m['coordination']:.2f} | "
                             f"{1000 * m['bed_height_m']:.1f} |")
    return "\n".join(lines)


if __name__ == "__main__":
    raise SystemExit(main())
