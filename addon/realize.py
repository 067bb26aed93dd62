"""A played-back frame made real: the grains of the current frame as an independent mesh object.

The playback object draws spheres (a point cloud) or instances of a collection, read from the cache at
every frame. Converting makes that frame's grains a mesh of their own, which no longer needs the cache
or the add-on: a geometry-nodes modifier on a new object reads the playback through Object Info,
realises the instances, puts an icosphere of the grain's radius on every point, and the result is
copied out with ``bpy.data.meshes.new_from_object`` before the modifier and its node group are removed.
The grains' attributes (``object_id``, ``mochi_random``, ``velocity`` …) land on the vertices, where
the grain material reads them, so the mesh renders in the colours of the playback.
"""

from __future__ import annotations

from dataclasses import dataclass

import bpy
import numpy as np

from ..engine.errors import MochiError
from . import compat, playback, visibility

REALIZE_GROUP = "Mochi Realize"


@dataclass(frozen=True)
class RealizedFrame:
    """What ``realize_frame`` made: the new object, its cache frame and its size."""

    obj: bpy.types.Object
    cache_frame: int
    grain_count: int
    vertex_count: int


def _realize_group(source: bpy.types.Object, material: bpy.types.Material | None,
                   subdivisions: int) -> bpy.types.NodeTree:
    """Object Info (source, its own space) → Realize Instances; its points → icospheres of their
    ``radius`` [m] wearing ``material``, realised; joined with the realised meshes."""
    group = bpy.data.node_groups.new(REALIZE_GROUP, "GeometryNodeTree")
    group.interface.new_socket("Geometry", in_out="OUTPUT", socket_type="NodeSocketGeometry")
    nodes, links = group.nodes, group.links
    info = nodes.new("GeometryNodeObjectInfo")
    info.transform_space = "ORIGINAL"  # the new object takes the playback's matrix instead
    info.inputs["Object"].default_value = source
    instances = nodes.new("GeometryNodeRealizeInstances")
    links.new(info.outputs["Geometry"], instances.inputs["Geometry"])
    parts = nodes.new("GeometryNodeSeparateComponents")
    links.new(instances.outputs["Geometry"], parts.inputs["Geometry"])

    sphere = nodes.new("GeometryNodeMeshIcoSphere")
    sphere.inputs["Radius"].default_value = 1.0
    sphere.inputs["Subdivisions"].default_value = subdivisions
    smooth = nodes.new("GeometryNodeSetShadeSmooth")
    links.new(sphere.outputs["Mesh"], smooth.inputs["Geometry"])
    dress = nodes.new("GeometryNodeSetMaterial")
    dress.inputs["Material"].default_value = material
    links.new(smooth.outputs["Geometry"], dress.inputs["Geometry"])
    radius = nodes.new("GeometryNodeInputNamedAttribute")
    radius.data_type = "FLOAT"
    radius.inputs["Name"].default_value = "radius"
    # Instance on Points carries the points' attributes to the instances, Realize to their vertices.
    on_points = nodes.new("GeometryNodeInstanceOnPoints")
    links.new(parts.outputs["Point Cloud"], on_points.inputs["Points"])
    links.new(dress.outputs["Geometry"], on_points.inputs["Instance"])
    links.new(radius.outputs["Attribute"], on_points.inputs["Scale"])
    spheres = nodes.new("GeometryNodeRealizeInstances")
    links.new(on_points.outputs["Instances"], spheres.inputs["Geometry"])
    join = nodes.new("GeometryNodeJoinGeometry")
    links.new(spheres.outputs["Geometry"], join.inputs["Geometry"])
    links.new(parts.outputs["Mesh"], join.inputs["Geometry"])
    output = nodes.new("NodeGroupOutput")
    links.new(join.outputs["Geometry"], output.inputs["Geometry"])
    return group


def _cache_frame(modifier: bpy.types.NodesModifier, scene_frame: int) -> int:
    """The cache frame the playback shows at ``scene_frame`` (its node tree's clamp, in Python)."""
    start = int(compat.modifier_input_get(modifier, playback.INPUT_START) or 1)
    last = int(compat.modifier_input_get(modifier, playback.INPUT_LAST) or 1)
    return int(np.clip(scene_frame - start + 1, 1, max(last, 1)))


def _grain_count(depsgraph, obj: bpy.types.Object) -> int:
    geometry = obj.evaluated_get(depsgraph).evaluated_geometry()
    if geometry.pointcloud is not None and len(geometry.pointcloud.points):
        return len(geometry.pointcloud.points)
    cloud = geometry.instances_pointcloud()
    return len(cloud.points) if cloud is not None else 0


def _drop_empty_slots(mesh: bpy.types.Mesh) -> None:
    """Remove the material slots that are empty and used by no face (joining geometry leaves one for the
    parts that had no material), so the mesh lists just the materials it wears."""
    indices = np.zeros(len(mesh.polygons), np.int32)
    if "material_index" in mesh.attributes:
        mesh.attributes["material_index"].data.foreach_get("value", indices)
    used = set(np.unique(indices).tolist())
    for index in reversed(range(len(mesh.materials))):
        if mesh.materials[index] is None and index not in used:
            mesh.materials.pop(index=index)  # later faces' indices move down with it


def realize_frame(context, *, subdivisions: int = 1, hide_playback: bool = True) -> RealizedFrame:
    """Make the scene's playback at the current frame a new mesh object in the active collection.

    Every grain is converted, also where the viewport shows only a share of them (*Viewport Display*):
    the share is set to 100 % while converting. The new object is selected and made active.

    Args:
        subdivisions: Subdivisions of the icosphere drawn for a sphere grain (1: 12 vertices, 2: 42,
            3: 162 per grain); instanced objects keep their own mesh. 1 by default: smooth-shaded, a grain
            a few pixels across reads as a sphere, and the mesh stays light to draw (24,000 grains at 2
            subdivisions are 1 M vertices, whose first draw alone held a software-OpenGL window 1 s).
        hide_playback: Hide the playback object (viewport and renders) so that its grains are not drawn
            twice; the next bake or Load Cache shows it again (``visibility.hide_converted_playback``).

    Raises:
        MochiError: no playback object, or the frame has no grains.
    """
    scene = context.scene
    source = scene.mochi.playback_object
    modifier = source.modifiers.get(playback.MODIFIER_NAME) if source is not None else None
    if source is None or source.name not in scene.objects or modifier is None or modifier.node_group is None:
        raise MochiError("There are no baked grains to convert: bake first, or load a cache (Load Cache).")
    cache_frame = _cache_frame(modifier, scene.frame_current)
    material = compat.modifier_input_get(modifier, playback.INPUT_MATERIAL)
    shown = compat.modifier_input_get(modifier, playback.INPUT_DISPLAY)
    name = f"{source.name} Frame {cache_frame}"
    obj = bpy.data.objects.new(name, bpy.data.meshes.new(name))
    (context.collection or scene.collection).objects.link(obj)
    group = _realize_group(source, material, subdivisions)
    converter = obj.modifiers.new(REALIZE_GROUP, "NODES")
    converter.node_group = group
    try:
        if shown is not None:
            compat.modifier_input_set(modifier, playback.INPUT_DISPLAY, 100.0)
            source.update_tag()
        depsgraph = context.evaluated_depsgraph_get()
        grain_count = _grain_count(depsgraph, source)
        mesh = bpy.data.meshes.new_from_object(obj.evaluated_get(depsgraph), preserve_all_data_layers=True,
                                               depsgraph=depsgraph)
    except BaseException:
        playback.remove_object(obj)
        raise
    finally:
        if shown is not None:
            compat.modifier_input_set(modifier, playback.INPUT_DISPLAY, shown)
            source.update_tag()
        bpy.data.node_groups.remove(group)
    empty = obj.data
    obj.modifiers.remove(obj.modifiers[REALIZE_GROUP])
    obj.data = mesh
    bpy.data.meshes.remove(empty)  # first, so that the mesh can take its name
    mesh.name = name
    _drop_empty_slots(mesh)
    if not mesh.vertices:
        playback.remove_object(obj)
        raise MochiError(f"Cache frame {cache_frame} has no grains to convert.")
    obj.matrix_world = source.matrix_world.copy()
    if hide_playback:
        visibility.hide_converted_playback(source)
    for other in context.view_layer.objects.selected:
        other.select_set(False)
    obj.select_set(True)
    context.view_layer.objects.active = obj
    return RealizedFrame(obj=obj, cache_frame=cache_frame, grain_count=grain_count,
                         vertex_count=len(mesh.vertices))
