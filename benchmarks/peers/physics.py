"""The part of a Mochi model a peer input needs, checked against what the peer inputs can reproduce.

Both peer inputs reproduce Mochi's frictionless linear contact law exactly (engine.contact_law):

    F_n = k δ − γ_n v_n,   γ_n = 2 β(e) sqrt(m_eff k),   F_t = 0,

with m_eff = m_i m_j / (m_i + m_j) between grains and m_eff = m_i against a wall, β(e) Mochi's damping
ratio of the material's restitution (float32, as Mochi's tables hold it) and the walls at the domain's
box. Gravity is constant. The LAMMPS input also runs the add-on's default physics (``frictional``:
rotation, a tangential spring with Coulomb friction, rolling resistance; lammps_input.py says what
differs). Anything else (several materials, open sides, rotating gravity, fields, colliders,
cohesion, Hertz–Mindlin) is refused with one sentence rather than run as a different simulation.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from engine.contact_law import pair_tables, rolling_tables, wall_tables
from engine.errors import MochiError
from engine.model import Model


@dataclass(frozen=True)
class PeerPhysics:
    """Resolved physics of a peer run, SI units.

    Attributes:
        stiffness: Normal spring k [N/m].
        beta: Damping ratio β between grains (Mochi's float32 value, as float).
        wall_beta: Damping ratio β between a grain and a wall.
        dt: Time step [s].
        gravity: Gravity vector [m/s²], (3,).
        density: Grain density [kg/m³].
        lo, hi: Wall planes (the domain box) [m], (3,) each.
        friction, wall_friction: Coulomb μ between grains and against the walls (0 unless ``frictional``).
        rolling, wall_rolling: Rolling resistance μ_r between grains and against the walls.
    """

    stiffness: float
    beta: float
    wall_beta: float
    dt: float
    gravity: tuple[float, float, float]
    density: float
    lo: tuple[float, float, float]
    hi: tuple[float, float, float]
    friction: float = 0.0
    wall_friction: float = 0.0
    rolling: float = 0.0
    wall_rolling: float = 0.0

    def damping(self, m_eff: np.ndarray | float, *, wall: bool = False) -> np.ndarray | float:
        """Mochi's normal damping coefficient γ_n = 2 β sqrt(m_eff k) [kg/s]."""
        beta = self.wall_beta if wall else self.beta
        return 2.0 * beta * np.sqrt(np.asarray(m_eff, np.float64) * self.stiffness)


def peer_physics(model: Model, *, frictional: bool = False) -> PeerPhysics:
    """The physics of ``model`` for a peer input.

    Args:
        frictional: The peer input can run friction with a tangential spring, rotation and rolling
            resistance (the LAMMPS input); otherwise the model must be frictionless.

    Raises:
        MochiError: the model uses something the peer inputs do not reproduce.
    """
    p = model.physics
    problems = []
    if len(p.materials) != 1:
        problems.append(f"{len(p.materials)} materials (the peer inputs take one)")
    rough = (any(m.friction > 0 or m.rolling_friction > 0 for m in p.materials) or p.domain.wall_friction > 0
             or p.domain.wall_rolling_friction > 0)
    if rough and not frictional:
        problems.append("friction (this peer input is frictionless)")
    if rough and frictional and not (p.rotation and p.friction_model == "spring"):
        problems.append("friction without rotation and a tangential spring (LAMMPS' linear_history)")
    if p.contact_normal != "hooke" or any(m.cohesion > 0 for m in p.materials) or p.domain.wall_cohesion > 0:
        problems.append("Hertz–Mindlin or cohesion (the peer inputs run the linear law)")
    if p.domain.open_sides:
        problems.append("open sides")
    if p.gravity.rotation_axis is not None and p.gravity.rotation_rate != 0.0:
        problems.append("rotating gravity")
    if p.fields:
        problems.append("force fields")
    if model.colliders is not None:
        problems.append("colliders")
    if problems:
        raise MochiError("The peer inputs cannot reproduce a scene with " + ", ".join(problems) + ".")
    beta, mu = pair_tables(p.materials)
    wall_beta, wall_mu = wall_tables(p.materials, p.domain.wall_restitution, p.domain.wall_friction)
    roll, wall_roll = rolling_tables(p.materials, p.domain.wall_rolling_friction)
    return PeerPhysics(stiffness=float(p.stiffness), beta=float(beta[0, 0]), wall_beta=float(wall_beta[0]),
                       dt=float(p.dt), gravity=tuple(float(g) for g in p.gravity.vector),
                       density=float(p.materials[0].density), lo=tuple(map(float, p.domain.lo)),
                       hi=tuple(map(float, p.domain.hi)), friction=float(mu[0, 0]), wall_friction=float(wall_mu[0]),
                       rolling=float(roll[0, 0]), wall_rolling=float(wall_roll[0]))


def gravity_command(physics: PeerPhysics) -> str:
    """``fix … gravity`` (LAMMPS and LIGGGHTS share the syntax: magnitude, then a direction)."""
    g = np.asarray(physics.gravity, np.float64)
    magnitude = float(np.linalg.norm(g))
    if magnitude == 0.0:
        return ""
    d = g / magnitude
    return f"fix grav all gravity {magnitude!r} vector {d[0]!r} {d[1]!r} {d[2]!r}\n"


def box_padding(physics: PeerPhysics) -> tuple[np.ndarray, np.ndarray]:
    """Simulation box of the peer: the domain with a 1% margin, so walls sit strictly inside it."""
    lo, hi = np.asarray(physics.lo), np.asarray(physics.hi)
    margin = 0.01 * (hi - lo)
    return lo - margin, hi + margin


def observe_and_run(steps: int) -> str:
    """The tail of every peer input: run ``steps`` steps and print, at the end, the kinetic energy [J] and
    the grain–grain contact count that show the peer did the same work as Mochi (read by ``parse_thermo``)."""
    return f"""compute ke_atom all ke/atom
compute ke all reduce sum c_ke_atom
compute contact_atom all contact/atom
compute contact_sum all reduce sum c_contact_atom
variable contacts equal c_contact_sum/2
thermo_style custom step atoms c_ke v_contacts
thermo_modify norm no lost error
thermo {steps}
run {steps}
"""
