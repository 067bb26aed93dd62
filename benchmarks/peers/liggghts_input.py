"""A LIGGGHTS input running Mochi's contact law on a Mochi state.

LIGGGHTS' ``model hooke/stiffness`` takes k directly but damps with γ_n = gamman · m_eff (its
normal_model_hooke_stiffness.h), not Mochi's 2β sqrt(m_eff k). The grains are therefore split into
``RADIUS_TYPES`` atom types by radius, and each type pair gets gamman = 2β sqrt(k / m̄_eff) at the mean
effective mass of the two types (walls: one more type, m_eff = the grain's mass). The damping then
matches Mochi's to within the spread of sqrt(m_eff) inside a type pair (``max_damping_error``:
0.9% for radii 5–6 mm in 16 types). ``tangential no_history`` with no tangential damping and zero friction
gives F_t = 0. (LIGGGHTS' plain ``hooke`` derives k from Young's modulus and a characteristic velocity
per pair, so it cannot hold one k for a polydisperse state.)
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from engine.model import Model

from engine.lammps.data_file import write_sphere_data
from .physics import PeerPhysics, box_padding, gravity_command, observe_and_run, peer_physics

#: Atom types the grains are split into by radius (the wall is one more).
RADIUS_TYPES = 16


def radius_types(radius: np.ndarray, count: int = RADIUS_TYPES) -> tuple[np.ndarray, np.ndarray]:
    """(0-based type of each grain, edges (count+1,) [m]): equal-width radius bins."""
    r = np.asarray(radius, np.float64)
    edges = np.linspace(r.min(), r.max(), count + 1)
    # Type 1 always holds the smallest grain (LIGGGHTS refuses a granular run whose type 1 is empty).
    types = np.clip(np.searchsorted(edges, r, side="right") - 1, 0, count - 1) if r.max() > r.min() \
        else np.zeros(r.shape[0], np.int64)
    return types, edges


def type_masses(radius: np.ndarray, mass: np.ndarray, types: np.ndarray, count: int) -> np.ndarray:
    """Mean mass of each type [kg], (count,) (a type without grains gets its neighbours' mean)."""
    m = np.asarray(mass, np.float64)
    sums = np.bincount(types, weights=m, minlength=count)
    counts = np.bincount(types, minlength=count)
    means = np.where(counts > 0, sums / np.maximum(counts, 1), np.nan)
    if np.isnan(means).any():
        means = np.interp(np.arange(count), np.flatnonzero(~np.isnan(means)), means[~np.isnan(means)])
    return means


def gamman_table(physics: PeerPhysics, masses: np.ndarray) -> np.ndarray:
    """gamman [1/s] per type pair, (T+1, T+1) with the wall last: γ_n / m̄_eff = 2β sqrt(k / m̄_eff)."""
    t = masses.shape[0]
    table = np.zeros((t + 1, t + 1))
    m_eff = masses[:, None] * masses[None, :] / (masses[:, None] + masses[None, :])
    table[:t, :t] = 2.0 * physics.beta * np.sqrt(physics.stiffness / m_eff)
    table[:t, t] = table[t, :t] = 2.0 * physics.wall_beta * np.sqrt(physics.stiffness / masses)
    return table


def max_damping_error(mass: np.ndarray, types: np.ndarray, masses: np.ndarray) -> float:
    """Largest relative difference between LIGGGHTS' gamman·m_eff and Mochi's γ_n over the grain type
    pairs and walls: |sqrt(m_eff / m̄_eff) − 1| at the extreme masses of each type."""
    lo = np.array([mass[types == t].min() if (types == t).any() else masses[t] for t in range(masses.shape[0])])
    hi = np.array([mass[types == t].max() if (types == t).any() else masses[t] for t in range(masses.shape[0])])
    worst = 0.0
    for a in range(masses.shape[0]):
        for b in range(masses.shape[0]):
            ref = masses[a] * masses[b] / (masses[a] + masses[b])
            for ma in (lo[a], hi[a]):
                for mb in (lo[b], hi[b]):
                    worst = max(worst, abs(np.sqrt(ma * mb / (ma + mb) / ref) - 1.0))
        for ma in (lo[a], hi[a]):
            worst = max(worst, abs(np.sqrt(ma / masses[a]) - 1.0))
    return float(worst)


def _pair_property(name: str, table: np.ndarray) -> str:
    values = " ".join(repr(float(v)) for v in table.ravel())
    return f"fix {name} all property/global {name} peratomtypepair {table.shape[0]} {values}\n"


def write_liggghts_run(folder: str | Path, model: Model, positions: np.ndarray, velocities: np.ndarray, *,
                       steps: int, skin: float, physics: PeerPhysics | None = None) -> tuple[str, float]:
    """Write ``folder``/data.mochi and return (input script running ``steps`` steps, max_damping_error).

    Arguments as ``lammps_input.write_lammps_run``; the last thermo line holds step, atoms, kinetic
    energy [J] (c_ke) and contact count (v_contacts).
    """
    physics = physics or peer_physics(model)
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    types, _ = radius_types(model.radius)
    masses = type_masses(model.radius, model.mass, types, RADIUS_TYPES)
    error = max_damping_error(np.asarray(model.mass, np.float64), types, masses)
    wall_type = RADIUS_TYPES + 1
    box_lo, box_hi = box_padding(physics)
    write_sphere_data(folder / "data.mochi", positions, model.radius, physics.density, box_lo, box_hi,
                      velocities=velocities, material_index=types, type_count=wall_type)
    n_types = wall_type
    k = np.full((n_types, n_types), physics.stiffness)
    properties = (_pair_property("kn", k) + _pair_property("kt", k)
                  + _pair_property("gamman", gamman_table(physics, masses))
                  + _pair_property("gammat", np.zeros((n_types, n_types)))
                  + _pair_property("coefficientFriction", np.zeros((n_types, n_types))))
    model_args = "model hooke/stiffness tangential no_history"
    settings = "tangential_damping off"  # model keywords: after the models, after a wall's geometry
    walls = "".join(
        f"fix wall_{axis}{side} all wall/gran {model_args} primitive type {wall_type} {axis}plane {plane!r} "
        f"{settings}\n"
        for i, axis in enumerate("xyz") for side, plane in (("lo", physics.lo[i]), ("hi", physics.hi[i])))
    script = f"""# Mochi state and physics (benchmarks/peers/liggghts_input.py)
units si
atom_style granular
atom_modify map array
boundary f f f
newton off
communicate single vel yes
read_data data.mochi
neighbor {skin!r} bin
neigh_modify delay 0
{properties}pair_style gran {model_args} {settings}
pair_coeff * *
{walls}fix integrate all nve/sphere
{gravity_command(physics)}timestep {physics.dt!r}
{observe_and_run(steps)}"""
    return script, error
