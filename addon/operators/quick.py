"""Quick Grains (Object › Quick Effects), Add › Mesh › Mochi Bunny, and the Looks: one click from a mesh
to a scene that bakes, as Blender's Quick Liquid does for fluids."""

from __future__ import annotations

import bpy
from bpy.props import StringProperty


class MOCHI_OT_quick_grains(bpy.types.Operator):
    """Turn the selected meshes into grains: Mochi sources with a look (sand by default), inside a wire domain box fitted around them with a floor and room to fall and spread"""

    bl_idname = "mochi.quick_grains"
    bl_label = "Quick Grains"
    bl_options = {"REGISTER", "UNDO"}

    look: StringProperty(name="Look", description="Key of the look the grains get (sand, gravel, beads, "
                         "candy, wet_sand, glued_bunny); empty for the default look", default="")

    def execute(self, context):
        from ...engine.errors import MochiError
        from ...engine.looks import DEFAULT_LOOK, look
        from .. import quick_setup as q

        sources, skipped = q.quick_source_candidates(list(context.selected_objects))
        if not sources:
            self.report({"ERROR"}, "Select one or more mesh objects to turn into grains first.")
            return {"CANCELLED"}
        scene = context.scene
        try:
            chosen = look(self.look or DEFAULT_LOOK)
            radius, estimate = q.radius_within_budget(context, sources, chosen.radius, chosen.small_ratio)
        except MochiError as exc:
            self.report({"ERROR"}, str(exc))
            return {"CANCELLED"}
        for obj in sources:
            obj.mochi.role = "SOURCE"
            q.apply_look(obj, chosen, radius=radius)
        lo, hi = q.fitted_domain_box(*q.world_bounds(sources))
        domain, created = q.fit_domain(scene, lo, hi)
        q.ensure_ground(scene, lo, hi)
        if scene.mochi.cache_directory.strip() in {"", "//mochi_cache"}:
            scene.mochi.cache_directory = ""  # the per-file default, //mochi_<file name>
        names = ", ".join(f"'{o.name}'" for o in sources)
        size = f" (radius raised to {radius * 1000:.1f} mm to keep about {estimate:,} grains)" \
            if radius > chosen.radius * 1.0001 else f" (about {estimate:,} grains)"
        note = f"; {', '.join(skipped)}" if skipped else ""
        self.report({"INFO"}, f"{names} will fall as {chosen.label.lower()}{size} in "
                    f"{'a new' if created else 'the'} domain '{domain.name}' with a floor{note}.")
        return {"FINISHED"}


class MOCHI_OT_add_bunny(bpy.types.Operator):
    """Add the Stanford bunny of the Mochi paper, 30 cm tall, at the 3D cursor"""

    bl_idname = "mochi.add_bunny"
    bl_label = "Mochi Bunny"
    bl_options = {"REGISTER", "UNDO"}

    def execute(self, context):
        from ...engine.errors import MochiError
        from ..quick_setup import BUNNY_HEIGHT, bunny_mesh

        try:
            mesh = bunny_mesh()
        except MochiError as exc:
            self.report({"ERROR"}, str(exc))
            return {"CANCELLED"}
        obj = bpy.data.objects.new("Bunny", mesh)
        context.collection.objects.link(obj)
        obj.location = context.scene.cursor.location
        for other in context.selected_objects:
            other.select_set(False)
        obj.select_set(True)
        context.view_layer.objects.active = obj
        self.report({"INFO"}, f"Added '{obj.name}', {BUNNY_HEIGHT * 100:.0f} cm tall, at the 3D cursor.")
        return {"FINISHED"}


class MOCHI_OT_look_apply(bpy.types.Operator):
    """Give every selected particle source this look: grain radius, small grains and material"""

    bl_idname = "mochi.look_apply"
    bl_label = "Apply Look"
    bl_options = {"REGISTER", "UNDO"}

    look: StringProperty(name="Look", description="Key of the look (a file stem in presets/looks)")

    def execute(self, context):
        from ...engine.errors import MochiError
        from ...engine.looks import look

        targets = [o for o in context.selected_objects if o.mochi.role == "SOURCE"]
        active = context.object
        if not targets and active is not None and active.mochi.role == "SOURCE":
            targets = [active]  # the object shown in the Properties editor, when nothing is selected
        if not targets:
            self.report({"ERROR"}, "Select the particle sources to give a look to (or use Quick Grains).")
            return {"CANCELLED"}
        try:
            chosen = look(self.look)
        except MochiError as exc:
            self.report({"ERROR"}, str(exc))
            return {"CANCELLED"}
        self.report({"INFO"}, give_look(context.scene, targets, chosen))
        return {"FINISHED"}


def give_look(scene, targets, chosen) -> str:
    """Give the sources ``targets`` the look ``chosen``; the sentence naming every setting it changed."""
    from ..bake_state import invalidate
    from ..change_report import changes_in_words, settings_snapshot, summary
    from ..quick_setup import apply_look

    before = settings_snapshot(scene, targets)
    for obj in targets:
        apply_look(obj, chosen)
    changed = changes_in_words(before, settings_snapshot(scene, targets))
    invalidate()  # a bake of these sources is out of date now, not at the next frame
    names = ", ".join(f"'{o.name}'" for o in targets)
    return f"Gave {names} the {chosen.label} look: {summary(changed)}."


def _quick_effects_entry(self, _context):
    self.layout.operator(MOCHI_OT_quick_grains.bl_idname, icon="POINTCLOUD_DATA")


def _add_mesh_entry(self, _context):
    self.layout.operator(MOCHI_OT_add_bunny.bl_idname, icon="MESH_MONKEY")


CLASSES = (MOCHI_OT_quick_grains, MOCHI_OT_add_bunny, MOCHI_OT_look_apply)


def register_menu():
    bpy.types.VIEW3D_MT_object_quick_effects.append(_quick_effects_entry)
    bpy.types.VIEW3D_MT_mesh_add.append(_add_mesh_entry)


def unregister_menu():
    bpy.types.VIEW3D_MT_mesh_add.remove(_add_mesh_entry)
    bpy.types.VIEW3D_MT_object_quick_effects.remove(_quick_effects_entry)
