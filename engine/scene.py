"""Turning a preset (or arrays from Blender) into a ready-to-step model and initial state.

Both entry points end in ``setup_from_arrays``, which resolves 'auto' stiffness and time step from the
particles actually present, so a preset, a Blender scene and a ``--state`` PLY are treated alike.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np

from .budget import check_memory
from .contact_law import check_hertz_materials, cohesion_notes, friction_cap_notes, surface_cohesion_notes
from .errors import MochiError
from .fields import ForceField, field_max_acceleration
from .model import Body, Domain, Gravity, Material, Model, Physics, build_model, particle_masses
from .ply import read_particles
from .preset import EmitterSpec, Preset
from .preset_colliders import colliders_from_specs
from .settings_schema import WALL, check_physics, model_values, surface_values
from .state import State, check_particles, make_state
from .timestep import (TimeStepChoice, choose_time_step, expected_impact_speed, hertz_contacts,
                       rayleigh_time)

#: A source whose grains are, typically, closer than this fraction of a radius to their nearest
#: neighbour is packed and falls as one block; otherwise it is a loose cloud whose grains fall alone.
BLOCK_GAP = 0.5
#: A particle faster than this multiple of the expected impact speed (plus 1 m/s) is runaway energy.
SPEED_LIMIT_FACTOR = 10.0


@dataclass(frozen=True, eq=False)
class SceneSetup:
    """A model, its initial state and what was decided while building them.

    Attributes:
        model: Static model with resolved physics.
        state: Initial state (step 0).
        name: Scene name for logs and the manifest.
        frames: Default number of frames to bake.
        notes: Remarks for the user (time-step accuracy and the like).
        time_step: How dt and stiffness were chosen.
    """

    model: Model
    state: State
    name: str
    frames: int
    notes: tuple[str, ...]
    time_step: TimeStepChoice


def fall_to_walls(points: np.ndarray, down: np.ndarray, domain: Domain) -> np.ndarray:
    """How far each point can fall along the unit vector ``down`` before the domain's wall [m], shape
    (n,); ``points`` [m], shape (n, 3)."""
    lo, hi = np.asarray(domain.lo, np.float64), np.asarray(domain.hi, np.float64)
    p = np.asarray(points, np.float64)
    with np.errstate(divide="ignore", invalid="ignore"):
        to_wall = np.where(down > 0, (hi - p) / down, np.where(down < 0, (lo - p) / down, np.inf))
    return np.clip(to_wall.min(axis=1), 0.0, None)


def expected_fall_height(positions: np.ndarray, radius: np.ndarray, object_id: np.ndarray, gravity: Gravity,
                         domain: Domain, colliders=None) -> float:
    """How far the grains can be expected to fall before they hit something [m].

    Each grain can fall along gravity until the domain's wall or a collider's surface below it (at the
    colliders' first pose). A packed source object falls as a block: its lowest grains land first, at
    the block's speed, and each layer above lands on the one just stopped below it at that speed too
    (the block has no time to gain more over the gap of a grain), so its lowest grain's fall counts. A
    loose cloud (grains typically further than ``BLOCK_GAP`` radii from their nearest neighbour) falls
    grain by grain, so its highest grain's fall counts. The largest over the objects is the
    fall 'auto' stiffness is chosen for, rather than a fall through the whole domain. Rotating gravity
    can point anywhere, so then the domain's largest side counts.

    Args:
        positions: Grain centres [m], (n, 3).
        radius: Grain radii [m], (n,).
        object_id: Source object of each grain, (n,).
        gravity: Gravity of the scene.
        domain: Simulation box.
        colliders: ``engine.colliders.ColliderSet`` or None.
    """
    g = np.asarray(gravity.vector, np.float64)
    if gravity.rotation_axis is not None and gravity.rotation_rate != 0.0:
        return float(domain.size.max())
    norm = float(np.linalg.norm(g))
    if norm == 0.0 or positions.shape[0] == 0:
        return 0.0
    down = g / norm
    p = positions.astype(np.float64)
    fall = fall_to_walls(p, down, domain)
    heights = []
    for obj in np.unique(object_id):
        mine = np.flatnonzero(object_id == obj)
        packed = _is_packed(p[mine], radius[mine])  # on every grain: a sample is always loose
        if colliders is not None:
            # A sample of the grains (the lowest and highest along gravity among them) is enough.
            along = p[mine] @ down
            order = np.argsort(along)
            rng = np.random.default_rng(0)
            pick = np.unique(np.concatenate([order[:32], order[-32:],
                                             rng.choice(len(mine), min(256, len(mine)), replace=False)]))
            mine = mine[pick]
            fall[mine] = np.minimum(fall[mine], _distance_to_colliders(p[mine], down, colliders))
        lowest, highest = float(fall[mine].min()), float(fall[mine].max())
        heights.append(lowest if packed else highest)
    return max(heights)


def _distance_to_colliders(origins: np.ndarray, direction: np.ndarray, colliders, chunk: int = 1 << 20) -> np.ndarray:
    """Distance [m] along ``direction`` from each origin to the first collider triangle it meets (at
    the colliders' first pose), inf where none: Möller–Trumbore, vectorised over rays × triangles.

    Args:
        origins: Ray starts [m], (k, 3) float64.
        direction: Unit direction, (3,).
        colliders: ``engine.colliders.ColliderSet``.
    """
    best = np.full(origins.shape[0], np.inf)
    for collider in colliders.colliders:
        corners = collider.vertices_at(0.0)[0][collider.triangles]  # (T, 3, 3)
        a, e1, e2 = corners[:, 0], corners[:, 1] - corners[:, 0], corners[:, 2] - corners[:, 0]
        pvec = np.cross(direction, e2)
        det = np.einsum("ij,ij->i", e1, pvec)
        usable = np.abs(det) > 1e-14
        a, e1, e2, pvec, det = a[usable], e1[usable], e2[usable], pvec[usable], det[usable]
        if len(a) == 0:  # every triangle edge-on to the rays
            continue
        step = max(1, chunk // max(len(a), 1))
        for start in range(0, origins.shape[0], step):
            o = origins[start:start + step, None, :] - a[None]  # (r, T, 3)
            u = np.einsum("rtk,tk->rt", o, pvec) / det
            q = np.cross(o, e1[None])
            v = (q @ direction) / det
            t = np.einsum("rtk,tk->rt", q, e2) / det
            hit = (u >= 0) & (v >= 0) & (u + v <= 1) & (t > 0)
            nearest = np.where(hit, t, np.inf).min(axis=1)
            best[start:start + step] = np.minimum(best[start:start + step], nearest)
    return best


def _is_packed(positions: np.ndarray, radius: np.ndarray, sample: int = 2000) -> bool:
    """Whether most grains of one source touch a neighbour (median gap under ``BLOCK_GAP`` radii)."""
    from scipy.spatial import cKDTree

    if positions.shape[0] < 2:
        return False
    tree = cKDTree(positions)
    rng = np.random.default_rng(0)
    pick = rng.choice(positions.shape[0], min(sample, positions.shape[0]), replace=False)
    distance, index = tree.query(positions[pick], k=2)
    r = radius.astype(np.float64)
    gap = (distance[:, 1] - r[pick] - r[index[:, 1]]) / r[pick]
    return float(np.median(gap)) < BLOCK_GAP


def setup_from_arrays(*, positions: np.ndarray, radius: np.ndarray, velocities: np.ndarray | None = None,
                      angular_velocities: np.ndarray | None = None, material_index: np.ndarray | None = None,
                      object_id: np.ndarray | None = None,
                      materials=(Material(),), domain: Domain = Domain(), gravity: Gravity = Gravity(),
                      fields: tuple[ForceField, ...] = (), dt: float | None = None, substeps: int | None = None,
                      stiffness: float | None = None, fps: float = 24.0, rebuild_interval: int = 10,
                      seed: int = 0, name: str = "scene", frames: int = 10,
                      colliders=None, friction_model: str = "spring", rotation: bool = True,
                      integrator: str = "verlet", bodies: tuple = (), contact_normal: str = "hooke",
                      friction_cap: str = "clipped") -> SceneSetup:
    """Build a scene from particle arrays.

    Args:
        positions: Centres [m], (n, 3).
        radius: Radii [m], (n,).
        velocities: Initial velocities [m/s], (n, 3), default zero.
        angular_velocities: Initial spins ω [rad/s], (n, 3), default zero; refused (not dropped) when
            the grains do not rotate.
        material_index: Index into ``materials`` per particle, default 0.
        object_id: Source object per particle, default 0.
        materials: Material table.
        domain: Simulation box.
        gravity: Gravity (possibly rotating).
        fields: Extra acceleration fields.
        dt: Time step [s], or None for auto.
        substeps: Steps per frame (used when dt is None).
        stiffness: Normal contact stiffness [N/m], or None for auto.
        fps: Cache frame rate [1/s].
        rebuild_interval: Steps between collision-structure rebuilds.
        seed: Seed recorded with the physics.
        name: Scene name.
        frames: Default frame count.
        friction_model: 'spring' (static friction) or 'damper' (history-free); both run on every
            backend, against mesh colliders too.
        rotation: Grains rotate (False: the paper's non-rotating model).
        integrator: 'verlet' (velocity Verlet) or 'euler' (the paper's semi-implicit Euler).
        bodies: ``engine.model.Body`` per source object that is glued (or rigid); others are loose.
        colliders: Triangle-mesh colliders (``engine.colliders.ColliderSet``) or None; their surface
            speed counts as an impact speed when dt and stiffness are 'auto'.
        contact_normal: 'hooke' (the linear law of ``stiffness``) or 'hertz' (Hertz–Mindlin from the
            materials' and the domain's Young's moduli and Poisson's ratios; ``stiffness`` must be None).
        friction_cap: One of ``engine.contact_law.FRICTION_CAPS`` ('clipped', Mochi's, unless comparing with
            a peer).

    Raises:
        MochiError: empty scene, bad radius, NaN positions, unstable dt...
    """
    materials = tuple(materials)
    state = make_state(positions, velocities, angular_velocities=angular_velocities)
    radius = np.ascontiguousarray(radius, np.float32)
    if radius.shape != (state.particle_count,):
        raise MochiError(f"There are {state.particle_count} positions but {radius.shape[0]} radii.")
    check_particles(state.positions, radius, "This scene")
    # Every setting within the schema's range before any of them is computed with (a density of 1e-300
    # would divide by zero in the time step's choice); the resolved ones are checked again below.
    model_choices = dict(rebuild_interval=rebuild_interval, seed=seed, friction_model=friction_model,
                         rotation=rotation, integrator=integrator, contact_normal=contact_normal,
                         friction_cap=friction_cap)
    if contact_normal == "hertz":  # its sentence names the material
        check_hertz_materials(materials, domain)
    check_physics(Physics(materials=materials, domain=domain, gravity=gravity, fields=tuple(fields),
                          bodies=tuple(bodies), dt=dt, stiffness=stiffness, **model_choices), "This scene")
    spin = np.sqrt((state.angular_velocities.astype(np.float64) ** 2).sum(axis=1))
    if not rotation and spin.any():
        raise MochiError(f"Particle {int(np.flatnonzero(spin)[0])} is given an initial spin (angular velocity) "
                         "but the grains do not rotate (rotation = false, the paper's model); turn rotation on "
                         "or give no spin.")
    probe = build_model(radius, Physics(materials=materials), material_index=material_index)
    mass = particle_masses(probe.radius, probe.material_index, materials)
    # A spinning grain's surface hits at its centre's speed plus ω r.
    speed0 = float((np.sqrt((state.velocities.astype(np.float64) ** 2).sum(axis=1)) + spin * radius).max())
    if colliders is not None:  # a moving collider hits resting grains at its own speed
        speed0 += colliders.max_surface_speed()
    # Blender's vortices grow with the distance from their centre: bounded over the domain's diagonal.
    accel = float(np.linalg.norm(gravity.vector)) + field_max_acceleration(
        tuple(fields), extent=float(np.linalg.norm(domain.size)), speed=speed0)
    fall = expected_fall_height(state.positions, probe.radius, np.zeros(state.particle_count, np.int32)
                                if object_id is None else np.asarray(object_id), gravity, domain, colliders)
    impact = expected_impact_speed(speed0, accel, fall)
    # Runaway energy is judged against the fastest fall the domain allows, not the expected one.
    worst = expected_impact_speed(speed0, accel, float(domain.size.max()))
    # The least damped contact (largest restitution) overlaps most; a column as tall as the domain along
    # gravity is the heaviest load a resting contact can carry.
    restitution = max([m.restitution for m in materials] + [domain.wall_restitution]
                      + ([c.restitution for c in colliders.colliders] if colliders is not None else []))
    g = np.asarray(gravity.vector, np.float64)
    g_norm = float(np.linalg.norm(g))
    turning = gravity.rotation_axis is not None and gravity.rotation_rate != 0.0
    column = float(domain.size.max()) if turning or g_norm == 0.0 else float(np.abs(g / g_norm) @ domain.size)
    hertz, rayleigh = None, math.inf
    if contact_normal == "hertz":
        hertz = hertz_contacts(materials, domain.wall_youngs_modulus, domain.wall_poisson_ratio, mass, probe.radius,
                               probe.material_index)
        rayleigh = rayleigh_time(materials, probe.radius, probe.material_index)
    choice = choose_time_step(dt=dt, stiffness=stiffness, substeps=substeps, fps=fps, mass=mass,
                              radius=probe.radius, impact_speed=impact, restitution=restitution, gravity=g_norm,
                              column_height=column, hertz=hertz, rayleigh=rayleigh)
    physics = Physics(materials=materials, domain=domain, gravity=gravity, fields=tuple(fields),
                      stiffness=choice.stiffness, dt=choice.dt, steps_per_frame=choice.steps_per_frame,
                      fps=float(fps), speed_limit=SPEED_LIMIT_FACTOR * worst + 1.0, bodies=tuple(bodies),
                      **model_choices)
    check_physics(physics, "This scene's resolved physics")
    model = build_model(radius, physics, material_index=material_index, object_id=object_id, colliders=colliders,
                        positions=state.positions)
    notes = choice.notes
    # SJKR binds at any c with Hertz contacts (docs/physics.md): the linear law's thresholds are not said then.
    if hertz is None:
        notes += cohesion_notes(materials, model.material_index, model.radius, choice.stiffness)
        if colliders is not None:
            notes += surface_cohesion_notes(materials, model.material_index, model.radius, choice.stiffness,
                                            [(f"collider '{c.name}'", c.cohesion) for c in colliders.colliders])
    notes += friction_cap_notes(physics)
    return SceneSetup(model=model, state=state, name=name, frames=frames, notes=notes, time_step=choice)


# --- presets ------------------------------------------------------------------------------------


def _emit_box(spec: EmitterSpec, count: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """``count`` spheres on random distinct cells of a cubic lattice in spec.lo..hi, never overlapping.

    Each sphere is placed at random inside its own cell (edge ≥ 2·r_max), at least its radius from the
    cell's faces, so no two overlap.
    """
    r_lo, r_hi = spec.radius
    lo = np.asarray(spec.lo, np.float64)
    extent = np.asarray(spec.hi, np.float64) - lo
    dense = 2.0 * r_hi * 1.001  # smallest cell that holds any sphere of the emitter

    def cells_per_axis(edge: float) -> np.ndarray:
        per_axis = np.maximum(np.floor(extent / edge), 1).astype(np.int64)
        return np.where(extent >= dense, per_axis, 0)

    # About twice as many cells as spheres when there is room: each sphere then moves freely inside a
    # cell much larger than itself, so a sparse cloud is random rather than aligned on a lattice.
    per_axis = cells_per_axis(max(dense, float(np.prod(extent) / (2.0 * count)) ** (1.0 / 3.0)))
    if np.prod(per_axis) < count:
        per_axis = cells_per_axis(dense)
    sites = int(np.prod(per_axis))
    if count > sites:
        raise MochiError(f"The box emitter from {list(spec.lo)} to {list(spec.hi)} holds at most {sites} "
                         f"spheres of radius {r_hi:g}, fewer than the {count} asked for.")
    chosen = np.sort(rng.choice(sites, size=count, replace=False))
    ijk = np.stack(np.unravel_index(chosen, tuple(per_axis)), axis=1)
    radius = rng.uniform(r_lo, r_hi, count) if r_hi > r_lo else np.full(count, r_lo)
    cell = extent / per_axis  # ≥ dense on every axis
    slack = np.maximum(cell / 2.0 - radius[:, None], 0.0)
    centre = lo + (ijk + 0.5) * cell + rng.uniform(-0.9, 0.9, (count, 3)) * slack
    return centre, radius


def _emit_mesh(spec: EmitterSpec, count: int | None, radius: float | None, seed: int):
    """Pack the emitter's mesh: (centres, radii, velocities, spins, object ids) of every copy; the object
    moves as a rigid body (``velocity``, ``angular_velocity`` about ``pivot``), so its grains spin with it."""
    from .packing import pack_mesh_file, rigid_spins, rigid_velocities

    packed = pack_mesh_file(spec.path, radius=radius, count=count, small_ratio=spec.small_ratio,
                            shell_layers=spec.shell, seed=seed if spec.seed is None else spec.seed, fit=spec.fit,
                            center=spec.center, rotation_deg=spec.rotation)
    positions, radii, velocities, object_ids = [], [], [], []
    pivot = packed.positions.astype(np.float64).mean(axis=0) if spec.pivot is None else spec.pivot
    base_velocity = rigid_velocities(packed.positions, spec.velocity, spec.angular_velocity, pivot)
    for copy_index, offset in enumerate(spec.copies):
        positions.append(packed.positions.astype(np.float64) + offset)
        radii.append(packed.radius)
        velocities.append(base_velocity)
        object_ids.append(np.full(len(packed.radius), spec.object_id + copy_index, np.int32))
    positions = np.concatenate(positions)
    return (positions, np.concatenate(radii), np.concatenate(velocities),
            rigid_spins(len(positions), spec.angular_velocity), np.concatenate(object_ids))


def _nominal_count(spec: EmitterSpec, seed: int) -> int:
    if spec.kind == "box" or (spec.kind == "mesh" and spec.count is not None):
        return spec.count * (len(spec.copies) if spec.kind == "mesh" else 1)
    if spec.kind == "mesh":
        return len(_emit_mesh(spec, None, spec.radius[0], seed)[1])
    return len(read_particles(spec.path)[1])


def _check_inside_domain(centres: np.ndarray, preset: Preset, index: int) -> None:
    """Refuse an emitter whose particles start outside the domain (walls would fling them back in).

    Raises:
        MochiError: naming the emitter, how many of its particles are outside, and the domain.
    """
    lo, hi = np.asarray(preset.domain_lo), np.asarray(preset.domain_hi)
    outside = ~((centres >= lo) & (centres <= hi)).all(axis=1)
    if outside.any():
        spec = preset.emitters[index]
        where = (f"from {list(spec.lo)} to {list(spec.hi)}" if spec.kind == "box"
                 else f"'{Path(spec.path).name}'")
        raise MochiError(f"{preset.source}: [[emitters]] #{index + 1} ({spec.kind} {where}) places "
                         f"{int(outside.sum()):,} of its {len(centres):,} particles outside the domain "
                         f"{list(preset.domain_lo)} to {list(preset.domain_hi)}; move it inside.")


def setup_from_preset(preset: Preset, *, particles: int | None = None,
                      replace_particles: tuple[np.ndarray, np.ndarray, np.ndarray | None] | None = None) -> SceneSetup:
    """Build the scene a preset describes.

    Args:
        preset: A validated preset.
        particles: Total particle count wanted; every emitter is scaled by the same factor (mesh
            emitters through their sphere radius, so their count is approximate).
        replace_particles: (positions, radii, velocities or None) replacing all emitters
            (``mochi bench --state``); physics still comes from the preset.
    """
    rng = np.random.default_rng(preset.seed)
    materials = tuple(Material(**m) for m in preset.materials) or (Material(),)
    bodies: list[Body] = []
    names = [m.name for m in materials]
    notes: tuple[str, ...] = ()
    spins = None
    if replace_particles is not None:
        positions, radius, velocities = replace_particles
        material_index = object_id = None
    else:
        factor = 1.0
        nominal = [None] * len(preset.emitters)
        if particles is not None:
            if particles < 1:
                raise MochiError(f"--particles must be at least 1, not {particles}.")
            check_memory(particles)  # before packing or emitting allocates anything
            nominal = [_nominal_count(e, preset.seed) for e in preset.emitters]
            factor = particles / sum(nominal)
        else:
            check_memory(sum(e.count * (len(e.copies) if e.kind == "mesh" else 1)
                             for e in preset.emitters if e.count is not None))
        parts = []
        for spec, nominal_count in zip(preset.emitters, nominal):
            material = names.index(spec.material) if spec.material in names else 0
            if spec.kind == "box":  # each grain spins about its own centre
                n = max(1, round(spec.count * factor))
                p, r = _emit_box(spec, n, rng)
                v = np.tile(np.asarray(spec.velocity, np.float64), (n, 1))
                w = np.tile(np.asarray(spec.angular_velocity, np.float64), (n, 1))
                o = np.full(n, spec.object_id, np.int32)
            elif spec.kind == "mesh":
                if factor == 1.0 and spec.count is None:
                    p, r, v, w, o = _emit_mesh(spec, None, spec.radius[0], preset.seed)
                else:
                    # Scaled: ask the packer for a count (it picks the radius), per copy.
                    per_copy = (spec.count if spec.count is not None else nominal_count // len(spec.copies))
                    p, r, v, w, o = _emit_mesh(spec, max(1, round(per_copy * factor)), None, preset.seed)
                if not preset.rotation and any(spec.angular_velocity):
                    # The object still turns (its grains' velocities); grains that never rotate cannot spin.
                    w = np.zeros_like(w)
                    notes += (f"Emitter {len(parts) + 1} turns at {list(spec.angular_velocity)} rad/s, but its "
                              "grains do not spin with it: rotation is off.",)
            else:  # a PLY: its wx wy wz columns, or the emitter's spin for every grain
                p, r, v_file, w_file = read_particles(spec.path, spins=True)
                v = v_file if v_file is not None else np.tile(np.asarray(spec.velocity), (len(r), 1))
                w = w_file if w_file is not None else np.tile(np.asarray(spec.angular_velocity), (len(r), 1))
                o = np.full(len(r), spec.object_id, np.int32)
            _check_inside_domain(p, preset, len(parts))
            parts.append((p, r, v, o, np.full(len(r), material, np.int32), w))
            if spec.body != "loose":
                bodies.extend(Body(object_id=int(obj), kind=spec.body, glue_strength=spec.glue_strength,
                                   glue_stiffness=spec.glue_stiffness) for obj in np.unique(o))
        positions = np.concatenate([x[0] for x in parts])
        radius = np.concatenate([x[1] for x in parts])
        velocities = np.concatenate([x[2] for x in parts])
        object_id = np.concatenate([x[3] for x in parts])
        material_index = np.concatenate([x[4] for x in parts])
        spins = np.concatenate([x[5] for x in parts])
    domain = Domain(lo=preset.domain_lo, hi=preset.domain_hi, open_sides=preset.open_sides,
                    **surface_values(preset, WALL))
    gravity = Gravity(vector=preset.gravity, rotation_axis=preset.gravity_axis, rotation_rate=preset.gravity_rate)
    fields = tuple(ForceField(**f) for f in preset.fields)
    colliders = colliders_from_specs(preset.colliders)
    setup = setup_from_arrays(positions=positions, radius=radius, velocities=velocities, angular_velocities=spins,
                             material_index=material_index, object_id=object_id, materials=materials,
                             domain=domain, gravity=gravity, fields=fields, dt=preset.dt,
                             substeps=preset.substeps, stiffness=preset.stiffness, fps=preset.fps,
                             name=preset.name, frames=preset.frames, colliders=colliders, bodies=tuple(bodies),
                             **model_values(preset))
    return replace(setup, notes=setup.notes + notes) if notes else setup
