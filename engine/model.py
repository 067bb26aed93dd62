"""Static description of a simulation: per-particle constants and physical settings.

A ``Model`` never changes while a simulation runs; the time-varying part lives in ``engine.state``.
Arrays are numpy, float32 for geometry (the cache format and the GPU kernels use float32), int32 for
indices. ``Physics`` holds every scalar setting and is what the cache manifest stores, so a bake can be
resumed without the preset or the .blend that made it.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass, field

import numpy as np

from .bonds import BODY_KINDS, Body, check_bodies, make_bonds, make_clumps  # noqa: F401  (Body: this API)
from .errors import MochiError
from .fields import ForceField, rotate
from .settings_schema import GRAIN, WALL, model_setting, settings_dataclass

#: Names of the six sides of the domain box, in the order used by every wall mask.
SIDES = ("-x", "+x", "-y", "+y", "-z", "+z")


@dataclass(frozen=True)
class _Material:
    """Bulk properties shared by a group of particles.

    Pair values: restitution and friction are averaged over the two materials, rolling resistance μ_r
    too (the rolling torque is capped at μ_r · f_n · R_eff), cohesion (SJKR, an attractive c·A over the
    contact area A) takes the smaller; the Hertz moduli combine as in Hertz–Mindlin
    (``Physics.contact_normal`` 'hertz'; unused by the linear law).

    Attributes:
        name: Label shown to users.
    """

    name: str = "default"


#: The material fields (density, friction, ...) are engine.settings_schema's grain settings.
Material = settings_dataclass("Material", _Material, GRAIN)


@dataclass(frozen=True)
class _Domain:
    """Axis-aligned simulation box and its walls.

    The walls' Young's modulus and Poisson's ratio serve the mesh colliders too (Hertz–Mindlin only).

    Attributes:
        lo: Lower corner [m], (x, y, z).
        hi: Upper corner [m], (x, y, z).
        open_sides: Sides (from ``SIDES``) without a wall; particles leaving through one become
            inactive and stay in the cache.
    """

    lo: tuple[float, float, float] = (0.0, 0.0, 0.0)
    hi: tuple[float, float, float] = (1.0, 1.0, 1.0)
    open_sides: tuple[str, ...] = ()

    def wall_mask(self) -> np.ndarray:
        """1 where a side has a wall, 0 where it is open; shape (6,), order ``SIDES``."""
        return np.array([0 if s in self.open_sides else 1 for s in SIDES], dtype=np.int32)

    @property
    def size(self) -> np.ndarray:
        """Edge lengths [m], shape (3,)."""
        return np.asarray(self.hi, dtype=np.float64) - np.asarray(self.lo, dtype=np.float64)


#: The wall fields (wall_friction, ...) are engine.settings_schema's wall settings.
Domain = settings_dataclass("Domain", _Domain, WALL)


@dataclass(frozen=True)
class Gravity:
    """Gravity, optionally rotating about an axis at a constant rate.

    The paper's rotating-gravity benchmark keeps |g| constant and turns it in the xz plane at 0.25π
    rad/s: ``vector`` in that plane, ``rotation_axis`` (0, 1, 0), ``rotation_rate`` π/4.

    Attributes:
        vector: Acceleration at t = 0 [m/s²].
        rotation_axis: Axis the vector turns about (normalised on use), or None for constant gravity.
        rotation_rate: Angular rate [rad/s], right-handed about ``rotation_axis``.
    """

    vector: tuple[float, float, float] = (0.0, -9.81, 0.0)
    rotation_axis: tuple[float, float, float] | None = None
    rotation_rate: float = 0.0

    def at(self, time: float) -> np.ndarray:
        """Gravity at ``time`` [s] as float64 [m/s²], shape (3,) (Rodrigues' rotation)."""
        if self.rotation_axis is None or self.rotation_rate == 0.0:
            return np.asarray(self.vector, dtype=np.float64)
        return rotate(self.vector, self.rotation_axis, self.rotation_rate * time)


@dataclass(frozen=True)
class Physics:
    """Every scalar setting of a simulation, resolved (no 'auto' left).

    Attributes:
        materials: Material table; particles refer to it by index.
        domain: The box and its walls.
        gravity: Gravity, possibly rotating.
        fields: Extra acceleration fields (uniform, rotating, vortex, sampled).
        stiffness: Normal spring stiffness k of the linear contact law [N/m]. With the Hertz law, the
            linear stiffness of its lightest impact (``engine.timestep.hertz_equivalent_stiffness``), which
            sets dt and the glue bonds' stiffness; contacts use the materials' moduli.
        contact_normal: 'hooke' (the linear spring-dashpot, k = ``stiffness``) or 'hertz' (Hertz–Mindlin
            from each material's Young's modulus and Poisson's ratio; engine.contact_law).
        friction_cap: How friction (and rolling resistance) is capped (engine.contact_law.FRICTION_CAPS):
            'clipped' (Mochi's), or a peer's convention ('absolute': LAMMPS, 'spring': LIGGGHTS) for
            comparisons with it.
        dt: Time step [s].
        steps_per_frame: Steps between two cached frames.
        fps: Frames per second of the cache (playback rate) [1/s].
        rebuild_interval: Steps between two full rebuilds of the collision structure (paper §4.2.4);
            in between it is refit (GPU BVH). The CPU Verlet list sizes its skin for this many steps
            of motion and is rebuilt when a grain has moved half the skin.
        speed_limit: A particle faster than this is runaway energy and stops the run [m/s].
        seed: Seed of every random choice made while setting up the scene.
        friction_model: 'spring' (tangential spring with history, capped by Coulomb: static
            friction, piles that stay) or 'damper' (history-free capped dashpot; creeps on slopes).
        rotation: Grains rotate (angular velocity, torques from tangential and rolling forces). False
            is the paper's non-rotating model (ω stays 0).
        bodies: How source objects hold together (``Body``); objects not listed are loose.
        integrator: 'verlet' (velocity Verlet, the order of LAMMPS' fix nve/sphere) or 'euler' (the
            paper's semi-implicit Euler). ``rotation=False`` with 'euler' reproduces the paper's
            results bit for bit.
    """

    materials: tuple[Material, ...] = (Material(),)
    domain: Domain = field(default_factory=Domain)
    gravity: Gravity = field(default_factory=Gravity)
    fields: tuple[ForceField, ...] = ()
    stiffness: float = 1.0e3
    dt: float = 1.0e-4
    steps_per_frame: int = 400
    fps: float = 25.0
    # The model settings' defaults are engine.settings_schema's (one place for presets, Blender and this).
    rebuild_interval: int = model_setting("rebuild_interval").default
    speed_limit: float = 1.0e3
    seed: int = model_setting("seed").default
    friction_model: str = model_setting("friction_model").default
    rotation: bool = model_setting("rotation").default
    integrator: str = model_setting("integrator").default
    bodies: tuple[Body, ...] = ()
    contact_normal: str = model_setting("contact_normal").default
    friction_cap: str = model_setting("friction_cap").default

    def to_json(self) -> dict:
        """A JSON-safe dict that ``from_json`` turns back into the same ``Physics``."""
        data = dataclasses.asdict(self)
        data["fields"] = [f.to_json() for f in self.fields]
        return data

    @staticmethod
    def from_json(data: dict) -> "Physics":
        """Inverse of ``to_json``. Manifests written before rotation existed (cache format version 1)
        carry no ``rotation``/``integrator``: they ran the non-rotating Euler model, so that is what
        they load as."""
        d = dict(data)
        d.setdefault("rotation", False)
        d.setdefault("integrator", "euler")
        d["materials"] = tuple(Material(**m) for m in d["materials"])
        dom = dict(d["domain"])
        dom["lo"], dom["hi"] = tuple(dom["lo"]), tuple(dom["hi"])
        dom["open_sides"] = tuple(dom["open_sides"])
        d["domain"] = Domain(**dom)
        grav = dict(d["gravity"])
        grav["vector"] = tuple(grav["vector"])
        if grav["rotation_axis"] is not None:
            grav["rotation_axis"] = tuple(grav["rotation_axis"])
        d["gravity"] = Gravity(**grav)
        d["fields"] = tuple(ForceField.from_json(f) for f in d["fields"])
        d["bodies"] = tuple(Body(**b) for b in d.get("bodies", ()))
        return Physics(**d)


@dataclass(frozen=True, eq=False)
class Model:
    """Per-particle constants and the physics they live in.

    Attributes:
        radius: Sphere radii [m], shape (particle_count,), float32.
        mass: Masses [kg], shape (particle_count,), float32 (density × 4/3 π r³).
        material_index: Index into ``physics.materials``, shape (particle_count,), int32.
        object_id: Source object of each particle (packing, Blender object), shape (particle_count,),
            int32.
        particle_id: Stable identity written to the cache, shape (particle_count,), int32.
        physics: Scalar settings.
        colliders: Triangle-mesh colliders (an ``engine.colliders.ColliderSet``) or None.
        bonds: The glue bonds made at the start (an ``engine.bonds.Bonds``) or None.
        clumps: The rigid bodies (an ``engine.bonds.Clumps``) or None.
    """

    radius: np.ndarray
    mass: np.ndarray
    material_index: np.ndarray
    object_id: np.ndarray
    particle_id: np.ndarray
    physics: Physics
    colliders: object | None = None
    bonds: object | None = None
    clumps: object | None = None

    @property
    def particle_count(self) -> int:
        return int(self.radius.shape[0])


def particle_masses(radius: np.ndarray, material_index: np.ndarray,
                    materials: tuple[Material, ...]) -> np.ndarray:
    """Masses [kg] of spheres, float32, shape (particle_count,), from radii [m] and densities."""
    density = np.array([m.density for m in materials], dtype=np.float64)[material_index]
    return (density * (4.0 / 3.0 * math.pi) * radius.astype(np.float64) ** 3).astype(np.float32)


def build_model(radius: np.ndarray, physics: Physics, *, material_index: np.ndarray | None = None,
                object_id: np.ndarray | None = None, particle_id: np.ndarray | None = None,
                colliders: object | None = None, positions: np.ndarray | None = None) -> Model:
    """Validate per-particle arrays and assemble a ``Model``.

    Args:
        radius: Radii [m], shape (particle_count,).
        physics: Resolved settings.
        material_index: Per-particle material, default all 0.
        object_id: Per-particle source object, default all 0.
        particle_id: Per-particle identity, default 0..particle_count-1.
        positions: Initial centres [m] (n, 3): the glue bonds of ``physics.bodies`` are made from them
            (needed when a body is glued).

    Raises:
        MochiError: no particles, a radius that is not positive and finite, or a material index out
            of range.
    """
    radius = np.ascontiguousarray(radius, dtype=np.float32)
    n = radius.shape[0]
    if n == 0:
        raise MochiError("The scene has no particles.")
    if not np.all(np.isfinite(radius)) or np.any(radius <= 0):
        bad = int(np.flatnonzero(~(np.isfinite(radius) & (radius > 0)))[0])
        raise MochiError(f"Particle {bad} has radius {radius[bad]!r}; every radius must be positive.")
    mat = np.zeros(n, np.int32) if material_index is None else np.ascontiguousarray(material_index, np.int32)
    if mat.min() < 0 or mat.max() >= len(physics.materials):
        raise MochiError(f"A particle refers to material {int(mat.max())}, but only "
                         f"{len(physics.materials)} materials are defined.")
    obj = np.zeros(n, np.int32) if object_id is None else np.ascontiguousarray(object_id, np.int32)
    pid = np.arange(n, dtype=np.int32) if particle_id is None else np.ascontiguousarray(particle_id, np.int32)
    bonds = clumps = None
    mass = particle_masses(radius, mat, physics.materials)
    if physics.bodies:
        check_bodies(physics.bodies)
        if positions is not None:
            bonds = make_bonds(positions, radius, obj, physics.bodies, physics.stiffness)
            clumps = make_clumps(positions, radius, mass, obj, physics.bodies)
        elif any(b.kind != "loose" for b in physics.bodies):
            raise MochiError("Glued and rigid bodies need the initial positions to make their bonds and clumps.")
    return Model(radius=radius, mass=mass, material_index=mat, object_id=obj, particle_id=pid, physics=physics,
                 colliders=colliders, bonds=bonds, clumps=clumps)


def contact_model(positions: np.ndarray, radius: np.ndarray) -> Model:
    """A frictionless ``Model`` with the history-free law whose domain holds every sphere: what a
    whole-solver backend needs to report the contacts of a bare state (which spheres touch does not
    depend on the physics, and every backend accepts this model).

    Args:
        positions: Centres [m], shape (n, 3).
        radius: Radii [m], shape (n,).
    """
    positions = np.asarray(positions, np.float64)
    radius = np.asarray(radius)
    lo = tuple(float(x) for x in positions.min(axis=0) - radius.max())
    hi = tuple(float(x) for x in positions.max(axis=0) + radius.max() + 1e-6)
    physics = Physics(domain=Domain(lo=lo, hi=hi, wall_friction=0.0), materials=(Material(friction=0.0),),
                      friction_model="damper")
    return build_model(radius, physics)
