"""Operators: Pack, Bake/Resume/Cancel, Free Bake, Open Cache Folder, presets, Export USD/Alembic, Save Flamenco Job Types,
Quick Grains, Add Mochi Bunny, Apply Look, Convert Frame to Mesh."""

import bpy

from . import bake, cache, export, farm, fields, pack, presets, quick, realize

CLASSES = (*pack.CLASSES, *bake.CLASSES, *cache.CLASSES, *presets.CLASSES, *fields.CLASSES, *export.CLASSES, *farm.CLASSES,
           *quick.CLASSES, *realize.CLASSES)


def register():
    for cls in CLASSES:
        bpy.utils.register_class(cls)
    export.register_menu()
    farm.register_menu()
    quick.register_menu()


def unregister():
    quick.unregister_menu()
    farm.unregister_menu()
    export.unregister_menu()
    for cls in reversed(CLASSES):
        bpy.utils.unregister_class(cls)
