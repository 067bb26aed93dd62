"""The preset menu shown in the header of the Mochi Simulation panel."""

from __future__ import annotations

from pathlib import Path

import bpy


class MOCHI_MT_presets(bpy.types.Menu):
    """Mochi presets: the bundled ones and those in the user's scripts/presets/mochi folder"""

    bl_idname = "MOCHI_MT_presets"
    bl_label = "Presets"

    def draw(self, _context):
        from ..operators.presets import MOCHI_OT_preset_apply, preset_folders

        self.path_menu(preset_folders(), MOCHI_OT_preset_apply.bl_idname,
                       filter_ext=lambda ext: ext.lower() == ".toml",
                       display_name=lambda path: bpy.path.display_name(Path(path).name, title_case=True))


CLASSES = (MOCHI_MT_presets,)
