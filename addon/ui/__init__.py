"""User interface: Physics-tab panels, the preset menu, the status-bar progress."""

import bpy

from . import fields, panels, presets, status

CLASSES = (*presets.CLASSES, *panels.CLASSES, *fields.CLASSES)


def register():
    for cls in CLASSES:
        bpy.utils.register_class(cls)
    status.register()


def unregister():
    status.unregister()
    for cls in reversed(CLASSES):
        bpy.utils.unregister_class(cls)
