"""Alembic export of a cache through Blender's own exporter, from the playback object.

Blender's Alembic writer exports the *evaluated mesh* of an object, and the playback object's
geometry nodes output a point cloud, which that writer skips ("Bounding box is null"). The export
therefore goes through a temporary copy of the playback object with one more node group, Points to
Vertices, so every grain becomes a vertex of an edge- and face-less mesh. What the Alembic file then
holds per frame: vertex positions (the grain centres) and ``.velocities`` (from the ``velocity``
attribute). What it does not hold: radii, ids, object ids and materials; Blender's Alembic writer
exports no generic attributes. USD (engine.export.usd) carries all of them. The temporary object and
node group are removed afterwards, so the .blend is left as it was. The exporter writes a temporary file
that is then renamed over the .abc, and only over an .abc Mochi can prove it wrote
(``engine.output_files``), unless ``overwrite``.
"""

from __future__ import annotations

from pathlib import Path

import bpy

from ..engine.errors import MochiError

TO_VERTICES_GROUP = "Mochi Points to Vertices"
EXPORT_OBJECT_NAME = "Mochi Alembic Export"


def _points_to_vertices_group() -> bpy.types.NodeTree:
    group = bpy.data.node_groups.new(TO_VERTICES_GROUP, "GeometryNodeTree")
    group.interface.new_socket("Geometry", in_out="INPUT", socket_type="NodeSocketGeometry")
    group.interface.new_socket("Geometry", in_out="OUTPUT", socket_type="NodeSocketGeometry")
    inputs, outputs = group.nodes.new("NodeGroupInput"), group.nodes.new("NodeGroupOutput")
    to_vertices = group.nodes.new("GeometryNodePointsToVertices")
    group.links.new(inputs.outputs["Geometry"], to_vertices.inputs["Points"])
    group.links.new(to_vertices.outputs["Mesh"], outputs.inputs["Geometry"])
    return group


def export_playback_alembic(context, playback_object: bpy.types.Object, filepath: str | Path, *,
                            frame_start: int, frame_end: int, overwrite: bool = False,
                            overwrite_hint: str = "tick Overwrite") -> Path:
    """Write scene frames ``frame_start``..``frame_end`` of ``playback_object`` to an Alembic file.

    Args:
        context: The Blender context (its scene and view layer are used; the selection is restored).
        playback_object: The scene's Mochi playback object.
        filepath: Destination .abc.
        frame_start: First scene frame to write.
        frame_end: Last scene frame to write (≥ frame_start).
        overwrite: Replace an existing file (or link) at ``filepath`` that Mochi cannot prove it wrote.
        overwrite_hint: How a refusal says to allow that ('add --overwrite' on the command line).

    Returns:
        The absolute path written.

    Raises:
        MochiError: no playback object, a bad frame range, a file at ``filepath`` that is not Mochi's
            (before anything is exported), or Blender writing nothing.
    """
    from ..engine.output_files import plan_outputs
    from . import compat

    if not compat.has_alembic_exporter():
        raise MochiError("This Blender was built without Alembic (some Linux distributions' builds are); "
                         "export USD instead, or use a Blender from blender.org.")
    if playback_object is None or playback_object.name not in context.scene.objects:
        raise MochiError("There is no Mochi playback object in this scene; bake or load a cache first.")
    if frame_end < frame_start:
        raise MochiError(f"The last frame ({frame_end}) is before the first ({frame_start}).")
    path = Path(bpy.path.abspath(str(filepath))).absolute()  # a link is replaced, never written through
    if path.suffix.lower() != ".abc":
        raise MochiError(f"'{path}' must end in .abc.")
    plan = plan_outputs([path], overwrite=overwrite, hint=overwrite_hint)

    def export(tmp: Path) -> None:
        result = bpy.ops.wm.alembic_export(filepath=str(tmp), start=frame_start, end=frame_end,
                                           selected=True, evaluation_mode="RENDER")
        if result != {"FINISHED"} or tmp.stat().st_size == 0:
            raise MochiError(f"Blender's Alembic exporter did not write '{path}'.")

    view_layer = context.view_layer
    selected = [obj for obj in context.selected_objects]
    active = view_layer.objects.active
    export_object = playback_object.copy()  # shares the mesh and the playback modifier's settings
    export_object.name = EXPORT_OBJECT_NAME
    group = _points_to_vertices_group()
    try:
        context.scene.collection.objects.link(export_object)
        modifier = export_object.modifiers.new(TO_VERTICES_GROUP, "NODES")
        modifier.node_group = group
        for obj in selected:
            obj.select_set(False)
        export_object.select_set(True)
        view_layer.objects.active = export_object
        path = plan.write_file(path, export)
    except OSError as exc:
        raise MochiError(f"Cannot write '{path}': {exc.strerror or exc}.") from None
    finally:
        bpy.data.objects.remove(export_object)
        bpy.data.node_groups.remove(group)
        for obj in selected:
            if obj.name in view_layer.objects:
                obj.select_set(True)
        view_layer.objects.active = active
    return path
