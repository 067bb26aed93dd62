"""Mochi's contact law as LAMMPS ``pair_style granular`` / ``fix wall/gran granular`` coefficients.

The one home of the mapping (docs/physics.md, "The laws"; LAMMPS 29 Sep 2021, src/GRANULAR/pair_granular.cpp):

**Normal, linear** (``hooke k e_in damping tsuji``): LAMMPS computes F_n = k δ − α(e_in) sqrt(m_eff k) v_n with
Tsuji's polynomial α(e) (``tsuji_alpha``), so e_in with α(e_in) = 2β gives Mochi's γ_n = 2β sqrt(m_eff k)
exactly, for every pair of a polydisperse state (e_in is LAMMPS' parameterisation, not the restitution).

**Normal, Hertz** (``hertz 4/3·E* e_in damping tsuji``): LAMMPS' ``hertz kn`` is F_n = kn a δ with
a = sqrt(R* δ), damped by α sqrt(m_eff kn a); Mochi's 4/3 E* s δ − 2 sqrt(5/6) β sqrt(2 E* s m_eff) v_n is that
with kn = 4/3 E* (Mochi's mixing of E and ν, per type pair) and α = sqrt(5) β.

**Tangential**: the linear law's spring (``linear_history (2/7)k sqrt(2/7) μ``: k_t = 2/7 k and
γ_t = sqrt(2/7) γ_n = 2β sqrt(m_eff k_t)); Mindlin's (``mindlin 8G* sqrt(4G*/E*) μ``: k_t = 8 G* a and
γ_t = sqrt(8G*/(2E*)) γ_n, Mochi's); the damper (``linear_nohistory 1/β μ``: min(2 sqrt(m_eff k)|v_t|, μ|F_n|)).

**Rolling** (``rolling sds k_t γ_r μ_r``, linear law only): LAMMPS' γ_r is one number where Mochi's is
2β sqrt(m_eff k_t) per pair, so it is taken at the mean grain's m_eff (a pair of mean grains; a mean grain
against a wall): exact for equal grains, otherwise it differs by the spread of sqrt(m_eff). Hertz's
rolling spring grows with the contact in Mochi and is constant in LAMMPS: refused.

**Walls**: ``fix wall/gran granular`` on the box planes, per material; an open side has none (NULL), the
box ends there and LAMMPS loses a grain crossing it (Mochi deactivates it): ``LawLammps.box``.

**Friction cap**: LAMMPS caps at μ|F_n| (spring and damping), Mochi's ``friction_cap = "absolute"``. Mochi's
own 'clipped' and LIGGGHTS' 'spring' have no LAMMPS twin: ``resolve_law`` refuses them unless
``exact=False`` (the benchmarks, which state the difference).

What LAMMPS runs differently even so (docs/physics.md, the conventions table): the arm of the contact
point's velocity (LAMMPS r, Mochi r − δ/2), the walls' torque arm (r), a tangential spring turned into the
tangent plane keeping its length; its integrator is velocity Verlet (``fix nve/sphere``; ``fix nve`` without
rotation), Mochi's 'verlet'.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from ..contact_law import (TANGENTIAL_STIFFNESS_RATIO, hertz_tables, pair_tables, rolling_tables, wall_tables)
from ..errors import MochiError
from ..model import Model

_TSUJI = (1.2728, -4.2783, 11.087, -22.348, 27.467, -18.022, 4.8218)


def tsuji_alpha(e: float) -> float:
    """LAMMPS' α(e) of ``damping tsuji`` (Horner form of the same polynomial)."""
    result = 0.0
    for c in reversed(_TSUJI):
        result = result * e + c
    return result


def tsuji_input_for(alpha: float) -> float:
    """The e_in in [0, 1] with α(e_in) = ``alpha`` (α decreases monotonically there), to 1e-15.

    Raises:
        ValueError: ``alpha`` is outside what ``damping tsuji`` reaches.
    """
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


def _normal(model: str, stiffness: float, alpha: float) -> str:
    """``hooke|hertz kn e_in damping tsuji``, or undamped (``damping velocity`` 0) when α is 0 (e = 1)."""
    if alpha == 0.0:
        return f"{model} {float(stiffness)!r} 0.0 damping velocity"
    return f"{model} {float(stiffness)!r} {float(tsuji_input_for(alpha))!r} damping tsuji"


def hooke_coeffs(stiffness: float, beta: float, *, friction: float = 0.0, rolling: float = 0.0,
                 m_eff: float = 0.0, damper: bool = False) -> str:
    """``pair_coeff`` / ``wall/gran granular`` arguments of Mochi's linear law.

    Args:
        stiffness: k [N/m].
        beta: Mochi's damping ratio β of the pair.
        friction: Coulomb μ.
        rolling: Rolling resistance μ_r (0: no rolling model).
        m_eff: Effective mass [kg] at which the rolling damping is taken (see the module's docstring).
        damper: Mochi's history-free tangential damper instead of the spring (needs β > 0).
    """
    normal = _normal("hooke", stiffness, 2.0 * beta)
    if friction == 0.0 and rolling == 0.0:
        return f"{normal} tangential linear_nohistory 0.0 0.0"
    if damper:
        return f"{normal} tangential linear_nohistory {float(1.0 / beta)!r} {float(friction)!r}"
    k_t = TANGENTIAL_STIFFNESS_RATIO * stiffness
    text = f"{normal} tangential linear_history {float(k_t)!r} {math.sqrt(TANGENTIAL_STIFFNESS_RATIO)!r} {float(friction)!r}"
    if rolling > 0.0:
        text += f" rolling sds {float(k_t)!r} {float(2.0 * beta * math.sqrt(m_eff * k_t))!r} {float(rolling)!r}"
    return text


def hertz_coeffs(youngs: float, shear: float, beta: float, *, friction: float = 0.0) -> str:
    """Arguments of Mochi's Hertz–Mindlin law for a contact of effective moduli E*, G* [Pa]."""
    normal = _normal("hertz", 4.0 / 3.0 * youngs, math.sqrt(5.0) * beta)
    if friction == 0.0:
        return f"{normal} tangential linear_nohistory 0.0 0.0"
    return f"{normal} tangential mindlin {float(8.0 * shear)!r} {float(math.sqrt(4.0 * shear / youngs))!r} {float(friction)!r}"


def box_padding(lo, hi) -> tuple[np.ndarray, np.ndarray]:
    """A peer's simulation box: the domain [m] with a 1% margin, so the walls sit strictly inside it."""
    lo, hi = np.asarray(lo, np.float64), np.asarray(hi, np.float64)
    margin = 0.01 * (hi - lo)
    return lo - margin, hi + margin


@dataclass(frozen=True)
class LawLammps:
    """A model's contact law as LAMMPS arguments, SI units.

    Attributes:
        pair_coeffs: ``pair_coeff I J`` arguments per 1-based type pair (I ≤ J); type = material + 1.
        wall_coeffs: ``fix wall/gran granular`` arguments per type (index = material).
        rotation: Grains rotate (``fix nve/sphere``; otherwise ``fix nve`` and ω stays 0).
        dt: Time step [s].
        gravity: Constant gravity [m/s²], (3,).
        lo, hi: Wall planes (the domain box) [m], (3,) each; None for no wall on that side (an open side).
        domain_lo, domain_hi: The domain's corners [m] (where an open side's box face lies).
        notes: What LAMMPS will run differently, one sentence each (printed by the export).
    """

    pair_coeffs: dict[tuple[int, int], str]
    wall_coeffs: tuple[str, ...]
    rotation: bool
    dt: float
    gravity: tuple[float, float, float]
    lo: tuple[float, float, float]
    hi: tuple[float, float, float]
    notes: tuple[str, ...] = field(default=())
    domain_lo: tuple[float, float, float] | None = None
    domain_hi: tuple[float, float, float] | None = None

    @property
    def open_sides(self) -> bool:
        """Whether a side has no wall (grains leaving through it are lost to LAMMPS)."""
        return None in self.lo or None in self.hi

    def box(self) -> tuple[np.ndarray, np.ndarray]:
        """LAMMPS' simulation box [m], (3,) each: ``box_padding`` of the domain, without the margin at an
        open side, where the box ends and a grain crossing it is lost."""
        lo = np.asarray(self.domain_lo if self.domain_lo is not None else self.lo, np.float64)
        hi = np.asarray(self.domain_hi if self.domain_hi is not None else self.hi, np.float64)
        padded_lo, padded_hi = box_padding(lo, hi)
        return (np.where([v is None for v in self.lo], lo, padded_lo),
                np.where([v is None for v in self.hi], hi, padded_hi))


def unmappable(model: Model, *, exact: bool = True) -> list[str]:
    """What of ``model`` LAMMPS' granular package cannot run, one phrase each (empty: all of it maps).

    Args:
        exact: Refuse Mochi's friction cap and the Euler integrator, which LAMMPS runs differently
            (False: the benchmarks, which compare exactly those conventions and say so).
    """
    p = model.physics
    problems = []
    rough = (any(m.friction > 0 or m.rolling_friction > 0 for m in p.materials) or p.domain.wall_friction > 0
             or p.domain.wall_rolling_friction > 0)
    rolling = any(m.rolling_friction > 0 for m in p.materials) or p.domain.wall_rolling_friction > 0
    if any(m.cohesion > 0 for m in p.materials) or p.domain.wall_cohesion > 0:
        problems.append("cohesion (SJKR; this LAMMPS has only JKR and DMT adhesion)")
    if p.contact_normal == "hertz" and rolling:
        problems.append("rolling resistance with Hertz–Mindlin (LAMMPS' sds rolling spring is constant, "
                        "Mochi's grows with the contact)")
    if p.contact_normal == "hertz" and rough and p.friction_model == "damper":
        problems.append("the friction damper with Hertz–Mindlin")
    if rough and p.friction_model == "damper":
        if any(m.restitution >= 1.0 for m in p.materials) or p.domain.wall_restitution >= 1.0:
            problems.append("the friction damper with restitution 1")
        if rolling:
            problems.append("rolling resistance with the friction damper")
    if exact and rough and p.friction_cap != "absolute":
        problems.append(f"the friction cap '{p.friction_cap}' (LAMMPS caps at μ|F_n|: set [contact] "
                        "friction_cap = \"absolute\")")
    if exact and p.integrator != "verlet":
        problems.append(f"the '{p.integrator}' integrator (LAMMPS integrates with velocity Verlet: set "
                        "[contact] integrator = \"verlet\")")
    if p.gravity.rotation_axis is not None and p.gravity.rotation_rate != 0.0:
        problems.append("rotating gravity")
    if p.fields:
        problems.append(f"force fields ({', '.join(sorted({f.kind for f in p.fields}))})")
    if any(b.kind != "loose" for b in p.bodies):
        problems.append("glued or rigid bodies")
    if model.colliders is not None:
        names = ", ".join(f"'{c.name}'" for c in model.colliders.colliders)
        problems.append(f"the mesh colliders {names} (LAMMPS' fix wall/gran takes planes and simple regions, "
                        "not triangle meshes)")
    return problems


def resolve_law(model: Model, *, exact: bool = True) -> LawLammps:
    """The LAMMPS arguments of ``model``'s law.

    Raises:
        MochiError: one sentence naming everything LAMMPS cannot run (``unmappable``).
    """
    problems = unmappable(model, exact=exact)
    if problems:
        raise MochiError("LAMMPS cannot run what this scene uses: " + "; ".join(problems) + ".")
    p = model.physics
    materials, domain = p.materials, p.domain
    beta, mu = pair_tables(materials)
    wall_beta, wall_mu = wall_tables(materials, domain.wall_restitution, domain.wall_friction)
    roll, wall_roll = rolling_tables(materials, domain.wall_rolling_friction)
    damper = p.friction_model == "damper"
    count = len(materials)
    mass = np.asarray(model.mass, np.float64)
    index = np.asarray(model.material_index)
    # Mean grain mass of each material (the mean of all grains for a material no grain uses).
    mean = [float(mass[index == a].mean()) if np.any(index == a) else float(mass.mean()) for a in range(count)]
    try:
        if p.contact_normal == "hertz":
            moduli, wall_moduli = hertz_tables(materials, domain.wall_youngs_modulus, domain.wall_poisson_ratio)
            pairs = {(a + 1, b + 1): hertz_coeffs(*moduli[a, b], float(beta[a, b]), friction=float(mu[a, b]))
                     for a in range(count) for b in range(a, count)}
            walls = tuple(hertz_coeffs(*wall_moduli[a], float(wall_beta[a]), friction=float(wall_mu[a]))
                          for a in range(count))
        else:
            k = float(p.stiffness)
            pairs = {(a + 1, b + 1): hooke_coeffs(k, float(beta[a, b]), friction=float(mu[a, b]),
                                                  rolling=float(roll[a, b]),
                                                  m_eff=mean[a] * mean[b] / (mean[a] + mean[b]), damper=damper)
                     for a in range(count) for b in range(a, count)}
            walls = tuple(hooke_coeffs(k, float(wall_beta[a]), friction=float(wall_mu[a]),
                                       rolling=float(wall_roll[a]), m_eff=mean[a], damper=damper)
                          for a in range(count))
    except ValueError as exc:  # a damping beyond what Tsuji's α reaches (restitution near 0)
        raise MochiError(f"LAMMPS cannot damp this scene's contacts as Mochi does ({exc}: Tsuji's "
                         "damping spans restitutions from about 0.1 to just below 1, and 1 itself).") from None
    notes = []
    if any(float(roll[a, b]) > 0 for a in range(count) for b in range(count)) and np.ptp(model.radius) > 0:
        notes.append("LAMMPS' rolling damping is one number per type pair, taken at the mean grain's mass "
                     "(Mochi's varies with each pair's effective mass).")
    if p.rotation and (mu.any() or wall_mu.any()):
        notes.append("LAMMPS uses the full radius as the arm of the contact point's velocity "
                     "(Mochi r - delta/2) and at the walls for the torque too.")
    if domain.open_sides:
        notes.append("LAMMPS loses a grain once it is past an open side at a neighbour-list check, Mochi at the "
                     "step it crosses; the import keeps a lost grain inactive where it was last dumped.")
    # An open side has no wall (NULL): the box ends there, and LAMMPS loses the grains that cross it.
    lo = tuple(None if f"-{axis}" in domain.open_sides else float(domain.lo[i]) for i, axis in enumerate("xyz"))
    hi = tuple(None if f"+{axis}" in domain.open_sides else float(domain.hi[i]) for i, axis in enumerate("xyz"))
    return LawLammps(pair_coeffs=pairs, wall_coeffs=walls, rotation=bool(p.rotation), dt=float(p.dt),
                     gravity=tuple(float(g) for g in p.gravity.vector), lo=lo, hi=hi, notes=tuple(notes),
                     domain_lo=tuple(map(float, domain.lo)), domain_hi=tuple(map(float, domain.hi)))
