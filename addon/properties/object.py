"""Per-object Mochi role and settings: particle source, domain box or collider."""

from __future__ import annotations

import bpy
from bpy.props import EnumProperty, FloatProperty, FloatVectorProperty, IntProperty, PointerProperty

SIDE_ITEMS = (("-x", "-X", "No wall on the -X side"), ("+x", "+X", "No wall on the +X side"),
              ("-y", "-Y", "No wall on the -Y side"), ("+y", "+Y", "No wall on the +Y side"),
              ("-z", "-Z", "No wall on the -Z side (the floor)"), ("+z", "+Z", "No wall on the +Z side"))


def _role_changed(self, _context):
    if self.role == "DOMAIN":  # a solid box would hide the grains and render as a grey cube
        from ..quick_setup import show_domain

        show_domain(self.id_data)


class MochiObjectSettings(bpy.types.PropertyGroup):
    """What an object is to the simulation (Object.mochi)."""

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
    small_ratio: FloatProperty(
        name="Small Ratio", description="Radius of the smallest spheres as a fraction of the largest "
        "(1 packs one size; less fills the gaps with smaller spheres)",
        subtype="FACTOR", default=0.5, min=0.05, max=1.0, soft_min=0.1, soft_max=1.0)
    fill: EnumProperty(
        name="Fill", description="Fill the whole volume or only a shell under the surface",
        items=(("SOLID", "Solid", "Fill the whole volume"),
               ("SHELL", "Shell", "Keep only the outer layers of spheres")),
        default="SOLID")
    shell_layers: IntProperty(
        name="Layers", description="Number of sphere layers kept under the surface", default=1, min=1,
        soft_min=1, soft_max=10)
    density: FloatProperty(
        name="Density", description="Density of the grains, in kilograms per cubic metre (kg/m³)",
        default=2500.0, min=1.0e-3, soft_min=1.0, soft_max=20000.0)
    restitution: FloatProperty(
        name="Restitution", description="Share of the normal speed kept after a collision (1 is elastic)",
        subtype="FACTOR", default=0.5, min=0.001, max=1.0, soft_min=0.01, soft_max=1.0)
    friction: FloatProperty(
        name="Friction", description="Coulomb friction coefficient between grains (0 is frictionless)",
        default=0.5, min=0.0, soft_min=0.0, soft_max=2.0)
    rolling_friction: FloatProperty(
        name="Rolling", description="Rolling resistance (dimensionless): the torque that stops grains rolling "
        "is capped at this coefficient times the contact force times the grain radius. 0 rolls freely "
        "(glass beads), 0.1–0.3 like sand or gravel, higher like beans; the pile angle grows with it",
        default=0.0, min=0.0, soft_min=0.0, soft_max=1.0)
    cohesion: FloatProperty(
        name="Stickiness", description="Cohesion in pascals (Pa = J/m³): touching grains pull together with "
        "this value times their contact area, like damp sand, snow or sugar. With the linear contact "
        "spring it only holds grains together above stiffness / (2π × radius); below that it softens contacts",
        default=0.0, min=0.0, soft_min=0.0, soft_max=1.0e6)
    youngs_modulus: FloatProperty(
        name="Young's Modulus", description="Stiffness of the grains' material in pascals (Pa), for the "
        "Hertz–Mindlin contact law (unused by the linear one). DEM softens real solids (quartz: 7e10 Pa) to "
        "about 1e6–1e8 Pa: a softer material lets grains overlap more and bakes with fewer steps",
        default=5.0e6, min=1.0, max=1.0e13, soft_min=1.0e4, soft_max=1.0e11)
    poisson_ratio: FloatProperty(
        name="Poisson's Ratio", description="Poisson's ratio of the grains' material (dimensionless, 0 to "
        "0.5), for the Hertz–Mindlin contact law: how much it bulges sideways when squeezed (glass and sand "
        "about 0.25, rubber near 0.5)",
        default=0.3, min=0.0, max=0.4999, soft_min=0.0, soft_max=0.4999)
    body: EnumProperty(
        name="Body", description="How the grains packed from this object hold together",
        items=(("LOOSE", "Loose", "Every grain moves on its own"),
               ("GLUED", "Glued", "Touching grains are glued by bonds that break under stress (Glue) and stay "
                "broken: the object cracks or holds on impact"),
               ("RIGID", "Rigid", "All grains move as one rigid body that never deforms")),
        default="LOOSE")
    glue_strength: FloatProperty(
        name="Glue", description="Strength of the bonds of a glued object, in pascals (Pa): a bond breaks when "
        "its tension or shear stress exceeds it. About 1e4 Pa cracks a hand-sized object dropped from "
        "knee height; 1e6 Pa holds",
        default=1.0e5, min=1.0e-3, soft_min=1.0e2, soft_max=1.0e7)
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
    wall_restitution: FloatProperty(
        name="Wall Restitution", description="Share of the normal speed kept after hitting a wall",
        subtype="FACTOR", default=0.5, min=0.001, max=1.0, soft_min=0.01, soft_max=1.0)
    wall_friction: FloatProperty(
        name="Wall Friction", description="Coulomb friction coefficient between grains and walls",
        default=0.5, min=0.0, soft_min=0.0, soft_max=2.0)
    wall_rolling_friction: FloatProperty(
        name="Wall Rolling", description="Rolling resistance of the walls (dimensionless, averaged with the "
        "grain's own Rolling)",
        default=0.0, min=0.0, soft_min=0.0, soft_max=1.0)
    wall_cohesion: FloatProperty(
        name="Wall Stickiness", description="Cohesion of the walls in pascals (Pa); a grain sticks to a wall "
        "with the smaller of the two Stickiness values",
        default=0.0, min=0.0, soft_min=0.0, soft_max=1.0e6)
    wall_youngs_modulus: FloatProperty(
        name="Wall Young's Modulus", description="Young's modulus of the walls and of every collider in "
        "pascals (Pa), for the Hertz–Mindlin contact law (unused by the linear one)",
        default=5.0e6, min=1.0, max=1.0e13, soft_min=1.0e4, soft_max=1.0e11)
    wall_poisson_ratio: FloatProperty(
        name="Wall Poisson's Ratio", description="Poisson's ratio of the walls and of every collider "
        "(dimensionless, 0 to 0.5), for the Hertz–Mindlin contact law",
        default=0.3, min=0.0, max=0.4999, soft_min=0.0, soft_max=0.4999)
    # --- collider ---
    collider_thickness: FloatProperty(
        name="Thickness", description="Thickness of the collider's surface; grains keep their surface half of "
        "it away from each face, on both sides (0 for a closed mesh or a thin sheet)",
        subtype="DISTANCE", unit="LENGTH", default=0.0, min=0.0, soft_min=0.0, soft_max=0.1, precision=4)
    collider_restitution: FloatProperty(
        name="Restitution", description="Share of the normal speed a grain keeps after hitting this surface "
        "(averaged with the grain's own restitution)",
        subtype="FACTOR", default=0.5, min=0.001, max=1.0, soft_min=0.01, soft_max=1.0)
    collider_friction: FloatProperty(
        name="Friction", description="Coulomb friction coefficient of this surface (averaged with the grain's "
        "own friction; 0 is frictionless)",
        default=0.5, min=0.0, soft_min=0.0, soft_max=2.0)
    collider_rolling_friction: FloatProperty(
        name="Rolling", description="Rolling resistance of this surface (dimensionless, averaged with the "
        "grain's own Rolling; a grain rests on a slope of angle θ while tan θ stays below it). Acts on "
        "Rotating Grains only",
        default=0.0, min=0.0, soft_min=0.0, soft_max=1.0)
    collider_cohesion: FloatProperty(
        name="Stickiness", description="Cohesion of this surface in pascals (Pa); a grain sticks to it with "
        "the smaller of the two Stickiness values, as to a wall (it binds above about stiffness/(2π·radius); "
        "below that it only softens the contact)",
        default=0.0, min=0.0, soft_min=0.0, soft_max=1.0e6)
    pack_preview: PointerProperty(
        name="Pack Preview", description="Point cloud showing this object's packing (made by Pack)",
        type=bpy.types.Object)


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
