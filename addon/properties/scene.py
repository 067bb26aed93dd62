"""Scene-wide Mochi settings: gravity, time stepping, backend, frame range and cache folder."""

from __future__ import annotations

import bpy
from bpy.props import (BoolProperty, EnumProperty, FloatProperty, FloatVectorProperty, IntProperty,
                       PointerProperty, StringProperty)

BACKEND_LABELS = {"auto": "Automatic", "cpu": "CPU", "cuda": "CUDA", "optix": "OptiX"}
_backend_items_cache: list = []

#: Blender 4.5+ warns about '//' paths unless a path property says it supports them; older Blenders
#: do not know the option (detected through the RNA flag that reports it).
PATH_OPTIONS = ({"PATH_SUPPORTS_BLEND_RELATIVE"}
                if "is_path_supports_blend_relative" in bpy.types.Property.bl_rna.properties else set())


def backend_items(_self, _context):
    """Enum items: 'auto' plus every engine backend, each saying whether it can start here."""
    from ...engine.backends.select import available_backends

    found = available_backends()
    items = [("auto", "Automatic", "The fastest backend available here ("
              + ", ".join(BACKEND_LABELS.get(n, n) for n in found) + ")", "AUTO", 0)]
    for number, name in enumerate(("cpu", "cuda", "optix"), start=1):
        reason = found.get(name)
        label = BACKEND_LABELS[name] + ("" if reason else " (not available)")
        tip = f"{BACKEND_LABELS[name]} backend: {reason}" if reason else \
            f"{BACKEND_LABELS[name]} backend: not available on this computer"
        items.append((name, label, tip, "NONE", number))
    # Blender keeps pointers into the list returned here, so it must outlive the call.
    _backend_items_cache[:] = items
    return _backend_items_cache


class MochiSceneSettings(bpy.types.PropertyGroup):
    """Settings of the scene's Mochi simulation (Scene.mochi)."""

    gravity: FloatVectorProperty(
        name="Gravity", description="Gravitational acceleration at the first frame (Z is up)",
        subtype="ACCELERATION", unit="ACCELERATION", size=3, default=(0.0, 0.0, -9.81),
        soft_min=-50.0, soft_max=50.0)
    use_rotating_gravity: BoolProperty(
        name="Rotating Gravity",
        description="Turn the gravity vector about an axis at a constant rate, as in a rotating drum",
        default=False)
    gravity_axis: FloatVectorProperty(
        name="Axis", description="Axis the gravity vector turns about (normalised; right-handed)",
        subtype="XYZ", size=3, default=(0.0, 1.0, 0.0), soft_min=-1.0, soft_max=1.0)
    gravity_rate: FloatProperty(
        name="Rate", description="Angular rate of the gravity vector, per second",
        subtype="ANGLE", unit="ROTATION", default=0.7853982, soft_min=-6.2831853, soft_max=6.2831853)
    timestep_mode: EnumProperty(
        name="Time Step", description="How the simulation time step is chosen",
        items=(("AUTO", "Automatic", "From the contact stiffness and the lightest grain, with a safety margin"),
               ("SUBSTEPS", "Substeps", "A fixed number of steps per frame"),
               ("FIXED", "Fixed", "A fixed time step in seconds")),
        default="AUTO")
    substeps: IntProperty(
        name="Substeps", description="Simulation steps per frame", default=400, min=1,
        soft_min=10, soft_max=10000)
    dt: FloatProperty(
        name="Time Step", description="Simulation time step", subtype="TIME_ABSOLUTE",
        unit="TIME_ABSOLUTE", default=1.0e-4, min=1.0e-9, soft_min=1.0e-6, soft_max=1.0e-2,
        precision=6, step=0.001)
    use_auto_stiffness: BoolProperty(
        name="Automatic Stiffness",
        description="Choose the contact stiffness from the grain sizes and masses", default=True)
    stiffness: FloatProperty(
        name="Stiffness", description="Spring constant of the linear contact law, in newtons per metre (N/m)",
        default=1.0e3, min=1.0e-6, soft_min=1.0, soft_max=1.0e7)
    friction_model: EnumProperty(
        name="Friction",
        description="How grains resist sliding on each other, on walls and on colliders",
        items=(("SPRING", "Static", "A tangential spring per contact: grains rest on slopes and piles keep "
                "their angle of repose. Runs on every backend (a resumed OptiX bake agrees to float32 rounding)"),
               ("DAMPER", "Sliding", "History-free: sliding is resisted but never stopped, so piles slowly "
                "spread. Runs on every backend, the GPU ones included")),
        default="SPRING")
    rotation: BoolProperty(
        name="Rotating Grains",
        description="Grains spin from friction at their contacts (and roll). Off is the Mochi paper's "
        "non-rotating model, which acts as infinite rolling resistance",
        default=True)
    integrator: EnumProperty(
        name="Integrator", description="How positions and velocities advance each step",
        items=(("VERLET", "Velocity Verlet", "Second order, as LAMMPS' fix nve/sphere: better energy accuracy"),
               ("EULER", "Euler", "Semi-implicit Euler, the Mochi paper's integrator (with Rotating Grains "
                "off it reproduces the paper's results)")),
        default="VERLET")
    rebuild_interval: IntProperty(
        name="Rebuild Interval",
        description="Steps between two full rebuilds of the collision structure (refit or reuse in between)",
        default=10, min=1, soft_min=1, soft_max=100)
    backend: EnumProperty(
        name="Backend", description="Where the simulation runs; unavailable devices say why",
        items=backend_items)
    frame_start: IntProperty(
        name="Start", description="Scene frame that shows the initial state (cache frame 1)",
        default=1, soft_min=0, soft_max=10000)
    frame_end: IntProperty(
        name="End", description="Last scene frame to bake", default=50, soft_min=1, soft_max=10000)
    seed: IntProperty(
        name="Seed", description="Seed of every random choice while packing (same seed, same grains)",
        default=0, min=0, soft_min=0, soft_max=1000)
    cache_directory: StringProperty(
        name="Cache Folder",
        description="Folder of the bake cache (PLY per frame); '//' is the folder of the .blend file",
        subtype="DIR_PATH", default="//mochi_cache", options=PATH_OPTIONS)
    playback_object: PointerProperty(
        name="Playback Object", description="Object whose geometry-nodes modifier plays the cache back "
        "(made by Bake)", type=bpy.types.Object)

    def frame_count(self) -> int:
        return self.frame_end - self.frame_start + 1


CLASSES = (MochiSceneSettings,)


def register():
    for cls in CLASSES:
        bpy.utils.register_class(cls)
    bpy.types.Scene.mochi = bpy.props.PointerProperty(type=MochiSceneSettings, name="Mochi",
                                                      description="Mochi simulation settings")


def unregister():
    del bpy.types.Scene.mochi
    for cls in reversed(CLASSES):
        bpy.utils.unregister_class(cls)
