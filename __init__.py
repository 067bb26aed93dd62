"""Blender extension entry point of Mochi.

Inside Blender this folder is the package ``bl_ext.<repository>.mochi``; its subpackages are
``.engine`` (the simulation, no bpy) and ``.addon`` (the Blender side). Blender calls ``register()``
when the extension is enabled and ``unregister()`` when it is disabled. Outside Blender nothing imports
this file except ``addon/headless.py``, which loads the folder as the package ``mochi`` in the bpy
module.
"""


def register():
    from .addon import register as register_addon

    register_addon()


def unregister():
    from .addon import unregister as unregister_addon

    unregister_addon()
