"""Blender extension entry point of Mochi.

Inside Blender this folder is the package ``bl_ext.<repository>.mochi``; its subpackages are
``.engine`` (the simulation, no bpy) and ``.addon`` (the Blender side). Blender calls ``register()``
when the extension is enabled and ``unregister()`` when it is disabled. Outside Blender nothing imports
this file except ``addon/headless.py``, which loads the folder as the package ``mochi`` in the bpy
module.

A Blender whose Python lacks a module the add-on needs (a Linux distribution's Blender without its numpy
package, or a zip for another platform) gets one sentence on stderr and an inactive add-on, never a
traceback: ``register()`` checks before importing anything, ``unregister()`` undoes only what ran.
"""

import sys

#: Modules imported by the add-on and the engine: numpy comes with Blender (a separate package in Linux
#: distributions, e.g. Debian's python3-numpy); the others ship as wheels inside the extension's zip.
REQUIRED_MODULES = ("numpy", "numba", "scipy", "trimesh", "plyfile")

_registered = False


def missing_modules() -> list[str]:
    """The names in REQUIRED_MODULES that this Blender's Python cannot import (found, not imported).

    An empty folder of that name (left by an uninstall) is found as a namespace package without an
    origin: it counts as missing too.
    """
    from importlib.util import find_spec

    missing = []
    for name in REQUIRED_MODULES:
        spec = find_spec(name)
        if spec is None or spec.origin is None:
            missing.append(name)
    return missing


def missing_modules_sentence(missing: list[str]) -> str:
    """One sentence telling the user what is missing and what to install."""
    if "numpy" in missing:
        return ("Mochi is inactive: this Blender's Python has no numpy (a Linux distribution's Blender "
                "needs its numpy package, e.g. `apt install python3-numpy`).")
    return (f"Mochi is inactive: its bundled {', '.join(missing)} did not install; reinstall the "
            "extension from the zip made for this platform and Blender line.")


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
    global _registered
    if missing := missing_modules():
        print(missing_modules_sentence(missing), file=sys.stderr)
        return
    from .addon import register as register_addon

    _use_extension_user_folder_for_numba_cache()
    register_addon()
    _registered = True


def unregister():
    global _registered
    if not _registered:  # register() found a module missing and registered nothing
        return
    from .addon import unregister as unregister_addon

    unregister_addon()
    _registered = False
