"""A render never shows a missing cache frame as an empty image: it stops, naming the frame.

Playback reads the cache frame that maps to the scene frame (``addon.playback``: scene frame f shows
cache frame clamp(f − start + 1, 1, last)). When that file is missing (a partial copy to a farm node, a
deleted frame), geometry nodes would quietly render no grains. The ``render_pre`` handler checks the
file first; in background renders (``blender -b scene.blend -f N``, farms) it prints one sentence and
ends Blender with exit status 1 — an exception in a handler would only be printed and the empty frame
written — and in the UI it reports the sentence.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import bpy

from . import compat, playback


def missing_cache_frame(scene: bpy.types.Scene) -> str | None:
    """One sentence about the cache frame the current scene frame needs, when its file is missing."""
    obj = scene.mochi.playback_object
    if obj is None or obj.name not in scene.objects or obj.hide_render:
        return None
    modifier = obj.modifiers.get(playback.MODIFIER_NAME)
    if modifier is None or modifier.node_group is None or not modifier.show_render:
        return None
    folder = compat.modifier_input_get(modifier, playback.INPUT_FOLDER)
    start = compat.modifier_input_get(modifier, playback.INPUT_START)
    last = compat.modifier_input_get(modifier, playback.INPUT_LAST)
    if not folder or start is None or last is None:
        return None
    cache_frame = min(max(scene.frame_current - int(start) + 1, 1), max(int(last), 1))
    path = Path(bpy.path.abspath(folder)) / f"frame_{cache_frame:04d}.ply"
    if path.is_file():
        return None
    return (f"Mochi: scene frame {scene.frame_current} needs cache frame {cache_frame}, and '{path}' is missing; "
            "copy the whole cache folder (or bake again) before rendering.")


@bpy.app.handlers.persistent
def _check_before_render(scene, *_args):
    message = missing_cache_frame(scene)
    if message is None:
        return
    print(message, file=sys.stderr, flush=True)
    if bpy.app.background:
        os._exit(1)  # noqa: a handler cannot cancel a render; ending here keeps the empty frame unwritten


def register():
    bpy.app.handlers.render_pre.append(_check_before_render)


def unregister():
    if _check_before_render in bpy.app.handlers.render_pre:
        bpy.app.handlers.render_pre.remove(_check_before_render)
