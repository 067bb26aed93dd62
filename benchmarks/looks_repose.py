"""The heap each look makes: a column of the look's grains collapses on a floor, and its angle is measured.

The look's grains (its radius ± 8 %) are poured loose into a closed square box and settle there
without friction into a dense random packing (it stands without friction, so it needs no spring
history when the walls go); a round column (radius ``COLUMN_RADIUS``, height about ``COLUMN_HEIGHT``
grain diameters, ~2,200 grains) is cut out of it and released on the floor of a domain whose four sides
are open (grains that run off are lost, as off a table), for ``SECONDS`` of simulated time on the CPU
backend with the look's material on the grains and the floor, stiffness and dt 'auto' as a bake chooses
them. Its sides flow, and what stays is a heap around the column's axis.

Its angle is read by ``benchmarks/physics_repose.repose_angle``, the estimator of the LAMMPS and
LIGGGHTS comparison (docs/physics.md), on the heap's radial profile: each grain's distance from the axis
becomes the estimator's x and its height its z, both scaled to the estimator's grain size, so the top of
the heap in 2-diameter rings is fitted with a straight line where it stands more than 3 diameters above
the floor and 2 diameters from the axis. Same estimator, same bins in diameters, a cone instead of a
half-pile.

Run: ``PYTHONPATH=. python benchmarks/looks_repose.py [--looks sand beads]`` → JSON in
benchmarks/results/looks_repose.json and a Markdown table on stdout (docs/looks.md).
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import math
import sys
import time
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from benchmarks.physics_repose import LENGTH, RADIUS, repose_angle  # noqa: E402

#: Settled column's radius and height in grain diameters (about 2,000 grains).
COLUMN_RADIUS = 8.0
COLUMN_HEIGHT = 10.0
#: Simulated time of the settling in a closed box and of the release [s].
SETTLE_SECONDS = 0.4
SECONDS = 1.0
#: Lattice spacing / largest diameter of the loose pour.
SPACING = 1.08


def loose_box(radius: float, *, width: float, height: float, seed: int = 0):
    """Grains of the look's radius (± 8 %) on a loose jittered lattice filling a square box standing on
    the floor at x = z = 0 (y up): the pour before it settles.

    Args:
        radius: Mean grain radius [m].
        width, height: Box size in mean diameters.
        seed: Seed of the jitter and the radii.

    Returns:
        (positions [m] (n, 3) float32, radii [m] (n,) float32).
    """
    rng = np.random.default_rng(seed)
    d = 2.0 * radius
    spacing = SPACING * d * 1.08  # the largest grain (+8 %) never touches its neighbour
    n, layers = int(width * d / spacing), int(height * d / spacing)
    i, j, k = np.meshgrid(np.arange(n), np.arange(layers), np.arange(n), indexing="ij")
    grid = np.stack([i.ravel(), j.ravel(), k.ravel()], 1).astype(np.float64)
    positions = (grid + 0.5) * spacing - np.array([0.5 * n * spacing, 0.0, 0.5 * n * spacing])
    positions += rng.uniform(-0.05, 0.05, positions.shape) * spacing
    radii = radius * rng.uniform(0.92, 1.08, len(positions))
    return positions.astype(np.float32), radii.astype(np.float32)


def _setup(entry, positions, radii, domain):
    from engine.model import Gravity
    from engine.scene import setup_from_arrays

    return setup_from_arrays(positions=positions, radius=radii, materials=(entry.material,), domain=domain,
                             gravity=Gravity(vector=(0.0, -9.81, 0.0)), fps=25.0, name=f"{entry.key} heap")


def _run(setup, seconds: float):
    """Step ``setup`` for ``seconds`` on the CPU backend: (final state, steps)."""
    from engine.backends.cpu import BackendCpu

    backend = BackendCpu(setup.model)
    backend.set_state(setup.state)
    steps = math.ceil(seconds / setup.model.physics.dt)
    backend.step(steps)
    return backend.get_state(), steps


def settled_column(entry, *, seed: int = 0, column_radius: float = COLUMN_RADIUS,
                   column_height: float = COLUMN_HEIGHT):
    """A round column of ``entry``'s grains (an ``engine.looks.Look``), settled at rest on the floor.

    The grains are poured loose into a closed square box with the look's material on its walls, settle
    for ``SETTLE_SECONDS`` into a random packing (a lattice would stand or fall as a crystal, not as a
    heap of grains), and the round column is cut out of it.

    Returns:
        (positions [m] (n, 3) float32, radii [m] (n,) float32), the column's axis at x = z = 0.
    """
    from engine.model import Domain

    d = 2.0 * entry.radius
    width = 2.0 * column_radius + 2.0
    # A loose lattice packs ~0.33 of its volume, the settled frictionless column ~0.6: pour it that much taller.
    positions, radii = loose_box(entry.radius, width=width, height=column_height * 1.8, seed=seed)
    half = 0.5 * width * d
    top = float((positions[:, 1] + radii).max()) * 1.02
    # Frictionless grains settle into a dense random packing that stands without friction, so the
    # column needs no tangential spring history when it is released (a frictional packing would sag
    # while its springs build up again) and only its sides flow.
    slippery = dataclasses.replace(entry, material=dataclasses.replace(entry.material, friction=0.0,
                                                                       rolling_friction=0.0, restitution=0.1))
    box = Domain(lo=(-half, 0.0, -half), hi=(half, top, half), wall_restitution=0.1, wall_friction=0.0)
    state, _ = _run(_setup(slippery, positions, radii, box), SETTLE_SECONDS)
    inside = np.hypot(state.positions[:, 0], state.positions[:, 2]) <= column_radius * d
    return state.positions[inside], radii[inside]


def heap_angle(positions, radii, *, axis=(0.0, 0.0)) -> dict:
    """Angle of repose of a heap around a vertical (y) axis [deg], by ``repose_angle``.

    Args:
        positions: Grain centres [m], (n, 3), y up.
        radii: Grain radii [m], (n,).
        axis: (x, z) of the heap's axis [m].

    Returns:
        ``repose_angle``'s dict (angle_deg, fitted_bins, height_at_wall_m: height at the axis [m], grains).
    """
    x = np.asarray(positions, np.float64)
    r = np.asarray(radii, np.float64)
    scale = RADIUS / float(r.mean())  # into the estimator's grain size: its bins are in diameters
    rho = np.hypot(x[:, 0] - axis[0], x[:, 2] - axis[1]) * scale
    keep = rho < LENGTH  # the estimator's box: 30 diameters from the axis
    profile = np.stack([rho, np.zeros_like(rho), x[:, 1] * scale], 1)[keep]
    result = repose_angle(profile, r[keep] * scale)
    result.pop("height_at_wall_m", None)  # the estimator's first bin; a flat heap has none
    near = rho < 4.0 * RADIUS  # within 2 diameters of the axis
    result["height_at_axis_m"] = round(float((x[near, 1] + r[near]).max()) if near.any() else 0.0, 4)
    return result


def release_setup(entry, positions, radii, *, column_radius: float = COLUMN_RADIUS):
    """The scene of a settled column released on an open floor with ``entry``'s material (grains and
    floor), dt and stiffness 'auto'; an ``engine.scene.SceneSetup`` at 25 fps."""
    from engine.model import Domain

    m = entry.material
    reach = (column_radius + 30.0) * 2.0 * entry.radius  # room for the heap; beyond it grains are lost
    top = float((positions[:, 1] + radii).max()) * 1.05
    floor = Domain(lo=(-reach, 0.0, -reach), hi=(reach, top, reach), open_sides=("-x", "+x", "-z", "+z"),
                   wall_restitution=m.restitution, wall_friction=m.friction, wall_rolling_friction=m.rolling_friction)
    return _setup(entry, positions, radii, floor)


def run_heap(entry, *, seconds: float = SECONDS, seed: int = 0, column_radius: float = COLUMN_RADIUS,
             column_height: float = COLUMN_HEIGHT) -> dict:
    """Settle ``entry``'s column, release it on an open floor for ``seconds`` and measure its heap.

    Returns:
        ``heap_angle``'s dict plus grains (in the column), kept (on the floor at the end), steps (of the
        release), wall_seconds (settling and release) and the final positions/radii of the kept grains
        (numpy arrays, not for JSON).
    """
    began = time.perf_counter()
    positions, radii = settled_column(entry, seed=seed, column_radius=column_radius, column_height=column_height)
    setup = release_setup(entry, positions, radii, column_radius=column_radius)
    state, steps = _run(setup, seconds)
    elapsed = time.perf_counter() - began
    keep = state.active.astype(bool)
    positions, radii = state.positions[keep], setup.model.radius[keep]
    return {**heap_angle(positions, radii), "grains": setup.model.particle_count, "kept": int(keep.sum()),
            "steps": steps, "wall_seconds": round(elapsed, 2), "positions": positions, "radii": radii}


def markdown(results: dict) -> str:
    """The table of docs/looks.md: each look's settings and its heap over the seeds."""
    from engine.looks import look

    lines = ["| look | radius [mm] | friction | rolling | stickiness [Pa] | restitution | heap angle [°] "
             "| height at the axis [diameters] | grains kept |", "|---|---|---|---|---|---|---|---|---|"]
    for key, rows in results.items():
        entry = look(key)
        m, d = entry.material, 2.0 * entry.radius
        angles = [row["angle_deg"] for row in rows]
        angle = ("flat (no flank 3 diameters high)" if all(math.isnan(a) for a in angles)
                 else " / ".join("–" if math.isnan(a) else f"{a:.1f}" for a in angles))
        heights = " / ".join(f"{row['height_at_axis_m'] / d:.1f}" for row in rows)
        kept = " / ".join(f"{row['kept'] / row['grains']:.0%}" for row in rows)
        lines.append(f"| {entry.label} | {entry.radius * 1e3:g} | {m.friction:g} | {m.rolling_friction:g} "
                     f"| {m.cohesion:g} | {m.restitution:g} | {angle} | {heights} | {kept} |")
    return "\n".join(lines)


def main(argv=None) -> int:
    from engine.looks import list_looks, look

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--looks", nargs="*", default=[entry.key for entry in list_looks()])
    parser.add_argument("--seeds", type=int, default=3, help="columns per look (seeds 0, 1, ...)")
    parser.add_argument("--out", type=Path, default=REPO / "benchmarks" / "results" / "looks_repose.json")
    args = parser.parse_args(argv)
    results = {}
    for key in args.looks:
        results[key] = []
        for seed in range(args.seeds):
            row = run_heap(look(key), seed=seed)
            results[key].append({"seed": seed, **{k: v for k, v in row.items() if k not in ("positions", "radii")}})
            print(key, results[key][-1], flush=True)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(results, indent=2) + "\n")
    print(markdown(results))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
