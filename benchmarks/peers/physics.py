"""The part of a Mochi model the LIGGGHTS input needs, checked against what it can reproduce.

The LIGGGHTS input reproduces Mochi's frictionless linear contact law exactly (engine.contact_law):

    F_n = k δ − γ_n v_n,   γ_n = 2 β(e) sqrt(m_eff k),   F_t = 0,

with m_eff = m_i m_j / (m_i + m_j) between grains and m_eff = m_i against a wall, β(e) Mochi's damping
ratio of the material's restitution (float32, as Mochi's tables hold it) and the walls at the domain's
box. Gravity is constant. Anything else (friction, several materials, open sides, rotating gravity,
fields, colliders, cohesion, Hertz–Mindlin) is refused with one sentence rather than run as a different
simulation. LAMMPS' input takes the engine's mapping instead (engine.lammps.law, through lammps_input.py),
which runs the full law; the box and gravity lines below are that mapping's too.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from engine.contact_law import pair_tables, wall_tables
from engine.errors import MochiError
from engine.lammps.deck import gravity_line
from engine.lammps.law import box_padding as padded_box
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
    """

    stiffness: float
    beta: float
    wall_beta: float
    dt: float
    gravity: tuple[float, float, float]
    density: float
    lo: tuple[float, float, float]
    hi: tuple[float, float, float]

    def damping(self, m_eff: np.ndarray | float, *, wall: bool = False) -> np.ndarray | float:
        """Mochi's normal damping coefficient γ_n = 2 β sqrt(m_eff k) [kg/s]."""
        beta = self.wall_beta if wall else self.beta
        return 2.0 * beta * np.sqrt(np.asarray(m_eff, np.float64) * self.stiffness)


def peer_physics(model: Model) -> PeerPhysics:
    """The physics of ``model`` for the LIGGGHTS input.

    Raises:
        MochiError: the model uses something the peer inputs do not reproduce.
    """
    p = model.physics
    problems = []
    if len(p.materials) != 1:
        problems.append(f"{len(p.materials)} materials (the peer inputs take one)")
    rough = (any(m.friction > 0 or m.rolling_friction > 0 for m in p.materials) or p.domain.wall_friction > 0
             or p.domain.wall_rolling_friction > 0)
    if rough:
        problems.append("friction (this peer input is frictionless)")
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
    beta, _ = pair_tables(p.materials)
    wall_beta, _ = wall_tables(p.materials, p.domain.wall_restitution, p.domain.wall_friction)
    return PeerPhysics(stiffness=float(p.stiffness), beta=float(beta[0, 0]), wall_beta=float(wall_beta[0]),
                       dt=float(p.dt), gravity=tuple(float(g) for g in p.gravity.vector),
                       density=float(p.materials[0].density), lo=tuple(map(float, p.domain.lo)),
                       hi=tuple(map(float, p.domain.hi)))


def gravity_command(physics: PeerPhysics) -> str:
    """``fix … gravity`` (LAMMPS and LIGGGHTS share the syntax): ``engine.lammps.deck.gravity_line``."""
    return gravity_line(physics.gravity)


def box_padding(physics: PeerPhysics) -> tuple[np.ndarray, np.ndarray]:
    """Simulation box of the peer: the domain with a 1% margin (``engine.lammps.law.box_padding``)."""
    return padded_box(physics.lo, physics.hi)


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
