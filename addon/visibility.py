"""What Mochi hides and shows again: the objects it hid are tagged, and only those are shown again.

While a bake exists its sources and pack previews are hidden in the viewport and from renders (the baked
grains show instead, not a second copy where they started); Delete Bake shows them again. A playback
whose frame was converted to a mesh (Convert Frame to Mesh) is hidden until new frames or a cache load
are to be seen. An object the artist hid stays as the artist left it.
"""

from __future__ import annotations

import bpy

#: Custom property on the objects Mochi hid from renders (shown again by Delete Bake).
HIDDEN_TAG = "mochi_hid_render"
#: Tag of the sources and previews a bake hid in the viewport (Delete Bake shows them again).
VIEWPORT_HIDDEN_TAG = "mochi_hid_viewport"
#: Tags of a playback object hidden by Convert Frame to Mesh, in renders and in the viewport (new frames
#: or Load Cache show it again).
CONVERTED_TAGS = ("mochi_hid_render_after_convert", "mochi_hid_viewport_after_convert")
SOURCE_TAGS = (HIDDEN_TAG, VIEWPORT_HIDDEN_TAG)


def set_hidden(obj: bpy.types.Object, hidden: bool) -> bool:
    """Hide or show ``obj`` in the viewport (the eye of the outliner, in every view layer that has it);
    False when no view layer could (an object outside the view layers)."""
    done = False
    for scene in bpy.data.scenes:
        for layer in scene.view_layers:
            try:
                obj.hide_set(hidden, view_layer=layer)
                done = True
            except RuntimeError:  # not in this view layer
                continue
    return done


def _hide(obj: bpy.types.Object, tags: tuple[str, str]) -> None:
    """Hide ``obj`` in renders and in the viewport, tagging with ``tags`` (render, viewport) only what this
    changed, so that ``_show`` shows that again and nothing the artist hid."""
    render_tag, viewport_tag = tags
    if not obj.hide_render:
        obj.hide_render = True
        obj[render_tag] = True
    if not obj.hide_get() and set_hidden(obj, True):
        obj[viewport_tag] = True


def _show(obj: bpy.types.Object, tags: tuple[str, str]) -> None:
    """Show again what ``_hide`` hid of ``obj`` under ``tags``."""
    render_tag, viewport_tag = tags
    if obj.get(render_tag):
        obj.hide_render = False
        del obj[render_tag]
    if obj.get(viewport_tag):
        set_hidden(obj, False)
        del obj[viewport_tag]


def hide_sources(scene: bpy.types.Scene) -> None:
    """Hide the scene's particle sources and pack previews from renders and from the viewport while a
    bake exists (the baked grains show instead, not a second copy floating where they started); the
    objects Mochi hid are tagged so that ``show_hidden_sources`` shows them again."""
    for obj in scene.objects:
        preview = obj.mochi.role == "SOURCE" and obj.mochi.pack_preview
        for target in (obj, preview) if obj.mochi.role == "SOURCE" else ():
            if target:
                _hide(target, SOURCE_TAGS)


def show_hidden_sources(scene: bpy.types.Scene, *, keep: set[str] = frozenset()) -> None:
    """Show again, in renders and the viewport, what ``hide_sources`` hid (Delete Bake), except the objects
    named in ``keep`` (shared with another scene whose bake still stands for them)."""
    for obj in scene.objects:
        if obj.name not in keep:
            _show(obj, SOURCE_TAGS)


def hide_converted_playback(obj: bpy.types.Object) -> None:
    """Hide the playback object in the viewport and in renders once one of its frames has been converted to
    a mesh: the mesh stands where the grains are, and both would be drawn and rendered (twice the geometry
    to draw, surfaces fighting). Tagged as the sources are, under tags of its own."""
    _hide(obj, CONVERTED_TAGS)


def show_converted_playback(obj: bpy.types.Object) -> None:
    """Show again what ``hide_converted_playback`` hid of the playback (new frames or a cache to see)."""
    _show(obj, CONVERTED_TAGS)
