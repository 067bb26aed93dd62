"""Panels in the Physics tab of the properties editor: the object's role, the simulation, the bake."""

from __future__ import annotations

import bpy

from ...engine.settings_schema import COLLIDER, GRAIN, WALL


class _PhysicsPanel:
    bl_space_type = "PROPERTIES"
    bl_region_type = "WINDOW"
    bl_context = "physics"

    @classmethod
    def poll(cls, context):
        return context.object is not None and context.scene is not None


class MOCHI_PT_object(_PhysicsPanel, bpy.types.Panel):
    """The active object's role in the simulation and its settings."""

    bl_label = "Mochi"

    def draw(self, context):
        layout = self.layout
        layout.use_property_split = True
        settings = context.object.mochi
        hertz = context.scene.mochi.contact_law == "HERTZ"
        layout.operator("mochi.quick_grains", icon="POINTCLOUD_DATA")
        layout.prop(settings, "role")
        if settings.role == "SOURCE":
            self.draw_source(layout, settings, hertz)
        elif settings.role == "DOMAIN":
            self.draw_domain(layout, settings, hertz)
        elif settings.role == "COLLIDER":
            self.draw_collider(layout, context.object, hertz)

    @staticmethod
    def draw_source(layout, s, hertz: bool):
        layout.menu("MOCHI_MT_looks", icon="MATERIAL")
        col = layout.column()
        col.prop(s, "size_mode")
        col.prop(s, "radius" if s.size_mode == "RADIUS" else "count")
        col.prop(s, "small_ratio")
        col.prop(s, "fill")
        if s.fill == "SHELL":
            col.prop(s, "shell_layers")
        _draw_surface(layout.column(heading="Material"), s, GRAIN, hertz)
        col = layout.column()
        col.prop(s, "body")
        if s.body == "GLUED":
            col.prop(s, "glue_strength")
        col = layout.column()
        col.prop(s, "velocity_source")
        if s.velocity_source == "MANUAL":
            col.prop(s, "linear_velocity")
            col.prop(s, "angular_velocity")
        layout.operator("mochi.pack", icon="POINTCLOUD_DATA")

    @staticmethod
    def draw_domain(layout, s, hertz: bool):
        row = layout.row(heading="Open Sides")
        row.prop(s, "open_sides")
        _draw_surface(layout.column(), s, WALL, hertz)

    @staticmethod
    def draw_collider(layout, obj, hertz: bool):
        from ..colliders import collider_deforms

        s = obj.mochi
        _draw_surface(layout.column(heading="Surface"), s, COLLIDER, hertz)
        if hertz:  # the engine gives every collider the walls' moduli: say where they are set
            layout.label(text="Young's modulus and Poisson's ratio: the domain's walls'", icon="INFO")
        if obj.type != "MESH":
            layout.label(text="Colliders must be mesh objects", icon="ERROR")
        elif collider_deforms(obj):
            layout.label(text="Deforming: its evaluated mesh is captured at every frame", icon="MOD_SIMPLEDEFORM")
        else:
            layout.label(text="Rigid: its mesh is captured once, its transform at every frame", icon="OBJECT_DATA")


class MOCHI_PT_simulation(_PhysicsPanel, bpy.types.Panel):
    """Scene-wide settings: gravity, time stepping, backend."""

    bl_label = "Mochi Simulation"

    def draw_header_preset(self, _context):
        row = self.layout.row(align=True)
        row.menu("MOCHI_MT_looks", text="", icon="MATERIAL")
        row.menu("MOCHI_MT_presets", text="", icon="PRESET")

    def draw(self, context):
        layout = self.layout
        layout.use_property_split = True
        s = context.scene.mochi
        layout.prop(s, "gravity")
        layout.prop(s, "use_rotating_gravity")
        if s.use_rotating_gravity:
            col = layout.column()
            col.prop(s, "gravity_axis")
            col.prop(s, "gravity_rate")
        col = layout.column()
        col.prop(s, "timestep_mode")
        if s.timestep_mode == "SUBSTEPS":
            col.prop(s, "substeps")
        elif s.timestep_mode == "FIXED":
            col.prop(s, "dt")
        col.prop(s, "contact_law")
        if s.contact_law == "HERTZ":
            # The engine refuses a given stiffness with Hertz–Mindlin: the moduli set it, so no control here.
            col.label(text="Stiffness from each material's Young's modulus", icon="INFO")
        else:
            col.prop(s, "use_auto_stiffness")
            if not s.use_auto_stiffness:
                col.prop(s, "stiffness")
        col.prop(s, "friction_model")
        col.prop(s, "rotation")
        col.prop(s, "integrator")
        col.prop(s, "rebuild_interval")
        col.prop(s, "backend")
        _draw_backend_unavailable(col, s.backend)
        if s.contact_law == "HERTZ" and s.backend in GPU_BACKENDS:
            # Said before the bake, which the GPU backend would refuse once the grains are packed.
            col.label(text="The GPU backends have only the linear law: choose CPU", icon="ERROR")
        col.prop(s, "seed")


def _draw_backend_unavailable(col, backend: str) -> None:
    """Under the Backend menu, when the chosen backend cannot run here: why, and the one thing to do."""
    from ..backend_probe import backend_availability, unavailable_sentence

    reason = backend_availability().missing.get(backend)
    if reason is None:
        return
    why, action = unavailable_sentence(backend, reason)
    for number, line in enumerate(_wrap(why, 48) + _wrap(action, 48)):
        col.label(text=line, icon="ERROR" if number == 0 else "BLANK1")


#: Backends whose kernels have only the linear contact law (engine.backends.gpu_params.check_contact_law,
#: engine.backends.rt_support).
GPU_BACKENDS = frozenset({"cuda", "optix", "rt"})


def _draw_surface(col, s, surface: str, hertz: bool) -> None:
    """The material or surface settings of ``surface`` on ``s`` (engine.settings_schema, in its order);
    those only Hertz–Mindlin reads (Young's modulus, Poisson's ratio) in a column of their own, greyed
    out (still editable) unless that is the contact law."""
    from ...engine.settings_schema import blender_name, settings_for

    for setting in settings_for(surface):
        if not setting.hertz_only:
            col.prop(s, blender_name(setting, surface))
    moduli = col.column()
    moduli.active = hertz
    for setting in settings_for(surface):
        if setting.hertz_only:
            moduli.prop(s, blender_name(setting, surface))


class MOCHI_PT_bake(_PhysicsPanel, bpy.types.Panel):
    """Frame range, cache folder, and the bake buttons with the running bake's progress."""

    bl_label = "Bake"
    bl_parent_id = "MOCHI_PT_simulation"

    def draw(self, context):
        from ..bake_job import current_job
        from ..bake_state import bake_state
        from ..bake_owner import default_cache_directory
        from .status import draw_estimate, draw_time_before_bake, progress_of

        layout = self.layout
        layout.use_property_split = True
        s = context.scene.mochi
        layout.prop(s, "use_scene_range")
        col = layout.column(align=True)
        col.active = not s.use_scene_range  # still editable: setting a value turns the toggle off
        col.prop(s, "frame_start", text="Frame Start")
        col.prop(s, "frame_end", text="End")
        if _HAS_PLACEHOLDER:  # an empty field shows the per-file folder the bake will use
            layout.prop(s, "cache_directory",
                        placeholder=default_cache_directory(context.scene) or "//mochi_<file name>_<scene name>")
        else:
            layout.prop(s, "cache_directory")
        job = current_job()
        if job is not None:
            factor, text = progress_of(job)
            row = layout.row(align=True)
            row.progress(factor=factor, type="BAR", text=text)
            row.operator("mochi.bake_cancel", text="", icon="CANCEL")
            draw_estimate(layout, job)
            return
        state = bake_state(context)
        if state.kind == "IDLE":
            draw_time_before_bake(layout, context)
        self.draw_state(layout, state)

    @staticmethod
    def draw_state(layout, state):
        """Bake, Resume and Delete Bake as the bake's state allows them, with its summary and why not."""
        from ..bake_state import summary_line

        if state.kind == "IDLE":
            layout.label(text="Not baked yet", icon="INFO")
        if state.kind == "BAKED" or state.kind == "FOREIGN":
            box = layout.box()
            box.label(text=("Baked: " if state.complete else "Incomplete: ") + summary_line(state),
                      icon="CHECKMARK" if state.complete else "INFO")
            if state.out_of_date:
                box.label(text="Out of date: settings changed since the bake", icon="ERROR")
                for line in _wrap(state.changed):
                    box.label(text=line)
        if state.kind in {"FOREIGN", "UNAVAILABLE"}:
            for number, line in enumerate(_wrap(state.reason)):
                layout.label(text=line, icon="ERROR" if number == 0 else "BLANK1")
        row = layout.row(align=True)
        bake = row.row(align=True)
        bake.enabled = state.kind in {"IDLE", "UNAVAILABLE"}  # UNAVAILABLE: Bake says why in one sentence
        bake.operator("mochi.bake", icon="PHYSICS")
        if state.kind == "BAKED" and not state.complete and not state.out_of_date:
            row.operator("mochi.bake_resume", icon="PLAY")
        if state.kind == "BAKED":
            layout.label(text=state.reason, icon="INFO")
        row = layout.row(align=True)
        delete = row.row(align=True)
        delete.enabled = state.kind == "BAKED"
        delete.operator("mochi.free_bake", icon="TRASH")
        row.operator("mochi.load_cache", text="", icon="IMPORT")
        row.operator("mochi.open_cache_folder", text="", icon="FILE_FOLDER")


#: Whether UILayout.prop takes a placeholder (grey text in an empty field).
_HAS_PLACEHOLDER = "placeholder" in bpy.types.UILayout.bl_rna.functions["prop"].parameters


def _wrap(text: str, width: int = 60) -> list[str]:
    """``text`` in lines of about ``width`` characters (a panel label does not wrap by itself)."""
    import textwrap

    return textwrap.wrap(text, width) or [""]


class MOCHI_PT_playback(_PhysicsPanel, bpy.types.Panel):
    """How the baked grains show: a share of them in the viewport, or a collection instanced on them."""

    bl_label = "Playback"
    bl_parent_id = "MOCHI_PT_simulation"
    bl_options = {"DEFAULT_CLOSED"}

    def draw(self, context):
        layout = self.layout
        layout.use_property_split = True
        s = context.scene.mochi
        layout.prop(s, "viewport_display_percentage")
        layout.prop(s, "use_instances")
        col = layout.column()
        col.active = s.use_instances
        col.prop(s, "instance_collection")
        col.prop(s, "instance_scale")
        col.prop(s, "instance_grain_material")
        row = layout.row()
        row.enabled = s.playback_object is not None
        row.operator("mochi.realize_frame", icon="MESH_ICOSPHERE")


CLASSES = (MOCHI_PT_object, MOCHI_PT_simulation, MOCHI_PT_bake, MOCHI_PT_playback)
