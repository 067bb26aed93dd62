"""Scene-wide Mochi settings: gravity, time stepping, backend, frame range (the scene's unless set) and
cache folder (per .blend file unless set)."""

from __future__ import annotations

import bpy
from bpy.props import (BoolProperty, CollectionProperty, EnumProperty, FloatProperty, FloatVectorProperty,
                       IntProperty, PointerProperty, StringProperty)

from ...engine.settings_schema import TIME, model_settings
from .fields import MochiFieldSettings
from .schema import add_properties, model_property

BACKEND_LABELS = {"auto": "Automatic", "cpu": "CPU", "cuda": "CUDA", "optix": "OptiX",
                  "rt": "GPU, ray traced (any vendor)"}
#: The engine backends the menu lists after 'auto', in its order (the enum numbers follow it: never reorder).
MENU_BACKENDS = ("cpu", "cuda", "optix", "rt")
_backend_items_cache: list = []

#: Blender 4.5+ warns about '//' paths unless a path property says it supports them; older Blenders
#: do not know the option (detected through the RNA flag that reports it).
PATH_OPTIONS = ({"PATH_SUPPORTS_BLEND_RELATIVE"}
                if "is_path_supports_blend_relative" in bpy.types.Property.bl_rna.properties else set())


def backend_items(_self, _context):
    """Enum items: 'auto' plus every engine backend, each saying whether it can start here.

    The availability comes from ``engine.backends.select``'s probes, cached for the session (the rt probe
    opens a slangpy device, about a second): Blender calls this at every redraw of the menu.
    """
    from ..backend_probe import backend_availability, unavailable_sentence

    probes = backend_availability()  # with the console quiet: absent devices print errors as they are tried
    found, missing = probes.found, probes.missing
    software_rt = probes.software_rt  # auto never picks a software device
    candidates = [n for n in found if not (n == "rt" and software_rt)]
    items = [("auto", "Automatic", "The fastest backend available here that passes its self-check ("
              + ", ".join(BACKEND_LABELS.get(n, n) for n in candidates) + ")", "AUTO", 0)]
    for number, name in enumerate(MENU_BACKENDS, start=1):
        reason = found.get(name)
        label = BACKEND_LABELS[name] + ("" if reason else " (not available)")
        if name == "rt" and software_rt:
            label += " (software)"
        tip = f"{BACKEND_LABELS[name]} backend: {reason}" if reason else \
            f"{BACKEND_LABELS[name]} backend, not available here: " + " ".join(
                unavailable_sentence(name, missing.get(name, "")))
        items.append((name, label, tip, "NONE", number))
    # Blender keeps pointers into the list returned here, so it must outlive the call.
    _backend_items_cache[:] = items
    return _backend_items_cache


def _playback_display_changed(self, context):
    from ..playback import apply_display_settings

    apply_display_settings(context.scene)


# The Mochi frame range follows the scene's (as Blender's own caches do) until the user sets one here.
# The getters read the scene's range while use_scene_range is on; the setters store the value and turn
# it off, so every reader (snapshot, playback, presets, the command line) sees one range.
_OWN_RANGE_DEFAULTS = {"frame_start": 1, "frame_end": 50}


def _own_range(self, key: str) -> int:
    return int(self.get(key, _OWN_RANGE_DEFAULTS[key]))


def _get_frame_start(self) -> int:
    return self.id_data.frame_start if self.use_scene_range else _own_range(self, "frame_start")


def _get_frame_end(self) -> int:
    return self.id_data.frame_end if self.use_scene_range else _own_range(self, "frame_end")


def _set_own_range(self, key: str, value: int) -> None:
    if self.use_scene_range:  # the other end keeps the scene's value it showed
        self["frame_start"], self["frame_end"] = self.id_data.frame_start, self.id_data.frame_end
        self.use_scene_range = False
    self[key] = int(value)


def _set_frame_start(self, value: int) -> None:
    _set_own_range(self, "frame_start", value)


def _set_frame_end(self, value: int) -> None:
    _set_own_range(self, "frame_end", value)


class MochiSceneSettings(bpy.types.PropertyGroup):
    """Settings of the scene's Mochi simulation (Scene.mochi).

    The model's settings (Contact Law, Friction, Rotating Grains, Integrator, Rebuild Interval, Seed) and
    the time step, substeps and stiffness set by hand are not written out here: ``_add_model_properties``
    and ``add_properties`` add one per engine.settings_schema setting.
    """

    # Not animatable: a bake reads gravity once; a keyframe would be silently ignored.
    gravity: FloatVectorProperty(
        name="Gravity", description="Gravitational acceleration in m/s² (Z is up). Not animatable: a bake "
        "reads it once; for a gravity that turns use Rotating Gravity", subtype="ACCELERATION", unit="ACCELERATION",
        size=3, default=(0.0, 0.0, -9.81), soft_min=-50.0, soft_max=50.0, options=set())
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
    use_auto_stiffness: BoolProperty(
        name="Automatic Stiffness",
        description="Choose the contact stiffness of the linear law from the grain sizes and masses", default=True)
    backend: EnumProperty(
        name="Backend", description="Where the simulation runs; unavailable devices say why",
        items=backend_items)
    use_scene_range: BoolProperty(
        name="Use Scene Range", description="Bake the scene's frame range (Output properties); setting Start "
        "or End here turns this off and bakes that range instead", default=True)
    frame_start: IntProperty(
        name="Start", description="Scene frame that shows the initial state (cache frame 1); the scene's "
        "start while Use Scene Range is on", get=_get_frame_start, set=_set_frame_start,
        soft_min=0, soft_max=10000)
    frame_end: IntProperty(
        name="End", description="Last scene frame to bake; the scene's end while Use Scene Range is on",
        get=_get_frame_end, set=_set_frame_end, soft_min=1, soft_max=10000)
    cache_directory: StringProperty(
        name="Cache Folder",
        description="Folder of the bake cache (PLY per frame); '//' is the folder of the .blend file. Empty: "
        "'//mochi_<file name>_<scene name>', beside the .blend and its own, so two files or two scenes never "
        "share a bake (a file saved under another name or a copied scene gets a folder of its own)",
        subtype="DIR_PATH", default="", options=PATH_OPTIONS)
    bake_token: StringProperty(
        name="Bake Owner", description="Random name of this scene in its bakes' manifests, told apart from "
        "a copied scene's (set by Mochi)", default="", options={"HIDDEN"})
    kept_cache_directory: StringProperty(
        name="Kept Cache Folder", description="An earlier version's default cache folder kept for this scene's "
        "bake (set by Mochi; a copy of the file or scene whose folder it is not gets its own default)",
        default="", options={"HIDDEN"})
    bake_token_scene: StringProperty(
        name="Bake Owner Scene", description="The scene's name when its bake owner was given (set by Mochi)",
        default="", options={"HIDDEN"})
    fields: CollectionProperty(
        type=MochiFieldSettings, name="Fields",
        description="Engine fields of the scene (uniform, rotating, vortex, sampled accelerations), added to "
        "gravity and to the scene's force-field objects")
    field_index: IntProperty(name="Active Field", description="The field selected in the list", default=0, min=0)
    playback_object: PointerProperty(
        name="Playback Object", description="Object whose geometry-nodes modifier plays the cache back "
        "(made by Bake)", type=bpy.types.Object)

    viewport_display_percentage: FloatProperty(
        name="Viewport Display", description="Share of the grains the viewport shows (the same grains on "
        "every frame); renders always show every grain", subtype="PERCENTAGE", default=100.0, min=0.0,
        max=100.0, update=_playback_display_changed)
    use_instances: BoolProperty(
        name="Instance Collection", description="Show a random object of the collection on each grain (rocks, "
        "candy, beans) instead of a sphere, scaled by the grain's radius and turned at random, or by the "
        "cache's orientation where it has one", default=False, update=_playback_display_changed)
    instance_collection: PointerProperty(
        name="Collection", description="Collection whose objects are instanced on the grains (model them "
        "about their origin with a radius of 1 m; Instance Scale resizes them)", type=bpy.types.Collection,
        update=_playback_display_changed)
    instance_scale: FloatProperty(
        name="Instance Scale", description="Size of an instance relative to its grain's radius", default=1.0,
        min=0.0, soft_max=4.0, update=_playback_display_changed)
    instance_grain_material: BoolProperty(
        name="Grain Material", description="Instances wear the grain material, coloured by source object like "
        "the spheres; off: they keep the materials of the collection's objects", default=True,
        update=_playback_display_changed)

    def frame_count(self) -> int:
        return self.frame_end - self.frame_start + 1


def _add_model_properties(cls) -> None:
    for setting in model_settings(blender_only=True):
        cls.__annotations__[setting.blender] = model_property(setting)


_add_model_properties(MochiSceneSettings)
add_properties(MochiSceneSettings, (TIME,))
CLASSES = (MochiFieldSettings, MochiSceneSettings)


def register():
    for cls in CLASSES:
        bpy.utils.register_class(cls)
    bpy.types.Scene.mochi = bpy.props.PointerProperty(type=MochiSceneSettings, name="Mochi",
                                                      description="Mochi simulation settings")


def unregister():
    del bpy.types.Scene.mochi
    for cls in reversed(CLASSES):
        bpy.utils.unregister_class(cls)
