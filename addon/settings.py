"""Frozen snapshots of the Blender scene, and their translation into an engine scene.

Nothing here imports bpy: ``addon.snapshot`` fills these dataclasses in Blender's main thread
(geometry through ``foreach_get``), then the bake worker thread turns them into an engine
``SceneSetup`` with ``setup_from_settings``. Coordinates are Blender world coordinates (Z up), one
Blender unit being one metre.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np

from ..engine.settings_schema import COLLIDER, GRAIN, SOURCE, TIME, WALL, model_values, settings_dataclass, surface_values

#: Manifest key telling playback which axis is up in a cache; Blender bakes are Z-up, engine presets Y-up.
UP_AXIS_KEY = "up_axis"
#: Manifest keys naming the scene's token and the cache folder as the .blend saw it (``addon.bake_owner``).
TOKEN_KEY = "blender_scene_token"
RELATIVE_FOLDER_KEY = "cache_folder_from_blend"
#: Manifest entries written by the add-on (kept when a bake is resumed).
MANIFEST_INFO_KEYS = (UP_AXIS_KEY, "blender_scene", "blend_file", "frame_start_scene", "objects", "collider_objects",
                      "frames_total", "bake_started", TOKEN_KEY, RELATIVE_FOLDER_KEY)


def folder_from_blend(folder: Path, blend_file: str) -> str:
    """``folder`` as seen from the .blend's folder ('mochi_f_Scene', '../cache'), or '' when it cannot be
    (an unsaved file, another drive)."""
    if not blend_file:
        return ""
    try:
        return Path(os.path.relpath(folder, os.path.dirname(os.path.abspath(blend_file)))).as_posix()
    except ValueError:
        return ""


@dataclass(frozen=True, eq=False)
class _SourceSettings:
    """One particle source: a mesh to pack and the material of its grains.

    Attributes:
        name: Blender object name (shown in errors and stored in the cache manifest).
        vertices: Mesh vertices in object space [m], shape (vertex_count, 3), float32.
        triangles: Vertex indices of the triangulated faces, shape (triangle_count, 3), int32.
        matrix_world: Object-to-world transform, shape (4, 4), float64.
        radius: Sphere radius [m], or None when ``count`` is given.
        count: Target number of spheres, or None when ``radius`` is given.
        shell_layers: 0 fills the volume; n > 0 keeps only n layers of spheres under the surface.
        linear_velocity: Initial velocity of the object's origin [m/s], (x, y, z).
        angular_velocity: Initial angular velocity about the origin [rad/s], (x, y, z).
        pivot: World position of the object's origin [m], (x, y, z).

    Its material (density, friction, ...) is engine.settings_schema's grain settings, as on
    ``engine.model.Material``; its small ratio, body and glue strength the source settings Blender carries
    (a Blender bake's glue stiffness is the default).
    """

    name: str
    vertices: np.ndarray
    triangles: np.ndarray
    matrix_world: np.ndarray
    radius: float | None
    count: int | None
    shell_layers: int
    linear_velocity: tuple[float, float, float] = (0.0, 0.0, 0.0)
    angular_velocity: tuple[float, float, float] = (0.0, 0.0, 0.0)
    pivot: tuple[float, float, float] = (0.0, 0.0, 0.0)

    def material(self):
        """The engine material of this source's grains, named after the object."""
        from ..engine.model import Material

        return Material(name=self.name, **surface_values(self, GRAIN))


SourceSettings = settings_dataclass("SourceSettings", _SourceSettings, (GRAIN, SOURCE), eq=False, blender_only=True)


@dataclass(frozen=True)
class _DomainSettings:
    """The simulation box, taken from the world bounding box of the domain object.

    Attributes:
        name: Blender object name.
        lo: Lower corner [m].
        hi: Upper corner [m].
        open_sides: Sides without a wall, among engine.model.SIDES.

    The walls' settings (wall_friction, ...) are engine.settings_schema's, as on ``engine.model.Domain``.
    """

    name: str
    lo: tuple[float, float, float]
    hi: tuple[float, float, float]
    open_sides: tuple[str, ...]

    def domain(self):
        """The engine domain: this box and its walls."""
        from ..engine.model import Domain

        return Domain(lo=self.lo, hi=self.hi, open_sides=self.open_sides, **surface_values(self, WALL))


DomainSettings = settings_dataclass("DomainSettings", _DomainSettings, WALL)


@dataclass(frozen=True, eq=False)
class _ColliderSettings:
    """One collider mesh and how it moves over the bake, captured frame by frame (``addon.colliders``).

    Exactly one of three layouts, named by ``kind``:

    * 'static': ``vertices`` are world positions; no keys.
    * 'rigid': ``vertices`` are body-frame positions (the object's constant scale and shear baked in);
      ``times``, ``translations`` and ``rotations`` give world = rotation @ body + translation per key.
    * 'deforming': ``key_vertices`` are world positions per key; ``vertices`` is the first key.

    Attributes:
        name: Blender object name.
        vertices: Vertex positions [m], float64 (vertex_count, 3), as described above.
        triangles: Vertex indices of the triangulated faces, int32 (triangle_count, 3).
        times: Key times [s] from the bake's first frame, float64 (key_count,), or None when static.
        translations: World position of the body origin per key [m], float64 (key_count, 3) (rigid).
        rotations: Rotation matrix per key, float64 (key_count, 3, 3) (rigid).
        key_vertices: World vertex positions per key [m], float32 (key_count, vertex_count, 3) (deforming).

    The surface (thickness, restitution, friction, ...) is engine.settings_schema's collider settings.
    """

    name: str
    vertices: np.ndarray
    triangles: np.ndarray
    times: np.ndarray | None = None
    translations: np.ndarray | None = None
    rotations: np.ndarray | None = None
    key_vertices: np.ndarray | None = None

    @property
    def kind(self) -> str:
        """'static', 'rigid' or 'deforming'."""
        if self.key_vertices is not None:
            return "deforming"
        return "rigid" if self.rotations is not None else "static"


ColliderSettings = settings_dataclass("ColliderSettings", _ColliderSettings, COLLIDER, eq=False)


@dataclass(frozen=True)
class _SimulationSettings:
    """Scene-wide settings of a bake.

    Attributes:
        gravity: Gravity at the first frame [m/s²].
        gravity_axis: Axis gravity turns about, or None for constant gravity.
        gravity_rate: Turning rate [rad/s].
        backend: 'auto', 'cpu', 'cuda', 'optix' or 'rt'.
        fps: Frames per second of the scene [1/s].
        frame_start: Scene frame that shows cache frame 1.
        frame_count: Number of cache frames, the first being the initial state.
        cache_folder: Absolute path of the cache folder.
        scene_name: Blender scene name (stored in the manifest).
        blend_file: Path of the .blend, or "" when unsaved (stored in the manifest).
        scene_token: The scene's random token (``addon.bake_owner``; stored in the manifest).
        fields: Engine fields (``engine.fields.ForceField``): the panel's and the scene's force-field
            objects', as ``addon.force_fields`` translates them.

    The time step, substeps and stiffness (each None: the engine chooses; stiffness always None with
    Hertz–Mindlin, whose stiffness comes from the Young's moduli) are engine.settings_schema's time
    settings, as on ``engine.preset.Preset``; the model's settings that Blender sets (contact_normal,
    friction_model, rotation, integrator, rebuild_interval, seed) its model settings, as on
    ``engine.model.Physics``.
    """

    gravity: tuple[float, float, float]
    gravity_axis: tuple[float, float, float] | None
    gravity_rate: float
    backend: str
    fps: float
    frame_start: int
    frame_count: int
    cache_folder: Path
    scene_name: str = ""
    blend_file: str = ""
    scene_token: str = ""
    fields: tuple = ()


SimulationSettings = settings_dataclass("SimulationSettings", _SimulationSettings, TIME, model="blender")


@dataclass(frozen=True)
class BakeSettings:
    """Everything a bake needs, gathered in the main thread; safe to hand to a worker thread.

    ``notes`` are sentences for the user about what the snapshot could not take over (force fields the
    engine has no counterpart of); they are not part of what is baked.
    """

    simulation: SimulationSettings
    domain: DomainSettings
    sources: tuple[SourceSettings, ...]
    colliders: tuple[ColliderSettings, ...] = ()
    notes: tuple[str, ...] = ()

    def fingerprint(self) -> dict:
        """What the bake is made from, for the check a resume makes (``engine.bake``, inputs): every
        setting, mesh and material, but not where the cache lives, how many frames to bake, which
        backend runs it (checked apart) or the keys of animated colliders (sampled over the frame range,
        which a resume may extend)."""
        sim = replace(self.simulation, frame_count=0, backend="", cache_folder=Path(), blend_file="",
                      scene_name="", scene_token="")
        colliders = [replace(c, times=None, translations=None, rotations=None, key_vertices=None)
                     for c in self.colliders]
        return {"simulation": sim, "domain": self.domain, "sources": list(self.sources), "colliders": colliders}

    def manifest_info(self) -> dict:
        """Extra manifest entries that let playback and people find their way back to the scene."""
        sim = self.simulation
        return {UP_AXIS_KEY: "Z", "blender_scene": sim.scene_name, "blend_file": sim.blend_file,
                TOKEN_KEY: sim.scene_token, RELATIVE_FOLDER_KEY: folder_from_blend(sim.cache_folder, sim.blend_file),
                "frame_start_scene": sim.frame_start, "objects": [s.name for s in self.sources],
                "collider_objects": [c.name for c in self.colliders]}


def pack_source(source: SourceSettings, *, seed: int, progress=None):
    """Pack one source mesh with spheres in world coordinates (``progress``: an
    ``engine.packing.PackProgress`` told how far it is, that can stop it).

    Returns:
        engine.packing.PackResult (positions [m] (n, 3), radius [m] (n,), ...).

    Raises:
        MochiError: the mesh cannot be packed (no volume, radius too large...), naming the object.
    """
    from ..engine.packing import pack_mesh

    return pack_mesh(source.vertices, source.triangles, transform=source.matrix_world,
                     radius=source.radius, count=source.count, small_ratio=source.small_ratio,
                     shell_layers=source.shell_layers, seed=seed, name=f"The object '{source.name}'",
                     progress=progress)


def collider_settings_to_engine(collider: ColliderSettings):
    """The engine collider of a captured one, built as ``engine.preset_colliders`` builds them.

    Returns:
        engine.colliders.Collider.

    Raises:
        MochiError: no faces, NaN coordinates, a bad surface setting (naming the object).
    """
    from ..engine.colliders import Collider, DeformMotion, RigidMotionKeyframes

    surface = dict(name=collider.name, triangles=collider.triangles, **surface_values(collider, COLLIDER))
    if collider.kind == "rigid":
        motion = RigidMotionKeyframes(times=collider.times, translations=collider.translations,
                                      rotations=collider.rotations)
        return Collider(vertices=collider.vertices, motion=motion, **surface)
    if collider.kind == "deforming":
        motion = DeformMotion(times=collider.times, vertices=collider.key_vertices)
        return Collider(vertices=collider.vertices, motion=motion, **surface)
    return Collider(vertices=collider.vertices, **surface)


def colliders_from_settings(settings: BakeSettings):
    """A ``ColliderSet`` of the scene's colliders, or None when there are none."""
    if not settings.colliders:
        return None
    from ..engine.colliders import ColliderSet

    return ColliderSet(tuple(collider_settings_to_engine(c) for c in settings.colliders))


def setup_from_settings(settings: BakeSettings, *, progress=None):
    """Pack every source, build the colliders and assemble the engine scene (runs in the bake worker thread;
    ``progress``: an ``engine.packing.PackProgress`` for the packing, whose cancel stops it).

    Returns:
        engine.scene.SceneSetup.

    Raises:
        MochiError: a source cannot be packed, a collider is invalid, or the scene is invalid.
    """
    from ..engine.model import Body, Gravity
    from ..engine.packing import rigid_spins, rigid_velocities
    from ..engine.scene import setup_from_arrays

    sim, dom = settings.simulation, settings.domain
    positions, radii, velocities, spins, material_index = [], [], [], [], []
    materials = []
    notes = []
    for index, source in enumerate(settings.sources):
        packed = pack_source(source, seed=sim.seed + index, progress=progress)
        positions.append(np.asarray(packed.positions, np.float32))
        radii.append(np.asarray(packed.radius, np.float32))
        velocities.append(np.asarray(rigid_velocities(packed.positions, source.linear_velocity,
                                                      source.angular_velocity, source.pivot), np.float32))
        # The object turns as a rigid body: its grains spin with it, where grains rotate at all.
        spin = source.angular_velocity if sim.rotation else (0.0, 0.0, 0.0)
        if any(source.angular_velocity) and not sim.rotation:
            notes.append(f"'{source.name}' turns, but its grains do not spin with it: Rotating Grains is off.")
        spins.append(rigid_spins(len(packed.radius), spin))
        material_index.append(np.full(len(packed.radius), index, np.int32))
        materials.append(source.material())
    material_index = np.concatenate(material_index)
    gravity = Gravity(vector=sim.gravity, rotation_axis=sim.gravity_axis,
                      rotation_rate=sim.gravity_rate if sim.gravity_axis is not None else 0.0)
    setup = setup_from_arrays(
        positions=np.concatenate(positions), radius=np.concatenate(radii),
        velocities=np.concatenate(velocities), angular_velocities=np.concatenate(spins),
        material_index=material_index,
        object_id=material_index.copy(), materials=materials, domain=dom.domain(), gravity=gravity,
        fields=tuple(sim.fields), dt=sim.dt, substeps=sim.substeps, stiffness=sim.stiffness, fps=sim.fps,
        name=sim.scene_name or "Blender scene", colliders=colliders_from_settings(settings),
        **model_values(sim, blender_only=True),
        bodies=tuple(Body(object_id=index, kind=source.body, glue_strength=source.glue_strength)
                     for index, source in enumerate(settings.sources) if source.body != "loose"))
    return replace(setup, notes=setup.notes + tuple(notes)) if notes else setup
