"""The preset menu shown in the header of the Mochi Simulation panel."""

from __future__ import annotations

from pathlib import Path

import bpy


class MOCHI_MT_presets(bpy.types.Menu):
    """Mochi presets: the bundled ones and those in the user's scripts/presets/mochi folder"""

    bl_idname = "MOCHI_MT_presets"
    bl_label = "Presets"

    def draw(self, _context):
        from ..operators.presets import MOCHI_OT_preset_apply, preset_folders, user_presets

        self.path_menu(preset_folders(), MOCHI_OT_preset_apply.bl_idname,
                       filter_ext=lambda ext: ext.lower() == ".toml",
                       display_name=lambda path: bpy.path.display_name(Path(path).name, title_case=True))
        layout = self.layout
        layout.separator()
        layout.operator("mochi.preset_save", text="Save Scene as Preset…", icon="ADD")
        if user_presets():
            layout.menu(MOCHI_MT_presets_remove.bl_idname, icon="REMOVE")


class MOCHI_MT_presets_remove(bpy.types.Menu):
    """Your own presets, to remove one"""

    bl_idname = "MOCHI_MT_presets_remove"
    bl_label = "Remove Preset"

    def draw(self, _context):
        from ..operators.presets import user_presets

        for path in user_presets():
            op = self.layout.operator("mochi.preset_remove",
                                      text=bpy.path.display_name(path.name, title_case=True))
            op.filepath = str(path)


CLASSES = (MOCHI_MT_presets_remove, MOCHI_MT_presets)
