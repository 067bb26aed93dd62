"""The Fields subpanel: the scene's own engine fields in a list with add/remove, the selected field's
settings below, and a line on the scene's force-field objects that the bake also takes."""

from __future__ import annotations

import bpy


class MOCHI_UL_fields(bpy.types.UIList):
    """Scene.mochi.fields, one row per field: its name and kind."""

    def draw_item(self, _context, layout, _data, item, _icon, _active_data, _active_propname, _index):
        icons = {"UNIFORM": "FORCE_WIND", "ROTATING": "FILE_REFRESH", "VORTEX": "FORCE_VORTEX",
                 "SAMPLED": "FORCE_TEXTURE"}
        row = layout.row(align=True)
        row.prop(item, "name", text="", emboss=False, icon=icons.get(item.kind, "FORCE_FORCE"))
        row.label(text=item.bl_rna.properties["kind"].enum_items[item.kind].name)


class MOCHI_PT_fields(bpy.types.Panel):
    """Engine fields added to gravity (in m/s², alike for every grain); Blender's force-field objects too."""

    bl_label = "Fields"
    bl_space_type = "PROPERTIES"
    bl_region_type = "WINDOW"
    bl_context = "physics"
    bl_parent_id = "MOCHI_PT_simulation"
    bl_options = {"DEFAULT_CLOSED"}

    def draw(self, context):
        from ..force_fields import SUPPORTED_TYPES

        layout = self.layout
        s = context.scene.mochi
        row = layout.row()
        row.template_list("MOCHI_UL_fields", "", s, "fields", s, "field_index", rows=3)
        col = row.column(align=True)
        col.operator("mochi.field_add", icon="ADD", text="")
        col.operator("mochi.field_remove", icon="REMOVE", text="")
        if 0 <= s.field_index < len(s.fields):
            item = s.fields[s.field_index]
            col = layout.column()
            col.use_property_split = True
            col.prop(item, "kind")
            if item.kind in ("UNIFORM", "ROTATING"):
                col.prop(item, "vector")
            if item.kind in ("ROTATING", "VORTEX"):
                col.prop(item, "axis")
            if item.kind == "ROTATING":
                col.prop(item, "rate")
            if item.kind == "VORTEX":
                col.prop(item, "center")
                col.prop(item, "core_radius")
            if item.kind in ("VORTEX", "SAMPLED"):
                col.prop(item, "strength")
            if item.kind == "SAMPLED":
                col.prop(item, "filepath")
                col.prop(item, "lo")
                col.prop(item, "hi")
        objects = [o for o in context.scene.objects if o.field is not None and o.field.type != "NONE"]
        baked = sum(o.field.type in SUPPORTED_TYPES for o in objects)
        if objects:
            layout.label(text=f"Force-field objects: {baked} baked, {len(objects) - baked} not supported",
                         icon="FORCE_FORCE" if baked == len(objects) else "ERROR")
        layout.label(text="Gravity and field settings are read at the first frame", icon="INFO")


CLASSES = (MOCHI_UL_fields, MOCHI_PT_fields)
