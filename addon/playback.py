"""Geometry-nodes playback of a cache and point-cloud previews of packings.

The playback node group reads the PLY of the current frame with 'Import PLY' (path built from the
scene frame), turns its vertices into points with their ``radius``, stores ``velocity`` (for motion
blur) from vx vy vz and sets a material. The node group, the folder and the frame range live in the
.blend (as modifier inputs), so a render farm needs the cache folder but not the add-on.
"""

from __future__ import annotations

import bpy
import numpy as np

from ..engine.cache import FRAME_PATTERN
from ..engine.errors import MochiError
from . import compat

PLAYBACK_GROUP = "Mochi Playback"
POINTS_GROUP = "Mochi Points"
MATERIAL_NAME = "Mochi Grain"
COLLECTION_NAME = "Mochi"
MODIFIER_NAME = "Mochi Playback"
INPUT_FOLDER, INPUT_START, INPUT_LAST, INPUT_MATERIAL = "Cache Folder", "Start Frame", "Last Frame", "Material"


def playback_supported() -> bool:
    """Whether this Blender has the 'Import PLY' geometry node (Blender 4.5 and newer)."""
    return compat.has_import_ply_node()


def _new_group(name: str) -> bpy.types.NodeTree:
    group = bpy.data.node_groups.new(name, "GeometryNodeTree")
    group.interface.new_socket("Geometry", in_out="OUTPUT", socket_type="NodeSocketGeometry")
    return group


def _points_with_radius_and_velocity(group, mesh_socket, material_socket, x: float):
    """Mesh to Points (radius attribute) → velocity attribute → Set Material; returns the output socket."""
    nodes, links = group.nodes, group.links
    radius = nodes.new("GeometryNodeInputNamedAttribute")
    radius.data_type = "FLOAT"
    radius.inputs["Name"].default_value = "radius"
    radius.location = (x, -200)
    to_points = nodes.new("GeometryNodeMeshToPoints")
    to_points.mode = "VERTICES"
    to_points.location = (x + 200, 0)
    links.new(mesh_socket, to_points.inputs["Mesh"])
    links.new(radius.outputs["Attribute"], to_points.inputs["Radius"])

    combine = nodes.new("ShaderNodeCombineXYZ")
    combine.location = (x + 200, -300)
    for row, axis in enumerate("xyz"):
        component = nodes.new("GeometryNodeInputNamedAttribute")
        component.data_type = "FLOAT"
        component.inputs["Name"].default_value = f"v{axis}"
        component.location = (x, -350 - 120 * row)
        links.new(component.outputs["Attribute"], combine.inputs[axis.upper()])
    store = nodes.new("GeometryNodeStoreNamedAttribute")
    store.data_type = "FLOAT_VECTOR"
    store.domain = "POINT"
    store.inputs["Name"].default_value = "velocity"
    store.location = (x + 400, 0)
    links.new(to_points.outputs["Points"], store.inputs["Geometry"])
    links.new(combine.outputs["Vector"], store.inputs["Value"])

    set_material = nodes.new("GeometryNodeSetMaterial")
    set_material.location = (x + 600, 0)
    links.new(store.outputs["Geometry"], set_material.inputs["Geometry"])
    links.new(material_socket, set_material.inputs["Material"])
    return set_material.outputs["Geometry"]


def _frame_path_format_string(group, folder_socket, frame_socket):
    """Blender 5.0+: Format String '{folder}/frame_{frame:04}.ply'."""
    fmt = group.nodes.new("FunctionNodeFormatString")
    fmt.location = (-200, 200)
    fmt.format_items.new("STRING", "folder")
    fmt.format_items.new("INT", "frame")
    pattern = FRAME_PATTERN.replace("{frame:04d}", "{frame:04}")
    fmt.inputs["Format"].default_value = "{folder}/" + pattern
    group.links.new(folder_socket, fmt.inputs["folder"])
    group.links.new(frame_socket, fmt.inputs["frame"])
    return fmt.outputs["String"]


def _frame_path_join_strings(group, folder_socket, frame_socket):
    """Blender 4.5 (no Format String): the last four digits of 10000 + frame, joined to the folder."""
    nodes, links = group.nodes, group.links
    offset = nodes.new("ShaderNodeMath")
    offset.operation = "ADD"
    offset.inputs[1].default_value = 10000.0
    offset.location = (-600, 200)
    links.new(frame_socket, offset.inputs[0])
    text = nodes.new("FunctionNodeValueToString")
    text.location = (-400, 200)
    links.new(offset.outputs["Value"], text.inputs["Value"])
    digits = nodes.new("FunctionNodeSliceString")
    digits.inputs["Position"].default_value = 1
    digits.inputs["Length"].default_value = 4
    digits.location = (-200, 200)
    links.new(text.outputs["String"], digits.inputs["String"])
    head, tail = FRAME_PATTERN.split("{frame:04d}")
    join = nodes.new("GeometryNodeStringJoin")
    join.location = (0, 200)
    parts = [folder_socket, _string(group, "/" + head, 100), digits.outputs["String"], _string(group, tail, 0)]
    _link_in_order(group, parts, join.inputs["Strings"])
    return join.outputs["String"]


def _link_in_order(group, sources, target) -> None:
    """Link ``sources`` into the multi-input ``target`` so that it lists them in this order."""
    for source in sources:
        group.links.new(source, target)
    if [link.from_socket for link in target.links] != list(sources):
        # Some Blender versions put each new link first; relink the other way round.
        for link in list(target.links):
            group.links.remove(link)
        for source in reversed(sources):
            group.links.new(source, target)
    if [link.from_socket for link in target.links] != list(sources):
        raise MochiError("This Blender orders the links of Join Strings in an unexpected way.")


def _string(group, value: str, y: float):
    node = group.nodes.new("FunctionNodeInputString")
    node.string = value
    node.location = (-200, y)
    return node.outputs["String"]


def build_playback_group(*, use_format_string: bool | None = None) -> bpy.types.NodeTree:
    """Create the playback node group (a new one each call)."""
    if not playback_supported():
        raise MochiError("Playing a Mochi cache back needs Blender 4.5 or newer (the Import PLY node); "
                         "the bake itself is complete.")
    if use_format_string is None:
        use_format_string = compat.has_format_string_node()
    group = _new_group(PLAYBACK_GROUP)
    interface = group.interface
    interface.new_socket(INPUT_FOLDER, in_out="INPUT", socket_type="NodeSocketString")
    start = interface.new_socket(INPUT_START, in_out="INPUT", socket_type="NodeSocketInt")
    start.default_value = 1
    last = interface.new_socket(INPUT_LAST, in_out="INPUT", socket_type="NodeSocketInt")
    last.default_value, last.min_value = 1, 1
    interface.new_socket(INPUT_MATERIAL, in_out="INPUT", socket_type="NodeSocketMaterial")
    nodes, links = group.nodes, group.links
    inputs = nodes.new("NodeGroupInput")
    inputs.location = (-1400, 0)
    output = nodes.new("NodeGroupOutput")
    output.location = (1200, 0)

    # cache frame = clamp(scene frame − start + 1, 1, last), rounded to an integer
    time = nodes.new("GeometryNodeInputSceneTime")
    time.location = (-1400, 300)
    shift = nodes.new("ShaderNodeMath")
    shift.operation = "SUBTRACT"
    shift.location = (-1200, 300)
    links.new(time.outputs["Frame"], shift.inputs[0])
    links.new(inputs.outputs[INPUT_START], shift.inputs[1])
    one = nodes.new("ShaderNodeMath")
    one.operation = "ADD"
    one.inputs[1].default_value = 1.0
    one.location = (-1000, 300)
    links.new(shift.outputs["Value"], one.inputs[0])
    clamp = nodes.new("ShaderNodeClamp")
    clamp.location = (-800, 300)
    clamp.inputs["Min"].default_value = 1.0
    links.new(one.outputs["Value"], clamp.inputs["Value"])
    links.new(inputs.outputs[INPUT_LAST], clamp.inputs["Max"])
    to_int = nodes.new("FunctionNodeFloatToInt")
    to_int.rounding_mode = "ROUND"
    to_int.location = (-800, 100)
    links.new(clamp.outputs["Result"], to_int.inputs["Float"])

    make_path = _frame_path_format_string if use_format_string else _frame_path_join_strings
    path = make_path(group, inputs.outputs[INPUT_FOLDER], to_int.outputs["Integer"])
    importer = nodes.new("GeometryNodeImportPLY")
    importer.location = (200, 0)
    links.new(path, importer.inputs["Path"])
    result = _points_with_radius_and_velocity(group, importer.outputs["Mesh"], inputs.outputs[INPUT_MATERIAL], 400)
    links.new(result, output.inputs["Geometry"])
    return group


def build_points_group() -> bpy.types.NodeTree:
    """Node group showing a mesh's vertices as spheres of their 'radius' attribute (pack previews)."""
    group = _new_group(POINTS_GROUP)
    group.interface.new_socket("Geometry", in_out="INPUT", socket_type="NodeSocketGeometry")
    group.interface.new_socket(INPUT_MATERIAL, in_out="INPUT", socket_type="NodeSocketMaterial")
    inputs = group.nodes.new("NodeGroupInput")
    output = group.nodes.new("NodeGroupOutput")
    output.location = (1000, 0)
    result = _points_with_radius_and_velocity(group, inputs.outputs["Geometry"], inputs.outputs[INPUT_MATERIAL], 200)
    group.links.new(result, output.inputs["Geometry"])
    return group


def grain_material() -> bpy.types.Material:
    """The default grain material (created once per .blend; users may edit or replace it)."""
    material = bpy.data.materials.get(MATERIAL_NAME)
    if material is None:
        material = bpy.data.materials.new(MATERIAL_NAME)
        material.diffuse_color = (0.8, 0.55, 0.35, 1.0)
        if compat.needs_use_nodes():
            material.use_nodes = True
        bsdf = material.node_tree.nodes.get("Principled BSDF") if material.node_tree else None
        if bsdf is not None:
            bsdf.inputs["Base Color"].default_value = (0.8, 0.55, 0.35, 1.0)
            bsdf.inputs["Roughness"].default_value = 0.6
    return material


def mochi_collection(scene: bpy.types.Scene) -> bpy.types.Collection:
    collection = bpy.data.collections.get(COLLECTION_NAME)
    if collection is None:
        collection = bpy.data.collections.new(COLLECTION_NAME)
    if collection.name not in scene.collection.children:
        scene.collection.children.link(collection)
    return collection


def _group(name: str, builder) -> bpy.types.NodeTree:
    group = bpy.data.node_groups.get(name)
    return group if group is not None else builder()


def folder_for_node(folder: str) -> str:
    """A folder as written into the node tree: '//' kept (relative to the .blend), no trailing slash."""
    folder = folder.strip()
    stripped = folder.rstrip("/\\")
    return stripped if stripped and stripped != "/" else folder


def ensure_playback_object(scene: bpy.types.Scene, folder: str, *, start_frame: int, last_frame: int,
                           up_axis: str = "Z", name: str = "Mochi Playback") -> bpy.types.Object:
    """Create or update the scene's playback object for the cache in ``folder``.

    Args:
        scene: Scene that owns the playback object (Scene.mochi.playback_object).
        folder: Cache folder as stored in the .blend ('//' = relative to the .blend).
        start_frame: Scene frame showing cache frame 1.
        last_frame: Newest complete cache frame (later scene frames hold it).
        up_axis: 'Z' for Blender bakes; 'Y' for engine presets (the object is turned to Z up).
    """
    obj = scene.mochi.playback_object
    if obj is None or obj.name not in scene.objects:
        obj = bpy.data.objects.new(name, bpy.data.meshes.new(name))
        mochi_collection(scene).objects.link(obj)
        scene.mochi.playback_object = obj
    modifier = obj.modifiers.get(MODIFIER_NAME)
    if modifier is None:
        modifier = obj.modifiers.new(MODIFIER_NAME, "NODES")
    if modifier.node_group is None:
        modifier.node_group = _group(PLAYBACK_GROUP, build_playback_group)
    compat.modifier_input_set(modifier, INPUT_FOLDER, folder_for_node(folder))
    compat.modifier_input_set(modifier, INPUT_START, int(start_frame))
    compat.modifier_input_set(modifier, INPUT_LAST, max(1, int(last_frame)))
    if compat.modifier_input_get(modifier, INPUT_MATERIAL) is None:
        compat.modifier_input_set(modifier, INPUT_MATERIAL, grain_material())
    obj.rotation_euler = (np.pi / 2, 0.0, 0.0) if up_axis.upper() == "Y" else (0.0, 0.0, 0.0)
    obj.update_tag()
    return obj


def set_last_frame(obj: bpy.types.Object, last_frame: int) -> None:
    """Let playback show cache frames up to ``last_frame`` (called as frames are written)."""
    modifier = obj.modifiers.get(MODIFIER_NAME)
    if modifier is not None and modifier.node_group is not None:
        compat.modifier_input_set(modifier, INPUT_LAST, max(1, int(last_frame)))
        obj.update_tag()


def remove_object(obj: bpy.types.Object | None) -> None:
    """Delete an object made by Mochi and its mesh."""
    if obj is None:
        return
    mesh = obj.data if obj.type == "MESH" else None
    bpy.data.objects.remove(obj)
    if mesh is not None and mesh.users == 0:
        bpy.data.meshes.remove(mesh)


def show_packing(scene: bpy.types.Scene, source: bpy.types.Object, positions: np.ndarray,
                 radius: np.ndarray) -> bpy.types.Object:
    """Create or replace the point-cloud preview of a packed source.

    Args:
        positions: Sphere centres in world space [m], shape (n, 3).
        radius: Sphere radii [m], shape (n,).
    """
    name = f"{source.name} Mochi Pack"
    mesh = bpy.data.meshes.new(name)
    mesh.vertices.add(len(radius))
    mesh.vertices.foreach_set("co", np.ascontiguousarray(positions, np.float32).ravel())
    attribute = mesh.attributes.new("radius", "FLOAT", "POINT")
    attribute.data.foreach_set("value", np.ascontiguousarray(radius, np.float32))
    mesh.update()
    old = source.mochi.pack_preview
    if old is not None:
        remove_object(old)
    preview = bpy.data.objects.new(name, mesh)
    mochi_collection(scene).objects.link(preview)
    preview.hide_select = True
    preview.hide_render = True  # a viewport preview; the bake is what renders
    modifier = preview.modifiers.new("Mochi Points", "NODES")
    modifier.node_group = _group(POINTS_GROUP, build_points_group)
    compat.modifier_input_set(modifier, INPUT_MATERIAL, grain_material())
    source.mochi.pack_preview = preview
    return preview
