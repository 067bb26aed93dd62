"""Blender properties of Mochi: Scene.mochi (simulation settings) and Object.mochi (role)."""

from . import object as object_settings
from . import scene as scene_settings

MODULES = (scene_settings, object_settings)


def register():
    for module in MODULES:
        module.register()


def unregister():
    for module in reversed(MODULES):
        module.unregister()
