"""A LAMMPS input (GRANULAR package) running Mochi's contact law on a Mochi state.

``pair_style granular`` with ``hooke k e_in … damping tsuji`` computes

    F_n = k δ − α(e_in) sqrt(m_eff k) v_n,   α(e) = 1.2728 − 4.2783 e + 11.087 e² − 22.348 e³
                                                      + 27.467 e⁴ − 18.022 e⁵ + 4.8218 e⁶

(LAMMPS' pair_granular.cpp; ``fix wall/gran granular`` the same with m_eff = m_i), so choosing e_in with
α(e_in) = 2β reproduces Mochi's γ_n = 2β sqrt(m_eff k) exactly, for every pair of a polydisperse state.
e_in is only LAMMPS' parameterisation here, not the physical restitution (Tsuji's α targets Hertz).
The paper's model: ``tangential linear_nohistory 0 0`` gives F_t = 0. Integration is LAMMPS' velocity
Verlet (``nve/sphere``) against Mochi's semi-implicit Euler: same cost class, trajectories differ at O(dt).

The add-on's default physics (a model with friction: rotation, velocity Verlet on both sides):
``tangential linear_history (2/7)k sqrt(2/7) μ`` is Mochi's spring k_t = 2/7 k with γ_t = sqrt(2/7) γ_n =
2β sqrt(m_eff k_t), exactly; ``rolling sds k_t γ_r μ_r`` is Mochi's rolling spring, but LAMMPS' γ_r is one
number where Mochi's is 2β sqrt(m_eff k_t) per pair: it is taken at the mean grain's m_eff (a pair of
mean grains; a mean grain against a wall), so rolling damping differs by the spread of sqrt(m_eff).
LAMMPS caps friction at μ|F_n| (damping included), Mochi at μ max(F_n, 0) (docs/physics.md): same work,
not the same bits.
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np

from engine.contact_law import TANGENTIAL_STIFFNESS_RATIO
from engine.model import Model

from .data_file import write_sphere_data
from .physics import PeerPhysics, box_padding, gravity_command, observe_and_run, peer_physics

_TSUJI = (1.2728, -4.2783, 11.087, -22.348, 27.467, -18.022, 4.8218)


def tsuji_alpha(e: float) -> float:
    """LAMMPS' α(e) of ``damping tsuji`` (Horner form of the same polynomial)."""
    result = 0.0
    for c in reversed(_TSUJI):
        result = result * e + c
    return result


def tsuji_input_for(alpha: float) -> float:
    """The e_in in [0, 1] with α(e_in) = ``alpha`` (α decreases monotonically there), to 1e-15."""
    if not tsuji_alpha(1.0) <= alpha <= tsuji_alpha(0.0):
        raise ValueError(f"damping tsuji reaches α in [{tsuji_alpha(1.0):.4g}, {tsuji_alpha(0.0):.4g}], "
                         f"not {alpha:.4g}")
    lo, hi = 0.0, 1.0
    for _ in range(200):
        mid = 0.5 * (lo + hi)
        if tsuji_alpha(mid) > alpha:
            lo = mid
        else:
            hi = mid
    return 0.5 * (lo + hi)


def granular_coeffs(stiffness: float, beta: float, *, friction: float = 0.0, rolling: float = 0.0,
                    m_eff: float = 0.0) -> str:
    """``hooke … tangential … damping tsuji [rolling sds …]`` arguments reproducing k and γ_n = 2β sqrt(m_eff k)
    and, with ``friction`` or ``rolling``, Mochi's tangential and rolling springs (rolling damping at
    ``m_eff`` [kg], see the module's docstring)."""
    normal = f"hooke {stiffness!r} {tsuji_input_for(2.0 * beta)!r}"
    if friction == 0.0 and rolling == 0.0:
        return f"{normal} tangential linear_nohistory 0.0 0.0 damping tsuji"
    k_t = TANGENTIAL_STIFFNESS_RATIO * stiffness
    model = (f"{normal} damping tsuji tangential linear_history {k_t!r} {math.sqrt(TANGENTIAL_STIFFNESS_RATIO)!r} "
             f"{friction!r}")
    if rolling > 0.0:
        model += f" rolling sds {k_t!r} {2.0 * beta * math.sqrt(m_eff * k_t)!r} {rolling!r}"
    return model


def write_lammps_run(folder: str | Path, model: Model, positions: np.ndarray, velocities: np.ndarray, *,
                     steps: int, skin: float, physics: PeerPhysics | None = None) -> str:
    """Write ``folder``/data.mochi and return the input script running ``steps`` steps.

    Args:
        folder: Run folder (created).
        model: Mochi model (radii, masses, physics) of the state.
        positions, velocities: The state [m], [m/s], shape (particle_count, 3).
        steps: Steps to run.
        skin: Neighbour skin [m] (``neighbor skin bin``, rebuilt when any grain moved half of it).
        physics: Resolved physics (default ``peer_physics(model)``).

    The last thermo line holds step, atoms, total kinetic energy [J] (c_ke) and contact count
    (c_contacts: pairs of touching grains, walls excluded).
    """
    physics = physics or peer_physics(model, frictional=True)
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    box_lo, box_hi = box_padding(physics)
    write_sphere_data(folder / "data.mochi", positions, model.radius, physics.density, box_lo, box_hi,
                      velocities=velocities, type_count=1)
    mean_mass = float(np.mean(model.mass))
    pair = granular_coeffs(physics.stiffness, physics.beta, friction=physics.friction, rolling=physics.rolling,
                           m_eff=0.5 * mean_mass)
    wall = granular_coeffs(physics.stiffness, physics.wall_beta, friction=physics.wall_friction,
                           rolling=physics.wall_rolling, m_eff=mean_mass)
    walls = "".join(f"fix wall_{axis} all wall/gran granular {wall} {axis}plane {physics.lo[i]!r} {physics.hi[i]!r}\n"
                    for i, axis in enumerate("xyz"))
    return f"""# Mochi state and physics (benchmarks/peers/lammps_input.py)
units si
atom_style sphere
atom_modify map array
boundary f f f
newton off
comm_modify vel yes
read_data data.mochi
neighbor {skin!r} bin
neigh_modify delay 0 every 1 check yes
pair_style granular
pair_coeff * * {pair}
{walls}fix integrate all nve/sphere
{gravity_command(physics)}timestep {physics.dt!r}
{observe_and_run(steps)}"""
