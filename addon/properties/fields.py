"""The scene's own engine fields (Scene.mochi.fields): uniform, rotating, vortex and sampled
accelerations, set in the Mochi Simulation > Fields panel. Blender's force-field objects (Force, Wind,
Vortex, Turbulence) are read from the scene at bake time instead (``addon.force_fields``).

Every field is an acceleration [m/s²] applied alike to grains of every mass, as Blender's fields move
particles of 1 kg (see ``engine.fields``)."""

from __future__ import annotations

import bpy
from bpy.props import EnumProperty, FloatVectorProperty, StringProperty

from ...engine.settings_schema import FIELD
from .schema import add_properties

FIELD_KIND_ITEMS = (
    ("UNIFORM", "Uniform", "The same acceleration everywhere (m/s²), added to gravity"),
    ("ROTATING", "Rotating", "An acceleration everywhere that turns about an axis at a constant rate, "
     "as gravity in a rotating drum"),
    ("VORTEX", "Vortex", "A swirl about an axis: solid-body inside the core radius, falling off as 1/distance "
     "outside (Rankine vortex)"),
    ("SAMPLED", "Sampled", "Accelerations sampled on a regular grid (.npy file of shape (nx, ny, nz, 3) in m/s²) "
     "over a box, trilinear between the nodes and zero outside"),
)


class MochiFieldSettings(bpy.types.PropertyGroup):
    """One engine field of the scene (an item of Scene.mochi.fields).

    Its Rate, Strength and Core Radius are not written out here: ``add_properties`` adds them from the
    engine.settings_schema field settings."""

    kind: EnumProperty(name="Type", description="Kind of field", items=FIELD_KIND_ITEMS, default="UNIFORM")
    vector: FloatVectorProperty(
        name="Acceleration", description="Acceleration of a uniform field, or of a rotating one at the first "
        "frame, in m/s² (Z is up)", subtype="ACCELERATION", unit="ACCELERATION", size=3,
        default=(1.0, 0.0, 0.0), soft_min=-50.0, soft_max=50.0)
    axis: FloatVectorProperty(
        name="Axis", description="Axis a rotating field turns about, or a vortex swirls about (right-handed; "
        "normalised)", subtype="XYZ", size=3, default=(0.0, 0.0, 1.0), soft_min=-1.0, soft_max=1.0)
    center: FloatVectorProperty(
        name="Center", description="A point on the vortex's axis, in metres", subtype="TRANSLATION",
        unit="LENGTH", size=3, default=(0.0, 0.0, 0.0))
    filepath: StringProperty(
        name="File", description="The .npy file of a sampled field: shape (nx, ny, nz, 3), m/s², the nodes "
        "spanning Min..Max", subtype="FILE_PATH", default="")
    lo: FloatVectorProperty(
        name="Min", description="Lower corner of the sampled box, in metres", subtype="TRANSLATION",
        unit="LENGTH", size=3, default=(-1.0, -1.0, 0.0))
    hi: FloatVectorProperty(
        name="Max", description="Upper corner of the sampled box, in metres", subtype="TRANSLATION",
        unit="LENGTH", size=3, default=(1.0, 1.0, 2.0))


add_properties(MochiFieldSettings, (FIELD,))
CLASSES = (MochiFieldSettings,)
