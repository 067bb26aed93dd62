"""Blender extension entry point of Mochi.

Inside Blender this folder is the package ``bl_ext.<repository>.mochi``; its subpackages are
``.engine`` (the simulation, no bpy) and ``.addon`` (the Blender side). Blender calls ``register()``
when the extension is enabled and ``unregister()`` when it is disabled. Outside Blender nothing imports
this file except ``addon/headless.py``, which loads the folder as the package ``mochi`` in the bpy
module.
"""


def _use_extension_user_folder_for_numba_cache() -> None:
    """Keep numba's compiled kernels in this extension's user folder, which Blender deletes when the
    extension is uninstalled (nothing of ours is left behind), before the engine compiles anything."""
    import bpy

    from .engine import set_numba_cache_folder

    try:
        set_numba_cache_folder(bpy.utils.extension_path_user(__package__, path="numba_cache", create=True))
    except ValueError:  # not installed as an extension (addon/headless.py): keep the default
        pass


def register():
    from .addon import register as register_addon

    _use_extension_user_folder_for_numba_cache()
    register_addon()


def unregister():
    from .addon import unregister as unregister_addon

    unregister_addon()
