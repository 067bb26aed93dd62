"""Menus of the Mochi Simulation panel's header: Looks (what grains are made of, for artists) and
Benchmarks (the presets: paper scenes and the user's saved scenes)."""

from __future__ import annotations

from pathlib import Path

import bpy


class MOCHI_MT_presets(bpy.types.Menu):
    """Mochi presets: the bundled ones and those in the user's scripts/presets/mochi folder"""

    bl_idname = "MOCHI_MT_presets"
    bl_label = "Benchmarks"

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


class MOCHI_MT_looks(bpy.types.Menu):
    """Looks: the grain size and material of sand, gravel, beads... applied to the selected particle sources"""

    bl_idname = "MOCHI_MT_looks"
    bl_label = "Looks"

    def draw(self, _context):
        from ...engine.errors import MochiError

        layout = self.layout
        try:
            from ...engine.looks import list_looks

            looks = list_looks()
        except (ImportError, MochiError) as exc:  # a damaged look file: say so in the menu, not a traceback
            layout.label(text=str(exc), icon="ERROR")
            return
        for entry in looks:
            op = layout.operator("mochi.look_apply", text=entry.label)
            op.look = entry.key


CLASSES = (MOCHI_MT_presets_remove, MOCHI_MT_presets, MOCHI_MT_looks)
