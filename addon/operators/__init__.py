"""Operators: Pack, Bake/Resume/Cancel, Free Bake, Open Cache Folder, presets."""

import bpy

from . import bake, cache, pack, presets

CLASSES = (*pack.CLASSES, *bake.CLASSES, *cache.CLASSES, *presets.CLASSES)


def register():
    for cls in CLASSES:
        bpy.utils.register_class(cls)


def unregister():
    for cls in reversed(CLASSES):
        bpy.utils.unregister_class(cls)
