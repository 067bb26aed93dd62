"""Issue 30 validation: Mochi's Hertz–Mindlin law against LIGGGHTS 3.8 ``model hertz tangential history``.

Both codes start from one state and the same materials (Young's modulus E, Poisson's ratio ν, restitution
e, friction μ; grains and walls alike), LIGGGHTS with per-type ``youngsModulus``/``poissonsRatio`` (type 1
the grains, type 2 the walls) and ``coefficientRestitution``/``coefficientFriction`` per type pair, so
both mix E*, G*, m_eff and R* from the same numbers and damp in Tsuji's form (engine.contact_law).

Cases:
- ``restitution_e``: one grain hits the floor head-on at 1 m/s without gravity; rebound speed / 1 m/s.
- ``oblique_θ``: the same grain hits at 1 m/s, θ from the normal, μ = 0.3, e = 0.7; rebound angle
  from the normal [deg] and spin ω r / v [1] afterwards. The codes agree on the arms (r − δ/2, walls
  too) and differ by default on the friction cap (docs/physics.md): LIGGGHTS caps the tangential spring
  alone at μ|F_n| and drops the tangential damping while sliding, Mochi caps spring plus damping at
  μ max(F_n, 0). Mochi runs with LIGGGHTS' cap (``[contact] friction_cap = "spring"``) unless
  ``--friction-cap clipped`` is given (its default; the JSON says which).
- ``bed``: the 2,500 grains of ``benchmarks/physics_peers.py`` settled under gravity in their closed box
  (μ = 0.5, e = 0.5, rotating, velocity Verlet), read by its ``bed_metrics``: packing fraction,
  coordination, bed height.
- ``repose_<seed>``: the 2,000-grain column of ``benchmarks/physics_repose.py`` (jittered by ``seed``: 2, 3,
  4) collapsing through its open side, read by its ``pile_metrics``: angle of repose, run-out,
  coordination; the table adds the mean over the seeds (a pile's angle scatters by ~1° between jitters).

Run: ``PYTHONPATH=. python benchmarks/physics_hertz.py [--cases ...]`` → JSON in
benchmarks/results/physics_hertz.json and a Markdown table on stdout (docs/physics.md). Needs the peers
(``bash benchmarks/peers/setup.sh``).
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

YOUNGS = 5.0e6      # [Pa], grains and walls
POISSON = 0.3
DENSITY = 2500.0    # [kg/m³]
R_IMPACT = 0.005    # radius of the single grain [m]
DT_IMPACT = 1.0e-6  # [s]: ~400 steps per impact
IMPACT_STEPS = 3000 # the impact lasts ~0.4 ms; 3 ms leaves it long over
DT_BULK = 4.0e-5    # [s]: ~14 steps per Hertz contact of the bed's fastest grains, 13% of the Rayleigh time


#: Mochi's friction cap in the comparisons: LIGGGHTS' own ('spring', engine.contact_law.FRICTION_CAPS), so
#: that the codes differ in nothing; ``--friction-cap clipped`` measures what Mochi's default changes.
FRICTION_CAP = "spring"


def _mochi_setup(positions, radii, velocities, *, restitution, friction, lo, hi, gravity, dt, open_sides=()):
    from engine.model import Domain, Gravity, Material
    from engine.scene import setup_from_arrays

    material = Material(density=DENSITY, restitution=restitution, friction=friction, youngs_modulus=YOUNGS,
                        poisson_ratio=POISSON)
    domain = Domain(lo=lo, hi=hi, open_sides=tuple(open_sides), wall_restitution=restitution,
                    wall_friction=friction, wall_youngs_modulus=YOUNGS, wall_poisson_ratio=POISSON)
    return setup_from_arrays(positions=np.asarray(positions, np.float32), radius=np.asarray(radii, np.float32),
                             velocities=np.asarray(velocities, np.float32), materials=(material,), domain=domain,
                             gravity=Gravity(vector=gravity), dt=dt, rotation=True, integrator="verlet",
                             contact_normal="hertz", friction_cap=FRICTION_CAP)


def _liggghts_lines(*, restitution, friction, dt, walls, gravity: bool, neighbor: float) -> list[str]:
    """The common part of every LIGGGHTS input: materials of types 1 (grains) and 2 (walls), Hertz pairs."""
    model = "model hertz tangential history"
    props = [f"fix m1 all property/global youngsModulus peratomtype {YOUNGS!r} {YOUNGS!r}",
             f"fix m2 all property/global poissonsRatio peratomtype {POISSON!r} {POISSON!r}",
             f"fix m3 all property/global coefficientRestitution peratomtypepair 2 {' '.join([repr(restitution)] * 4)}",
             f"fix m4 all property/global coefficientFriction peratomtypepair 2 {' '.join([repr(friction)] * 4)}"]
    lines = ["units si", "atom_style granular", "atom_modify map array", "boundary f f f", "newton off",
             "communicate single vel yes", "read_data data.txt", f"neighbor {neighbor!r} bin", "neigh_modify delay 0",
             *props, f"pair_style gran {model}", "pair_coeff * *"]
    lines += [f"fix w_{axis}{side} all wall/gran {model} primitive type 2 {axis}plane {float(p)!r}"
              for axis, side, p in walls]
    lines.append("fix integrate all nve/sphere")
    if gravity:
        lines.append("fix grav all gravity 9.81 vector 0.0 0.0 -1.0")
    lines.append(f"timestep {dt!r}")
    return lines


def _read_dump(path: Path, names) -> np.ndarray:
    lines = path.read_text().splitlines()
    header = next(i for i, line in enumerate(lines) if line.startswith("ITEM: ATOMS"))
    columns = lines[header].split()[2:]
    rows = np.atleast_2d(np.array([[float(v) for v in line.split()] for line in lines[header + 1:]]))
    rows = rows[np.argsort(rows[:, columns.index("id")])]
    return rows[:, [columns.index(n) for n in names]]


# --- one grain on the floor -------------------------------------------------------------------------------

def impact(theta_deg: float, *, restitution: float, friction: float, folder: Path) -> dict:
    """One grain hitting the floor at 1 m/s, θ from the normal: (rebound e_n, angle, spin) for both codes.

    Mochi's floor is y = 0 (its gravity axis), LIGGGHTS' z = 0; the grain moves along +x in both.
    """
    theta = math.radians(theta_deg)
    vt, vn = math.sin(theta), math.cos(theta)
    gap = 1.0e-5  # a hair above the floor: both codes see the contact start from zero overlap
    setup = _mochi_setup([[0.0, R_IMPACT + gap, 0.0]], [R_IMPACT], [[vt, -vn, 0.0]], restitution=restitution,
                         friction=friction, lo=(-0.1, 0.0, -0.1), hi=(0.1, 0.1, 0.1), gravity=(0.0, 0.0, 0.0),
                         dt=DT_IMPACT)
    from engine.backends.cpu import BackendCpu

    backend = BackendCpu(setup.model)
    backend.set_state(setup.state)
    began = time.perf_counter()
    backend.step(IMPACT_STEPS)
    mochi_s = time.perf_counter() - began
    state = backend.get_state()
    m_v = state.velocities[0].astype(np.float64)
    m_w = state.angular_velocities[0].astype(np.float64)
    mochi = {"normal_restitution": m_v[1] / vn, "tangential_speed": m_v[0], "spin": -m_w[2]}  # +x roll: ω_z < 0

    folder.mkdir(parents=True, exist_ok=True)
    write_sphere_data(folder / "data.txt", [[0.0, 0.0, R_IMPACT + gap]], [R_IMPACT], [DENSITY], (-0.1, -0.1, -0.01),
                      (0.1, 0.1, 0.1), velocities=[[vt, 0.0, -vn]], type_count=2)
    lines = _liggghts_lines(restitution=restitution, friction=friction, dt=DT_IMPACT, walls=[("z", "lo", 0.0)],
                            gravity=False, neighbor=R_IMPACT)
    lines += [f"run {IMPACT_STEPS}", "write_dump all custom final.dump id vx vy vz omegax omegay omegaz"]
    run = run_peer("liggghts", "\n".join(lines) + "\n", folder, threads=1)
    v = _read_dump(folder / "final.dump", ("vx", "vy", "vz", "omegax", "omegay", "omegaz"))[0]
    liggghts = {"normal_restitution": v[2] / vn, "tangential_speed": v[0], "spin": v[4]}  # +x roll: ω_y > 0

    out = {}
    for name, r, seconds in (("mochi", mochi, mochi_s), ("liggghts", liggghts, run.wall_s)):
        out[name] = {"restitution": round(r["normal_restitution"], 6),
                     "rebound_angle_deg": round(math.degrees(math.atan2(r["tangential_speed"],
                                                                        r["normal_restitution"] * vn)), 4),
                     "spin_r_over_v": round(r["spin"] * R_IMPACT, 6), "seconds": round(seconds, 2)}
    return out


# --- the bed and the pile ---------------------------------------------------------------------------------

def bed(folder: Path) -> dict:
    from benchmarks import physics_peers as peers
    from engine.backends.cpu import BackendCpu

    positions, radii, velocities = peers.initial_state(2500)
    box = (peers.SIDE, peers.SIDE, peers.HEIGHT)
    setup = _mochi_setup(positions, radii, velocities, restitution=0.5, friction=0.5, lo=(0, 0, 0), hi=box,
                         gravity=(0.0, 0.0, -9.81), dt=DT_BULK)
    backend = BackendCpu(setup.model)
    backend.set_state(setup.state)
    began = time.perf_counter()
    backend.step(peers.SETTLE_STEPS)
    mochi_s = time.perf_counter() - began
    mx = backend.get_state().positions.astype(np.float64)

    folder.mkdir(parents=True, exist_ok=True)
    pad = 0.01
    write_sphere_data(folder / "data.txt", positions, radii, np.full(len(radii), DENSITY), (-pad, -pad, -pad),
                      (box[0] + pad, box[1] + pad, box[2] + pad), velocities=velocities, type_count=2)
    walls = [(a, s, p) for a, lo_hi in zip("xyz", box) for s, p in (("lo", 0.0), ("hi", lo_hi))]
    lines = _liggghts_lines(restitution=0.5, friction=0.5, dt=DT_BULK, walls=walls, gravity=True,
                            neighbor=0.4 * peers.RADIUS)
    lines += ["thermo 5000", f"run {peers.SETTLE_STEPS}", "write_dump all custom final.dump id radius x y z"]
    run = run_peer("liggghts", "\n".join(lines) + "\n", folder, threads=1)
    px = _read_dump(folder / "final.dump", ("x", "y", "z"))
    r64 = np.asarray(radii, np.float64)
    return {"particles": len(radii), "steps": peers.SETTLE_STEPS, "dt_s": DT_BULK,
            "mochi": {**peers.bed_metrics(mx, r64), "seconds": round(mochi_s, 1)},
            "liggghts": {**peers.bed_metrics(px, r64), "seconds": round(run.loop_s[-1] if run.loop_s else run.wall_s, 1)}}


def repose(folder: Path, seed: int) -> dict:
    from benchmarks import physics_repose as pile
    from engine.backends.cpu import BackendCpu

    positions, radii, velocities = pile.column_state(2000, seed=seed)
    box = (pile.LENGTH, pile.WIDTH, pile.HEIGHT)
    setup = _mochi_setup(positions, radii, velocities, restitution=0.5, friction=pile.FRICTION, lo=(0, 0, 0), hi=box,
                         gravity=(0.0, 0.0, -9.81), dt=DT_BULK, open_sides=("+x",))
    backend = BackendCpu(setup.model)
    backend.set_state(setup.state)
    began = time.perf_counter()
    backend.step(pile.STEPS)
    mochi_s = time.perf_counter() - began
    state = backend.get_state()
    keep = state.active.astype(bool)
    mx, mr = state.positions[keep].astype(np.float64), setup.model.radius[keep].astype(np.float64)

    folder.mkdir(parents=True, exist_ok=True)
    pad = 0.01
    # The box ends at the open side: grains leaving through it are lost (thermo_modify lost ignore).
    write_sphere_data(folder / "data.txt", positions, radii, np.full(len(radii), DENSITY), (-pad, -pad, -pad),
                      (box[0], box[1] + pad, box[2] + pad), velocities=velocities, type_count=2)
    walls = [("x", "lo", 0.0), ("y", "lo", 0.0), ("y", "hi", box[1]), ("z", "lo", 0.0), ("z", "hi", box[2])]
    lines = _liggghts_lines(restitution=0.5, friction=pile.FRICTION, dt=DT_BULK, walls=walls, gravity=True,
                            neighbor=0.4 * pile.RADIUS)
    lines += ["thermo 5000", "thermo_modify lost ignore", f"run {pile.STEPS}",
              "write_dump all custom final.dump id radius x y z"]
    run = run_peer("liggghts", "\n".join(lines) + "\n", folder, threads=1)
    rows = _read_dump(folder / "final.dump", ("radius", "x", "y", "z"))
    return {"particles": len(radii), "steps": pile.STEPS, "dt_s": DT_BULK,
            "mochi": {**pile.pile_metrics(mx, mr), "seconds": round(mochi_s, 1)},
            "liggghts": {**pile.pile_metrics(rows[:, 1:], rows[:, 0]),
                         "seconds": round(run.loop_s[-1] if run.loop_s else run.wall_s, 1)}}


CASES = {**{f"restitution_{e}": ("impact", dict(theta_deg=0.0, restitution=e, friction=0.3)) for e in (0.3, 0.7, 0.95)},
         **{f"oblique_{t}": ("impact", dict(theta_deg=float(t), restitution=0.7, friction=0.3)) for t in (20, 45, 70)},
         "bed": ("bed", {}),
         # A pile's angle scatters from run to run by about a degree: three jitters of the column.
         **{f"repose_{seed}": ("repose", dict(seed=seed)) for seed in (2, 3, 4, 5, 6, 7)}}


def main(argv=None) -> int:
    global FRICTION_CAP
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", nargs="*", default=list(CASES))
    parser.add_argument("--out", default=str(REPO / "benchmarks" / "results" / "physics_hertz.json"))
    parser.add_argument("--friction-cap", default=FRICTION_CAP, choices=("clipped", "absolute", "spring"))
    args = parser.parse_args(argv)
    FRICTION_CAP = args.friction_cap
    out = Path(args.out)
    results = json.loads(out.read_text()) if out.exists() else {}
    results.update({"youngs_modulus_pa": YOUNGS, "poisson_ratio": POISSON, "density": DENSITY,
                    "impact_radius_m": R_IMPACT, "impact_dt_s": DT_IMPACT, "peer": "LIGGGHTS 3.8 (Debian)",
                    "law": "hertz, tangential history, Tsuji damping (LIGGGHTS' form)"})
    results.setdefault("cases", {})
    work = Path(tempfile.mkdtemp(prefix="mochi_hertz_"))
    for name in args.cases:
        kind, kwargs = CASES[name]
        entry = {"impact": impact, "bed": bed, "repose": repose}[kind](folder=work / name, **kwargs)
        entry.update(kwargs, mochi_friction_cap=FRICTION_CAP)
        entry["command"] = f"PYTHONPATH=. python benchmarks/physics_hertz.py --friction-cap {FRICTION_CAP} --cases {name}"
        results["cases"][name] = entry
        print(name, json.dumps(entry), flush=True)
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(json.dumps(results, indent=2) + "\n")  # after each case: a partial run keeps its results
    print(markdown(results))
    return 0


def markdown(results) -> str:
    rows = ["| case | quantity | Mochi | LIGGGHTS | difference |", "|---|---|---|---|---|"]
    for name, entry in results["cases"].items():
        m, p = entry["mochi"], entry["liggghts"]
        if name.startswith("restitution"):
            keys = ("restitution",)
        elif name.startswith("oblique"):
            keys = ("restitution", "rebound_angle_deg", "spin_r_over_v")
        elif name == "bed":
            keys = ("packing_fraction", "coordination", "bed_height_m")
        else:
            keys = ("angle_deg", "runout_m", "coordination")
        for key in keys:
            a, b = m[key], p[key]
            diff = f"{a - b:+.3g}" if key.endswith(("_deg", "fraction", "coordination", "_m")) else \
                f"{(a - b) / abs(b):+.2%}" if b else "—"
            rows.append(f"| {name} | {key} | {a} | {b} | {diff} |")
    piles = [e for n, e in results["cases"].items() if n.startswith("repose_")]
    if len(piles) > 1:
        for key in ("angle_deg", "runout_m", "coordination"):
            a = [e["mochi"][key] for e in piles]
            b = [e["liggghts"][key] for e in piles]
            rows.append(f"| repose, mean of {len(piles)} (± std) | {key} | {np.mean(a):.4g} ± {np.std(a):.2g} | "
                        f"{np.mean(b):.4g} ± {np.std(b):.2g} | {np.mean(a) - np.mean(b):+.3g} |")
    return "\n".join(rows)


if __name__ == "__main__":
    raise SystemExit(main())
