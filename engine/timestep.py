"""Choosing and checking the time step and the contact stiffness.

The linear contact law is a spring k between two masses; its natural frequency for the lightest pair
(two of the lightest particles, m_eff = m_min/2) is ω = sqrt(2k/m_min) and a collision lasts
t_c = π/ω. Semi-implicit Euler with the critically damped tangential dashpot is stable only for
dt < 2(sqrt(1+ζ²) − ζ)/ω with ζ = 1, i.e. dt < 0.83/ω; we refuse anything larger.

'auto' stiffness is the softest spring that meets two overlap targets, and 'auto' dt resolves the
lightest collision with it in ``STEPS_PER_CONTACT`` steps, so the steps per frame go as sqrt(k):

* Impact (transient): a grain hitting a wall, a collider or a resting bed at the expected impact speed v
  (``engine.scene``: its initial speed plus a fall from the height it can really reach; a packed object
  falls as a block and its grains land at the block's speed) overlaps at most δ = D(e) v sqrt(m/k), where
  D(e) < 1 is how much the normal dashpot of the scene's least damped contact (largest restitution e)
  shortens the compression of an undamped spring (``impact_damping_factor``). The target is
  ``TARGET_OVERLAP`` = 10% of the radius: the deepest moment of the hardest hit, for a few steps.
* At rest: a column of grains as tall as the domain (along gravity) weighs on its lowest contact,
  δ = H m g / (2 k r) (H/2r grains of mass m); the target is ``REST_OVERLAP`` = 5%, so a settled pile
  never looks squashed.

The impact bound is what sets k in practice; it is the honest version of the older choice (5% at the
speed of a fall from the middle of each object, undamped), which asked ~3.4× more steps per frame for
overlaps no render can tell apart: the issue's bunny-and-Suzanne bowl scene went from 6,203 to about
1,800 steps per frame, and the settled bed stays under 5% (tests/addon/test_default_steps.py, tests/engine/test_rest_overlap.py).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from .errors import MochiError

#: Steps per collision that ``auto`` aims for.
STEPS_PER_CONTACT = 10
#: Overlap, as a fraction of the radius, that ``auto`` stiffness lets a grain reach for an instant when it
#: hits a wall or a resting bed at the expected impact speed (module docstring).
TARGET_OVERLAP = 0.10
#: Overlap, as a fraction of the radius, that ``auto`` stiffness allows under the weight of a resting
#: column of grains as tall as the domain.
REST_OVERLAP = 0.05
#: Largest expected overlap a bake accepts when dt is fixed and stiffness 'auto' (refused above, with
#: the dt that would do); a stiffness the user gives is the user's choice, and gets a note above it.
MAX_OVERLAP = 0.10
#: Overlap, as a fraction of the radius, at which two grains hitting each other pass through each other: a
#: given stiffness this soft is still baked (it is the user's), with a note that says so.
PASS_THROUGH_OVERLAP = 1.0
#: Largest damping ratio in the contact law (the tangential dashpot is critically damped).
MAX_DAMPING_RATIO = 1.0


@dataclass(frozen=True)
class TimeStepChoice:
    """Resolved stepping.

    Attributes:
        dt: Time step [s].
        stiffness: Normal stiffness [N/m].
        steps_per_frame: Steps between cached frames.
        critical_dt: Largest stable step for this stiffness and the lightest particle [s].
        contact_duration: Duration of a collision between the two lightest particles [s].
        impact_speed: The expected impact speed the choice was made for [m/s].
        expected_overlap: Overlap of a grain hitting a wall at ``impact_speed``, as a fraction of its
            radius (the largest over the grains).
        rest_overlap: Overlap under a resting column as tall as the domain, as a fraction of the radius.
        notes: Human-readable remarks (e.g. 'dt resolves a collision in only 4 steps').
    """

    dt: float
    stiffness: float
    steps_per_frame: int
    critical_dt: float
    contact_duration: float
    impact_speed: float = 0.0
    expected_overlap: float = 0.0
    rest_overlap: float = 0.0
    notes: tuple[str, ...] = ()


#: Fraction of the Rayleigh time that 'auto' dt never exceeds with Hertz–Mindlin (LIGGGHTS warns above 20%).
RAYLEIGH_FRACTION = 0.2


@dataclass(frozen=True)
class HertzContact:
    """One kind of Hertz–Mindlin contact a scene can have: the stiffest of its kind is what dt must resolve.

    Attributes:
        youngs: E* of the pair [Pa] (engine.contact_law.effective_moduli).
        mass: m_eff [kg]; radius: R* [m]; grain_radius: the smaller grain's radius r [m].
        wall: A grain against a wall or mesh collider (what a resting column stands on).
    """

    youngs: float
    mass: float
    radius: float
    grain_radius: float
    wall: bool = False

    def peak_overlap(self, speed: float) -> float:
        """Largest overlap δ_max [m] of an undamped Hertz impact at ``speed`` [m/s] (Johnson, Contact
        Mechanics, §11.4): (15 m v² / (16 E* sqrt(R*)))^(2/5)."""
        return (15.0 * self.mass * speed * speed / (16.0 * self.youngs * math.sqrt(self.radius))) ** 0.4

    def peak_stiffness(self, speed: float) -> float:
        """Tangent stiffness dF/dδ = 2 E* sqrt(R* δ) [N/m] at the deepest point of an impact at ``speed``."""
        return 2.0 * self.youngs * math.sqrt(self.radius * self.peak_overlap(speed))

    def duration(self, speed: float) -> float:
        """Duration [s] of an undamped Hertz impact at ``speed`` [m/s]: 2.87 (m²/(R* E*² v))^(1/5)."""
        return 2.87 * (self.mass ** 2 / (self.radius * self.youngs ** 2 * speed)) ** 0.2


def hertz_contacts(materials, wall_youngs: float, wall_poisson: float, mass: np.ndarray, radius: np.ndarray,
                   material_index: np.ndarray) -> tuple[HertzContact, ...]:
    """The lightest grain of each material against the lightest of every material and against the walls
    (``HertzContact`` each), for ``choose_time_step``.

    Args:
        materials: The material table (engine.model.Material).
        wall_youngs, wall_poisson: The walls' (and mesh colliders') E [Pa] and ν.
        mass, radius: float32 (n,) [kg], [m]; material_index: int32 (n,).
    """
    from .contact_law import effective_moduli

    lightest = {}
    for index in np.unique(material_index):
        mine = np.flatnonzero(material_index == index)
        k = mine[np.argmin(mass[mine])]
        lightest[int(index)] = (float(mass[k]), float(radius[k]))
    contacts = []
    for a, (ma, ra) in lightest.items():
        A = materials[a]
        e_wall, _ = effective_moduli(A.youngs_modulus, A.poisson_ratio, wall_youngs, wall_poisson)
        contacts.append(HertzContact(e_wall, ma, ra, ra, wall=True))
        for b, (mb, rb) in lightest.items():
            if b >= a:
                B = materials[b]
                e_pair, _ = effective_moduli(A.youngs_modulus, A.poisson_ratio, B.youngs_modulus, B.poisson_ratio)
                contacts.append(HertzContact(e_pair, ma * mb / (ma + mb), ra * rb / (ra + rb), min(ra, rb)))
    return tuple(contacts)


def rayleigh_time(materials, radius: np.ndarray, material_index: np.ndarray) -> float:
    """Shortest Rayleigh time [s] of the grains: π r sqrt(ρ/G) / (0.1631 ν + 0.8766), G = E/(2(1 + ν)),
    the time a surface wave takes across a grain (the usual bound on a Hertz–Mindlin dt)."""
    times = []
    for index in np.unique(material_index):
        m = materials[int(index)]
        shear = m.youngs_modulus / (2.0 * (1.0 + m.poisson_ratio))
        r = float(radius[material_index == index].min())
        times.append(math.pi * r * math.sqrt(m.density / shear) / (0.1631 * m.poisson_ratio + 0.8766))
    return min(times)


def pair_frequency(stiffness: float, mass_min: float) -> float:
    """ω [rad/s] of a collision between two particles of the smallest mass [kg]."""
    return math.sqrt(2.0 * stiffness / mass_min)


def critical_time_step(stiffness: float, mass_min: float) -> float:
    """Largest stable dt [s] for stiffness [N/m] and the lightest particle's mass [kg]."""
    zeta = MAX_DAMPING_RATIO
    return 2.0 * (math.sqrt(1.0 + zeta * zeta) - zeta) / pair_frequency(stiffness, mass_min)


def expected_impact_speed(initial_speed_max: float, acceleration_max: float, drop_height: float) -> float:
    """Speed [m/s] a particle can reach: its initial speed plus a free fall over ``drop_height``."""
    return initial_speed_max + math.sqrt(2.0 * max(acceleration_max, 0.0) * max(drop_height, 0.0))


def impact_damping_factor(restitution: float) -> float:
    """D(e): the largest compression of the spring-dashpot of restitution e, as a fraction of an
    undamped spring's v/ω (for ζ = β(e) of ``engine.contact_law.damping_ratio``):
    D = exp(−ζ/sqrt(1−ζ²) · atan(sqrt(1−ζ²)/ζ)); 1 for e = 1, 0.74 for e = 0.5."""
    from .contact_law import damping_ratio

    zeta = damping_ratio(restitution)
    if zeta <= 0.0:
        return 1.0
    root = math.sqrt(max(1.0 - zeta * zeta, 1e-12))
    return math.exp(-zeta / root * math.atan(root / zeta))


def _mass_per_area(mass: np.ndarray, radius: np.ndarray) -> float:
    """max m / r² over the grains [kg/m²]: the grain that overlaps most, at impact and at rest."""
    return float((mass.astype(np.float64) / radius.astype(np.float64) ** 2).max())


def expected_overlap(stiffness: float, mass: np.ndarray, radius: np.ndarray, impact_speed: float, *,
                     restitution: float = 1.0) -> float:
    """Largest overlap, as a fraction of the radius, of a grain that hits a wall (or a resting bed,
    whose effective mass is about the grain's) at ``impact_speed`` [m/s]: δ = D(e) v sqrt(m / k) / r,
    with D the damping factor of the least damped contact (largest ``restitution``)."""
    return impact_damping_factor(restitution) * impact_speed * math.sqrt(_mass_per_area(mass, radius) / stiffness)


def rest_overlap(stiffness: float, mass: np.ndarray, radius: np.ndarray, *, gravity: float,
                 column_height: float) -> float:
    """Overlap, as a fraction of the radius, of the lowest contact under a resting column of grains
    ``column_height`` [m] tall in ``gravity`` [m/s²]: δ / r = H m g / (2 k r²)."""
    return column_height * gravity * _mass_per_area(mass, radius) / (2.0 * stiffness)


def fixed_steps_per_frame(*, fps: float, dt: float | None = None, substeps: int | None = None) -> int | None:
    """Steps per frame of a time step the user fixed (``dt`` [s], else ``substeps``) at ``fps`` [1/s], as
    ``choose_time_step`` counts them; None for 'auto' (``steps_per_frame_before_packing``)."""
    if dt is None:
        return None if substeps is None else max(1, int(substeps))
    return max(1, round((1.0 / fps) / dt))  # the same rounding as choose_time_step always had


def steps_per_frame_before_packing(*, fps: float, dt: float | None, substeps: int | None, stiffness: float | None,
                                   radius, density, restitution: float, fall_height: float, initial_speed: float,
                                   gravity: float, column_height: float, youngs_modulus=None, poisson_ratio=None,
                                   wall_moduli: tuple[float, float] = (5.0e6, 0.3)) -> int:
    """The steps per frame ``choose_time_step`` will choose for grains not packed yet [steps].

    'auto' depends on the grains only through the lightest one and the largest m/r² (the largest grain of
    the densest material), so one grain of each size and material stands for a whole packing. With
    Hertz–Mindlin it depends on the lightest grain of each material against the lightest of every other
    and the walls (``hertz_contacts``), and on the smallest grain's Rayleigh time: each size counted as a
    material of its own gives those pairs among its own, and the quickest of them is the smallest sizes'
    pair, as after packing. The fall and the initial speed are the caller's bound (engine.scene measures
    them on the packed grains, and counts colliders and fields, which this leaves out).

    Args:
        radius: Radius of each grain size [m], shape (k,).
        density: Density of each [kg/m³], shape (k,).
        restitution: Largest restitution of the scene's contacts.
        fall_height: Fall before the grains hit something [m]; initial_speed: fastest start [m/s].
        gravity: Gravity's magnitude [m/s²]; column_height: the domain along gravity [m].
        youngs_modulus: Hertz–Mindlin only: Young's modulus of each size's material [Pa], shape (k,); None
            for the linear law (``stiffness``).
        poisson_ratio: Hertz–Mindlin only: Poisson's ratio of each size's material, shape (k,).
        wall_moduli: Hertz–Mindlin only: (Young's modulus [Pa], Poisson's ratio) of the walls and colliders.

    Raises:
        MochiError: as ``choose_time_step`` (a dt that would blow up, a stiffness given with Hertz...).
    """
    r = np.asarray(radius, np.float64)
    # float32, as engine.model.particle_masses and the model's radii.
    mass = (np.asarray(density, np.float64) * (4.0 / 3.0 * math.pi) * r ** 3).astype(np.float32)
    impact = expected_impact_speed(initial_speed, gravity, fall_height)
    contacts, rayleigh = None, math.inf
    if youngs_modulus is not None:
        from .model import Material

        columns = (np.broadcast_to(x, r.shape) for x in (density, youngs_modulus, poisson_ratio))
        materials = tuple(Material(density=float(d), youngs_modulus=float(e), poisson_ratio=float(v))
                          for d, e, v in zip(*columns))
        index = np.arange(len(r), dtype=np.int32)
        r32 = r.astype(np.float32)
        contacts = hertz_contacts(materials, wall_moduli[0], wall_moduli[1], mass, r32, index)
        rayleigh = rayleigh_time(materials, r32, index)
    return choose_time_step(dt=dt, stiffness=stiffness, substeps=substeps, fps=fps, mass=mass,
                            radius=r.astype(np.float32), impact_speed=impact, restitution=restitution,
                            gravity=gravity, column_height=column_height, hertz=contacts,
                            rayleigh=rayleigh).steps_per_frame


def choose_time_step(*, dt: float | None, stiffness: float | None, substeps: int | None, fps: float,
                     mass: np.ndarray, radius: np.ndarray, impact_speed: float, restitution: float = 1.0,
                     gravity: float = 0.0, column_height: float = 0.0,
                     hertz: tuple[HertzContact, ...] | None = None, rayleigh: float = math.inf) -> TimeStepChoice:
    """Resolve 'auto' dt/stiffness and check stability and overlap.

    Args:
        dt: Given step [s] or None for auto.
        stiffness: Given stiffness [N/m] or None for auto.
        substeps: Steps per frame, used when dt is None and given.
        fps: Frames per second of the cache.
        mass: Particle masses [kg], shape (particle_count,).
        radius: Particle radii [m], shape (particle_count,).
        impact_speed: Fastest expected approach speed [m/s] (``expected_impact_speed``).
        restitution: Largest restitution of any contact of the scene (the least damped impact).
        gravity: |g| [m/s²], for the resting overlap.
        column_height: Tallest column of grains that can rest on one contact [m] (the domain's height
            along gravity).
        hertz: The scene's Hertz–Mindlin contacts (``hertz_contacts``), None for the linear law. The
            stiffness is then not a choice: the returned one is the linear spring as stiff as the stiffest
            contact at its deepest (``HertzContact.peak_stiffness`` at the expected impact speed), which
            sets dt; overlaps are Hertz's.
        rayleigh: The grains' shortest Rayleigh time [s] (``rayleigh_time``); 'auto' dt stays under
            ``RAYLEIGH_FRACTION`` of it (Hertz–Mindlin only).

    Raises:
        MochiError: a dt that would blow up, naming dt, stiffness, the lightest mass and the limit; a
            fixed dt whose 'auto' stiffness would let grains overlap more than ``MAX_OVERLAP``, naming
            the dt that would not.
    """
    mass_min = float(mass.min())
    frame_time = 1.0 / fps
    if dt is None and substeps is not None:
        dt = frame_time / substeps
    v = max(impact_speed, 0.1)
    if hertz is not None:
        return _choose_hertz_time_step(dt=dt, stiffness=stiffness, fps=fps, mass_min=mass_min, speed=v,
                                       contacts=hertz, rayleigh=rayleigh, gravity=gravity,
                                       column_height=column_height)
    auto_stiffness = stiffness is None
    if stiffness is None:
        if dt is not None:
            # Stiffest spring that still resolves the lightest collision in STEPS_PER_CONTACT steps.
            omega = math.pi / (STEPS_PER_CONTACT * dt)
            stiffness = 0.5 * mass_min * omega * omega
        else:
            # The softest spring that stops the heaviest-per-area grain at TARGET_OVERLAP of its radius
            # and holds a resting column at REST_OVERLAP (module docstring); a hair stiffer so that
            # rounding never reports the target itself as exceeded.
            ratio = _mass_per_area(mass, radius)
            impact = ratio * (impact_damping_factor(restitution) * v / TARGET_OVERLAP) ** 2
            rest = column_height * gravity * ratio / (2.0 * REST_OVERLAP)
            stiffness = float(max(impact, rest)) * (1.0 + 1e-9)
    t_contact = math.pi / pair_frequency(stiffness, mass_min)
    if dt is None:
        dt = t_contact / STEPS_PER_CONTACT
        steps = max(1, math.ceil(frame_time / dt))
        dt = frame_time / steps
    steps_per_frame = fixed_steps_per_frame(fps=fps, dt=dt)
    limit = critical_time_step(stiffness, mass_min)
    if dt > limit:
        raise MochiError(
            f"The time step dt = {dt:.3g} s would blow up: with stiffness {stiffness:.3g} N/m and the "
            f"lightest particle of {mass_min:.3g} kg it must be below {limit:.3g} s (use a smaller dt, "
            "more substeps, a softer stiffness, or 'auto').")
    overlap = expected_overlap(stiffness, mass, radius, v, restitution=restitution)
    resting = rest_overlap(stiffness, mass, radius, gravity=gravity, column_height=column_height)
    if auto_stiffness and overlap > MAX_OVERLAP:
        # Overlap grows as dt does (the stiffest spring a dt resolves goes as 1/dt²).
        raise MochiError(
            f"With dt = {dt:.3g} s, 'auto' stiffness ({stiffness:.3g} N/m, the stiffest this dt resolves) "
            f"lets grains hitting at {v:.3g} m/s overlap {overlap:.0%} of their radius; use dt ≤ "
            f"{dt * MAX_OVERLAP / overlap:.2g} s, or 'auto', to stay under {MAX_OVERLAP:.0%}.")
    notes = []
    if t_contact / dt < 5:
        notes.append(f"dt resolves the lightest collision in only {t_contact / dt:.1f} steps.")
    if overlap > MAX_OVERLAP:
        # A stiffness the user gives is baked as given, even past 100% (grains passing through each other):
        # the overlap is an estimate from the expected impact speed, and a scene whose grains never hit that
        # hard is the user's to judge. The note says what it means and the stiffness that would not.
        through = " (they would pass through each other)" if overlap >= PASS_THROUGH_OVERLAP else ""
        notes.append(f"Grains hitting at {v:.3g} m/s would overlap about {overlap:.0%} of their radius{through} with "
                     f"stiffness {stiffness:.3g} N/m; {stiffness * (overlap / MAX_OVERLAP) ** 2 * 1.02:.3g} N/m would "
                     f"keep it under {MAX_OVERLAP:.0%}.")
    return TimeStepChoice(dt=float(dt), stiffness=float(stiffness), steps_per_frame=int(steps_per_frame),
                          critical_dt=limit, contact_duration=t_contact, impact_speed=float(v),
                          expected_overlap=float(overlap), rest_overlap=float(resting), notes=tuple(notes))


def _choose_hertz_time_step(*, dt, stiffness, fps, mass_min, speed, contacts, rayleigh, gravity,
                            column_height) -> TimeStepChoice:
    """``choose_time_step`` for Hertz–Mindlin (see its ``hertz`` argument)."""
    if stiffness is not None:
        raise MochiError(f"A stiffness ({stiffness:.3g} N/m) is given, but the Hertz contact law takes its stiffness "
                         "from the materials' Young's modulus: leave stiffness 'auto' or use the linear law.")
    frame_time = 1.0 / fps
    # The linear spring whose lightest pair (m_min/2, as choose_time_step counts) is as quick as the quickest
    # Hertz contact at its deepest: its stability limit and collision time are the Hertz ones' (conservative).
    quickest = max(c.peak_stiffness(speed) / c.mass for c in contacts)
    equivalent = 0.5 * mass_min * quickest
    t_contact = min(c.duration(speed) for c in contacts)
    limit = critical_time_step(equivalent, mass_min)
    if dt is None:
        dt = min(t_contact / STEPS_PER_CONTACT, math.pi / math.sqrt(quickest) / STEPS_PER_CONTACT,
                 RAYLEIGH_FRACTION * rayleigh)
        steps = max(1, math.ceil(frame_time / dt))
        dt = frame_time / steps
    if dt > limit:
        raise MochiError(
            f"The time step dt = {dt:.3g} s would blow up: the stiffest Hertz contact (at {speed:.3g} m/s) is as "
            f"stiff as {equivalent:.3g} N/m on the lightest particle of {mass_min:.3g} kg, so dt must be below "
            f"{limit:.3g} s (use a smaller dt, more substeps, a softer Young's modulus, or 'auto').")
    overlap = max(c.peak_overlap(speed) / c.grain_radius for c in contacts)
    # A resting column H tall of grains of mass m presses H m g / (2 r) on its lowest (wall) contact.
    resting = 0.0
    for c in (c for c in contacts if c.wall):
        load = column_height * gravity * c.mass / (2.0 * c.grain_radius)
        resting = max(resting, (3.0 * load / (4.0 * c.youngs * math.sqrt(c.radius))) ** (2.0 / 3.0) / c.grain_radius)
    notes = []
    if t_contact / dt < 5:
        notes.append(f"dt resolves the quickest Hertz collision in only {t_contact / dt:.1f} steps.")
    if dt > RAYLEIGH_FRACTION * rayleigh:
        notes.append(f"dt is {dt / rayleigh:.0%} of the grains' Rayleigh time ({rayleigh:.3g} s); above "
                     f"{RAYLEIGH_FRACTION:.0%} dense packings may not be resolved.")
    pairs = max((c.peak_overlap(speed) / c.grain_radius for c in contacts if not c.wall), default=0.0)
    deepest = max(contacts, key=lambda c: c.peak_overlap(speed) / c.grain_radius)
    softest_pair = min((c.youngs for c in contacts if not c.wall), default=math.inf)
    if overlap > MAX_OVERLAP and pairs <= MAX_OVERLAP and deepest.wall and deepest.youngs < softest_pair:
        # Only the walls let grains sink this deep, and they are softer than the grains: their modulus is
        # the one to raise, not the grains'.
        notes.append(f"Grains hitting the walls (and mesh colliders) at {speed:.3g} m/s would sink about {overlap:.0%} "
                     f"of their radius into them, against {pairs:.0%} into each other: the walls are soft; a wall "
                     f"Young's modulus that makes their contacts' E* {(overlap / MAX_OVERLAP) ** 2.5 * 1.02:.3g}× "
                     f"larger keeps it under {MAX_OVERLAP:.0%}.")
    elif overlap > MAX_OVERLAP:
        notes.append(f"Grains hitting at {speed:.3g} m/s would overlap about {overlap:.0%} of their radius with "
                     f"these Young's moduli; a {(overlap / MAX_OVERLAP) ** 2.5 * 1.02:.3g}× larger modulus keeps it "
                     f"under {MAX_OVERLAP:.0%}.")
    return TimeStepChoice(dt=float(dt), stiffness=float(equivalent), steps_per_frame=int(fixed_steps_per_frame(
        fps=fps, dt=dt)), critical_dt=limit, contact_duration=t_contact, impact_speed=float(speed),
        expected_overlap=float(overlap), rest_overlap=float(resting), notes=tuple(notes))
