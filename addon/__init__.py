"""The Blender side of Mochi, laid out by Blender role.

properties/  Scene.mochi (simulation settings) and Object.mochi (role: particle source, domain box or collider)
operators/   Pack, Bake, Resume, Cancel, Free Bake, Open Cache Folder, Apply Preset, Quick Grains, Mochi Bunny, Looks
ui/          Physics-tab panels, preset menu, status-bar progress
snapshot.py  Blender → frozen settings (settings.py) in the main thread; colliders.py captures colliders per frame
bake_job.py  the worker thread (no bpy); bake_monitor.py follows it from the main thread
bake_state.py where the bake stands (idle, baked, out of date) for the bake panel
bake_owner.py which folder a scene bakes into and whose bake a folder holds; playback_owner.py keeps
             each scene's playback on its own bake (Save As, copied scenes, reopening)
playback.py  geometry-nodes playback of a cache and pack previews; render_check.py stops a render
             whose cache frame is missing
cli.py       `blender -b scene.blend -c mochi bake|render-preview`; headless.py does the same from the bpy module

Everything registered here is unregistered in ``unregister()``: classes, properties, the status-bar
draw function, the file-load handlers and the command-line command.
"""

import bpy

from . import bake_state, operators, playback_owner, preferences, properties, render_check, ui

MODULES = (preferences, properties, operators, ui, render_check, bake_state, playback_owner)

_cli_handle = None


@bpy.app.handlers.persistent
def _stop_bake_before_load(*_args):
    """A file is about to be loaded: the running bake belongs to the old one, so stop it cleanly."""
    from .bake_job import stop_all
    from .pre_bake_estimate import stop_measurement

    stop_all()
    stop_measurement()


@bpy.app.handlers.persistent
def _show_domains_after_load(*_args):
    """Files made before domains were drawn as wire boxes: draw theirs so too, and keep them out of renders
    (the bakes' folders and playbacks are followed by ``playback_owner``)."""
    from .quick_setup import show_all_domains

    for scene in bpy.data.scenes:
        show_all_domains(scene)


def register():
    global _cli_handle
    for module in MODULES:
        module.register()
    bpy.app.handlers.load_pre.append(_stop_bake_before_load)
    bpy.app.handlers.load_post.append(_show_domains_after_load)
    from .cli import cli_command
    from .compat import register_cli_command

    _cli_handle = register_cli_command("mochi", cli_command)
    from .preload import start_preload

    start_preload()


def unregister():
    global _cli_handle
    from .bake_job import stop_all
    from .pre_bake_estimate import stop_measurement

    stop_all()
    stop_measurement()
    if _cli_handle is not None:
        bpy.utils.unregister_cli_command(_cli_handle)
        _cli_handle = None
    if _show_domains_after_load in bpy.app.handlers.load_post:
        bpy.app.handlers.load_post.remove(_show_domains_after_load)
    if _stop_bake_before_load in bpy.app.handlers.load_pre:
        bpy.app.handlers.load_pre.remove(_stop_bake_before_load)
    for module in reversed(MODULES):
        module.unregister()
