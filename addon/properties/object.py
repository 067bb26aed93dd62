"""Per-object Mochi role and settings: particle source, domain box or collider."""

from __future__ import annotations

import bpy
from bpy.props import EnumProperty, FloatProperty, FloatVectorProperty, IntProperty, PointerProperty

from ...engine.settings_schema import OBJECT_KINDS
from .schema import add_properties

SIDE_ITEMS = (("-x", "-X", "No wall on the -X side"), ("+x", "+X", "No wall on the +X side"),
              ("-y", "-Y", "No wall on the -Y side"), ("+y", "+Y", "No wall on the +Y side"),
              ("-z", "-Z", "No wall on the -Z side (the floor)"), ("+z", "+Z", "No wall on the +Z side"))


def _role_changed(self, _context):
    if self.role == "DOMAIN":  # a solid box would hide the grains and render as a grey cube
        from ..quick_setup import show_domain

        show_domain(self.id_data)


class MochiObjectSettings(bpy.types.PropertyGroup):
    """What an object is to the simulation (Object.mochi).

    The material, small ratio, body and glue of a source, the walls of a domain and the surface of a
    collider are not written out here: ``add_properties`` adds one property per
    engine.settings_schema setting Blender carries.
    """

    role: EnumProperty(
        name="Role", description="What this object is to the Mochi simulation",
        items=(("NONE", "None", "Not part of the simulation"),
               ("SOURCE", "Particle Source", "Packed with spheres that become the simulated grains"),
               ("DOMAIN", "Domain Box", "Its bounding box is the simulation domain, with walls"),
               ("COLLIDER", "Collider",
                "Grains collide with its surface as evaluated at every frame (animation and modifiers applied)")),
        default="NONE", update=_role_changed)
    # --- particle source ---
    size_mode: EnumProperty(
        name="Size", description="How the size of the grains is chosen",
        items=(("RADIUS", "Radius", "Pack spheres of a given radius"),
               ("COUNT", "Count", "Choose the radius so that about this many spheres fill the mesh")),
        default="RADIUS")
    radius: FloatProperty(
        name="Radius", description="Radius of the largest spheres", subtype="DISTANCE", unit="LENGTH",
        default=0.05, min=1.0e-6, soft_min=0.001, soft_max=1.0, precision=4)
    count: IntProperty(
        name="Count", description="Target number of spheres in this object", default=1000, min=1,
        soft_min=10, soft_max=1000000)
    fill: EnumProperty(
        name="Fill", description="Fill the whole volume or only a shell under the surface",
        items=(("SOLID", "Solid", "Fill the whole volume"),
               ("SHELL", "Shell", "Keep only the outer layers of spheres")),
        default="SOLID")
    shell_layers: IntProperty(
        name="Layers", description="Number of sphere layers kept under the surface", default=1, min=1,
        soft_min=1, soft_max=10)
    velocity_source: EnumProperty(
        name="Initial Velocity", description="Where the grains' initial velocity comes from",
        items=(("MANUAL", "Manual", "Set the linear and angular velocity by hand"),
               ("ANIMATION", "Animation",
                "Take it from the object's motion between the first two frames of the bake")),
        default="MANUAL")
    linear_velocity: FloatVectorProperty(
        name="Velocity", description="Initial velocity of the object", subtype="VELOCITY",
        unit="VELOCITY", size=3, default=(0.0, 0.0, 0.0), soft_min=-100.0, soft_max=100.0)
    angular_velocity: FloatVectorProperty(
        name="Angular Velocity", description="Initial angular velocity about the object's origin, per second",
        subtype="EULER", unit="ROTATION", size=3, default=(0.0, 0.0, 0.0), soft_min=-62.83, soft_max=62.83)
    # --- domain box ---
    open_sides: EnumProperty(
        name="Open Sides", description="Sides of the box without a wall; grains leaving through them stop",
        items=SIDE_ITEMS, options={"ENUM_FLAG"}, default=set())
    # --- collider ---
    pack_preview: PointerProperty(
        name="Pack Preview", description="Point cloud showing this object's packing (made by Pack)",
        type=bpy.types.Object)


add_properties(MochiObjectSettings, OBJECT_KINDS)
CLASSES = (MochiObjectSettings,)


def register():
    for cls in CLASSES:
        bpy.utils.register_class(cls)
    bpy.types.Object.mochi = bpy.props.PointerProperty(type=MochiObjectSettings, name="Mochi",
                                                       description="Mochi role and settings")


def unregister():
    del bpy.types.Object.mochi
    for cls in reversed(CLASSES):
        bpy.utils.unregister_class(cls)
