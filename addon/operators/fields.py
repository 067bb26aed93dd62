"""Add and remove the scene's own engine fields (Scene.mochi.fields)."""

from __future__ import annotations

import bpy


class MOCHI_OT_field_add(bpy.types.Operator):
    """Add an engine field (uniform, rotating, vortex or sampled acceleration) to the scene"""

    bl_idname = "mochi.field_add"
    bl_label = "Add Mochi Field"
    bl_options = {"REGISTER", "UNDO"}

    def execute(self, context):
        s = context.scene.mochi
        item = s.fields.add()
        item.name = f"Field {len(s.fields)}"
        s.field_index = len(s.fields) - 1
        return {"FINISHED"}


class MOCHI_OT_field_remove(bpy.types.Operator):
    """Remove the selected engine field"""

    bl_idname = "mochi.field_remove"
    bl_label = "Remove Mochi Field"
    bl_options = {"REGISTER", "UNDO"}

    @classmethod
    def poll(cls, context):
        s = context.scene.mochi
        return 0 <= s.field_index < len(s.fields)

    def execute(self, context):
        s = context.scene.mochi
        s.fields.remove(s.field_index)
        s.field_index = max(0, min(s.field_index, len(s.fields) - 1))
        return {"FINISHED"}


CLASSES = (MOCHI_OT_field_add, MOCHI_OT_field_remove)
