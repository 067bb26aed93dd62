"""Geometry-nodes playback of a cache and point-cloud previews of packings.

The playback node group reads the PLY of the current frame with 'Import PLY' (path built from the
scene frame), turns its vertices into points with their ``radius``, stores ``velocity`` (for motion
blur) from vx vy vz and sets a material. The node group, the folder and the frame range live in the
.blend (as modifier inputs), so a render farm needs the cache folder but not the add-on.

Render-ready by default: every grain gets ``mochi_random`` (0..1, a hash of its particle ``id``, so it
is the same on every frame and needs nothing in the cache), the grain material colours grains by their
source object (``object_id``) and varies them by ``mochi_random``; the viewport can show a fraction of
the grains (*Viewport Display*, renders always show all); and a collection's objects can be instanced
on the grains (*Instance Collection*), one picked at random per grain, scaled by the grain's radius and
turned by the cache's orientation (``qw qx qy qz``) where the cache has one, else by a random rotation
seeded by the id. The instances wear the grain material and carry the grain's attributes, so they take
the colour their sphere would have had (or, with *Grain Material* off, keep their own materials). While a bake exists its sources are hidden from renders
(``addon/visibility.py``), and shown again when it is freed.
"""

from __future__ import annotations

import bpy
import numpy as np

from ..engine.cache import FRAME_PATTERN
from ..engine.errors import MochiError
from . import compat, visibility

PLAYBACK_GROUP = "Mochi Playback"
POINTS_GROUP = "Mochi Points"
MATERIAL_NAME = "Mochi Grain"
COLLECTION_NAME = "Mochi"
MODIFIER_NAME = "Mochi Playback"
INPUT_FOLDER, INPUT_START, INPUT_LAST, INPUT_MATERIAL = "Cache Folder", "Start Frame", "Last Frame", "Material"
INPUT_DISPLAY, INPUT_USE_INSTANCES, INPUT_COLLECTION, INPUT_INSTANCE_SCALE = (
    "Viewport Display", "Use Instances", "Instance Collection", "Instance Scale")
INPUT_INSTANCE_GRAIN_MATERIAL = "Instances Wear Grain Material"
#: The per-grain random value the material reads, and the per-grain key it is hashed from.
RANDOM_ATTRIBUTE = "mochi_random"
KEY_ATTRIBUTE = "mochi_id"
#: The pack preview's own material: a pale blue, so a preview is never taken for baked grains.
PREVIEW_MATERIAL_NAME = "Mochi Pack Preview"


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
    result = _render_ready(group, result, inputs, 1200)
    output.location = (2600, 0)
    links.new(result, output.inputs["Geometry"])
    return group


def _named(group, name: str, data_type: str, location):
    node = group.nodes.new("GeometryNodeInputNamedAttribute")
    node.data_type = data_type
    node.inputs["Name"].default_value = name
    node.location = location
    return node


def _random(group, data_type: str, seed: int, id_socket, location):
    """A Random Value node of ``data_type`` keyed by the particle id (same value on every frame)."""
    node = group.nodes.new("FunctionNodeRandomValue")
    node.data_type = data_type
    node.location = location
    compat.node_socket(node.inputs, "Seed").default_value = seed
    group.links.new(id_socket, compat.node_socket(node.inputs, "ID"))
    return node


def _render_ready(group, points, inputs, x: float):
    """Random attribute, viewport thinning and collection instancing after the points (module docstring)."""
    nodes, links = group.nodes, group.links
    interface = group.interface
    display = interface.new_socket(INPUT_DISPLAY, in_out="INPUT", socket_type="NodeSocketFloat")
    display.default_value, display.min_value, display.max_value = 100.0, 0.0, 100.0
    display.subtype = "PERCENTAGE"
    interface.new_socket(INPUT_USE_INSTANCES, in_out="INPUT", socket_type="NodeSocketBool")
    interface.new_socket(INPUT_COLLECTION, in_out="INPUT", socket_type="NodeSocketCollection")
    scale = interface.new_socket(INPUT_INSTANCE_SCALE, in_out="INPUT", socket_type="NodeSocketFloat")
    scale.default_value, scale.min_value = 1.0, 0.0
    wear = interface.new_socket(INPUT_INSTANCE_GRAIN_MATERIAL, in_out="INPUT", socket_type="NodeSocketBool")
    wear.default_value = True
    # The grain's key: its particle id, or its row where the PLY importer drops 'id' (Blender 4.5; rows
    # are in particle order on every frame), stored before thinning changes the rows.
    cache_id = _named(group, "id", "INT", (x - 400, -600))
    index = nodes.new("GeometryNodeInputIndex")
    index.location = (x - 400, -800)
    key = nodes.new("GeometryNodeSwitch")
    key.input_type, key.location = "INT", (x - 200, -600)
    links.new(cache_id.outputs["Exists"], key.inputs["Switch"])
    links.new(index.outputs[0], key.inputs["False"])
    links.new(cache_id.outputs["Attribute"], key.inputs["True"])
    store_key = nodes.new("GeometryNodeStoreNamedAttribute")
    store_key.data_type, store_key.domain = "INT", "POINT"
    store_key.inputs["Name"].default_value = KEY_ATTRIBUTE
    store_key.location = (x, 0)
    links.new(points, store_key.inputs["Geometry"])
    links.new(key.outputs[0], store_key.inputs["Value"])
    grain_id = _named(group, KEY_ATTRIBUTE, "INT", (x, -600)).outputs["Attribute"]

    value = _random(group, "FLOAT", 0, grain_id, (x + 200, -400))
    store = nodes.new("GeometryNodeStoreNamedAttribute")
    store.data_type, store.domain = "FLOAT", "POINT"
    store.inputs["Name"].default_value = RANDOM_ATTRIBUTE
    store.location = (x + 400, 0)
    links.new(store_key.outputs["Geometry"], store.inputs["Geometry"])
    links.new(compat.node_socket(value.outputs, "Value"), store.inputs["Value"])

    # Viewport only: drop each grain unless its id's coin (probability = percentage / 100) says keep.
    fraction = nodes.new("ShaderNodeMath")
    fraction.operation, fraction.location = "DIVIDE", (x + 200, -800)
    fraction.inputs[1].default_value = 100.0
    links.new(inputs.outputs[INPUT_DISPLAY], fraction.inputs[0])
    keep = _random(group, "BOOLEAN", 1, grain_id, (x + 400, -800))
    links.new(fraction.outputs["Value"], compat.node_socket(keep.inputs, "Probability"))
    viewport = nodes.new("GeometryNodeIsViewport")
    viewport.location = (x + 400, -600)
    drop = nodes.new("FunctionNodeBooleanMath")
    drop.operation, drop.location = "NIMPLY", (x + 600, -600)  # in the viewport and not kept
    links.new(viewport.outputs[0], drop.inputs[0])
    links.new(compat.node_socket(keep.outputs, "Value"), drop.inputs[1])
    # Grains that left through an open side stay in the cache, inactive (active = 0) where they left:
    # never drawn, in the viewport or in renders. Frames without the column keep every grain.
    active = _named(group, "active", "FLOAT", (x + 200, -1000))
    gone = nodes.new("ShaderNodeMath")
    gone.operation, gone.location = "LESS_THAN", (x + 400, -1000)
    gone.inputs[1].default_value = 0.5
    links.new(active.outputs["Attribute"], gone.inputs[0])
    left = nodes.new("FunctionNodeBooleanMath")
    left.operation, left.location = "AND", (x + 600, -1000)
    links.new(active.outputs["Exists"], left.inputs[0])
    links.new(gone.outputs["Value"], left.inputs[1])
    hide = nodes.new("FunctionNodeBooleanMath")
    hide.operation, hide.location = "OR", (x + 700, -700)
    links.new(drop.outputs[0], hide.inputs[0])
    links.new(left.outputs[0], hide.inputs[1])
    delete = nodes.new("GeometryNodeDeleteGeometry")
    delete.domain, delete.location = "POINT", (x + 800, 0)
    links.new(store.outputs["Geometry"], delete.inputs["Geometry"])
    links.new(hide.outputs[0], delete.inputs["Selection"])
    # Deleting points drops a point cloud's material (Blender 5.0: the grains rendered white once any
    # was deleted), so the grain material is set again on what is left.
    kept = nodes.new("GeometryNodeSetMaterial")
    kept.location = (x + 1000, 0)
    links.new(delete.outputs["Geometry"], kept.inputs["Geometry"])
    links.new(inputs.outputs[INPUT_MATERIAL], kept.inputs["Material"])

    # Instances: a child of the collection per grain, scaled by its radius, turned by its orientation.
    info = nodes.new("GeometryNodeCollectionInfo")
    info.location = (x + 800, -300)
    info.inputs["Separate Children"].default_value = True
    info.inputs["Reset Children"].default_value = True
    links.new(inputs.outputs[INPUT_COLLECTION], info.inputs["Collection"])
    # The instances wear the grain material, as the spheres do: Set Material acts once per collection
    # object (the geometry the instances reference), not once per grain. Instance on Points carries the
    # points' object_id and mochi_random onto the instances, where the material reads them (Instancer).
    dressed = nodes.new("GeometryNodeSetMaterial")
    dressed.location = (x + 1000, -300)
    links.new(info.outputs[0], dressed.inputs["Geometry"])
    links.new(inputs.outputs[INPUT_MATERIAL], dressed.inputs["Material"])
    # Or they keep their own materials (a collection of rocks with rock materials).
    worn = nodes.new("GeometryNodeSwitch")
    worn.input_type, worn.location = "GEOMETRY", (x + 1100, -300)
    links.new(inputs.outputs[INPUT_INSTANCE_GRAIN_MATERIAL], worn.inputs["Switch"])
    links.new(info.outputs[0], worn.inputs["False"])
    links.new(dressed.outputs["Geometry"], worn.inputs["True"])
    pick = _random(group, "INT", 2, grain_id, (x + 800, -1000))
    compat.node_socket(pick.inputs, "Max").default_value = 1 << 30
    quaternion = nodes.new("FunctionNodeQuaternionToRotation")
    quaternion.location = (x + 800, -1300)
    exists = None
    for row, component in enumerate("wxyz"):
        attribute = _named(group, f"q{component}", "FLOAT", (x + 600, -1200 - 120 * row))
        links.new(attribute.outputs["Attribute"], quaternion.inputs[component.upper()])
        exists = exists or attribute.outputs["Exists"]
    angles = _random(group, "FLOAT_VECTOR", 3, grain_id, (x + 600, -1700))
    compat.node_socket(angles.inputs, "Max").default_value = (2 * np.pi,) * 3
    euler = nodes.new("FunctionNodeEulerToRotation")
    euler.location = (x + 800, -1700)
    links.new(compat.node_socket(angles.outputs, "Value"), euler.inputs[0])
    rotation = nodes.new("GeometryNodeSwitch")
    rotation.input_type, rotation.location = "ROTATION", (x + 1000, -1400)
    links.new(exists, rotation.inputs["Switch"])
    links.new(euler.outputs[0], rotation.inputs["False"])
    links.new(quaternion.outputs[0], rotation.inputs["True"])
    size = nodes.new("ShaderNodeMath")
    size.operation, size.location = "MULTIPLY", (x + 1000, -1000)
    links.new(_named(group, "radius", "FLOAT", (x + 800, -1500)).outputs["Attribute"], size.inputs[0])
    links.new(inputs.outputs[INPUT_INSTANCE_SCALE], size.inputs[1])
    instance = nodes.new("GeometryNodeInstanceOnPoints")
    instance.location = (x + 1200, -200)
    links.new(kept.outputs["Geometry"], instance.inputs["Points"])
    links.new(worn.outputs[0], instance.inputs["Instance"])
    instance.inputs["Pick Instance"].default_value = True
    links.new(compat.node_socket(pick.outputs, "Value"), instance.inputs["Instance Index"])
    links.new(rotation.outputs[0], instance.inputs["Rotation"])
    links.new(size.outputs["Value"], instance.inputs["Scale"])
    choose = nodes.new("GeometryNodeSwitch")
    choose.input_type, choose.location = "GEOMETRY", (x + 1400, 0)
    links.new(inputs.outputs[INPUT_USE_INSTANCES], choose.inputs["Switch"])
    links.new(kept.outputs["Geometry"], choose.inputs["False"])
    links.new(instance.outputs["Instances"], choose.inputs["True"])
    return choose.outputs[0]


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
    """The default grain material (created once per .blend; users may edit or replace it).

    Each source object's grains get their own hue (the golden-ratio step from orange, so the first source
    is orange and the next ones far from it), and each grain a brightness from its ``mochi_random``.
    """
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
            _colour_by_object(material.node_tree, bsdf)
    return material


def _colour_by_object(tree, bsdf) -> None:
    """Base colour = HSV(fract(0.07 + 0.618 × object_id), 0.56, 0.8 × (0.8 + 0.4 × mochi_random))."""
    nodes, links = tree.nodes, tree.links

    def math(operation, location, *operands):
        node = nodes.new("ShaderNodeMath")
        node.operation, node.location = operation, location
        for index, operand in enumerate(operands):
            if isinstance(operand, float):
                node.inputs[index].default_value = operand
            else:
                links.new(operand, node.inputs[index])
        return node.outputs["Value"]

    def grain_attribute(name, y):
        """The grain's ``name``: on the spheres' points and on realised meshes (Geometry), or on the
        instance that carries it (Instancer); the other lookup finds nothing and gives 0, so the sum is
        the one that exists."""
        sockets = []
        for row, kind in enumerate(("GEOMETRY", "INSTANCER")):
            node = nodes.new("ShaderNodeAttribute")
            node.attribute_name, node.attribute_type, node.location = name, kind, (-1100, y - 150 * row)
            sockets.append(node.outputs["Fac"])
        return math("ADD", (-900, y), *sockets)

    object_id, random = grain_attribute("object_id", 300), grain_attribute(RANDOM_ATTRIBUTE, 0)
    hue = math("FRACT", (-500, 300), math("MULTIPLY_ADD", (-700, 300), object_id, 0.618034, 0.07))
    value = math("MULTIPLY_ADD", (-700, 0), random, 0.32, 0.64)
    colour = nodes.new("ShaderNodeCombineColor")
    colour.mode, colour.location = "HSV", (-300, 150)
    links.new(hue, colour.inputs[0])
    colour.inputs[1].default_value = 0.56
    links.new(value, colour.inputs[2])
    links.new(colour.outputs[0], bsdf.inputs["Base Color"])


def mochi_collection(scene: bpy.types.Scene) -> bpy.types.Collection:
    """The collection of Mochi's objects in ``scene``: 'Mochi', or 'Mochi <scene>' where 'Mochi' is shared
    with another scene (a Linked Copy), whose objects would otherwise show there too."""
    collection = bpy.data.collections.get(COLLECTION_NAME)
    if collection is not None and any(collection in other.collection.children_recursive
                                      for other in bpy.data.scenes if other != scene):
        collection = bpy.data.collections.get(f"{COLLECTION_NAME} {scene.name}")
        if collection is None:
            collection = bpy.data.collections.new(f"{COLLECTION_NAME} {scene.name}")
    if collection is None:
        collection = bpy.data.collections.new(COLLECTION_NAME)
    if collection.name not in scene.collection.children:
        scene.collection.children.link(collection)
    return collection


def _group(name: str, builder) -> bpy.types.NodeTree:
    group = bpy.data.node_groups.get(name)
    return group if group is not None else builder()


def _playback_group() -> bpy.types.NodeTree:
    """The .blend's playback group, or a new one when there is none or it predates the render-ready inputs."""
    group = bpy.data.node_groups.get(PLAYBACK_GROUP)
    if group is None or INPUT_INSTANCE_GRAIN_MATERIAL not in group.interface.items_tree:  # the newest input
        group = build_playback_group()
    return group


def apply_display_settings(scene: bpy.types.Scene) -> None:
    """Copy the scene's playback options (viewport percentage, instancing) into its playback modifier."""
    obj = scene.mochi.playback_object
    modifier = obj.modifiers.get(MODIFIER_NAME) if obj is not None else None
    if modifier is None or modifier.node_group is None or INPUT_DISPLAY not in modifier.node_group.interface.items_tree:
        return
    s = scene.mochi
    compat.modifier_input_set(modifier, INPUT_DISPLAY, float(s.viewport_display_percentage))
    compat.modifier_input_set(modifier, INPUT_USE_INSTANCES, bool(s.use_instances and s.instance_collection))
    compat.modifier_input_set(modifier, INPUT_COLLECTION, s.instance_collection)
    compat.modifier_input_set(modifier, INPUT_INSTANCE_SCALE, float(s.instance_scale))
    if INPUT_INSTANCE_GRAIN_MATERIAL in modifier.node_group.interface.items_tree:  # a group of an older file
        compat.modifier_input_set(modifier, INPUT_INSTANCE_GRAIN_MATERIAL, bool(s.instance_grain_material))
    obj.update_tag()


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
    from .playback_owner import mark_chosen_folder, owned_playback_object, stamp

    obj = owned_playback_object(scene)  # never another scene's (a Linked Copy shares its objects)
    if obj is None or obj.name not in scene.objects:
        obj = bpy.data.objects.new(name, bpy.data.meshes.new(name))
        mochi_collection(scene).objects.link(obj)
        scene.mochi.playback_object = obj
    stamp(obj, scene)
    modifier = obj.modifiers.get(MODIFIER_NAME)
    if modifier is None:
        modifier = obj.modifiers.new(MODIFIER_NAME, "NODES")
    if modifier.node_group is None or INPUT_DISPLAY not in modifier.node_group.interface.items_tree:
        modifier.node_group = _playback_group()
    compat.modifier_input_set(modifier, INPUT_FOLDER, folder_for_node(folder))
    mark_chosen_folder(scene, obj, folder_for_node(folder))
    compat.modifier_input_set(modifier, INPUT_START, int(start_frame))
    compat.modifier_input_set(modifier, INPUT_LAST, max(1, int(last_frame)))
    if compat.modifier_input_get(modifier, INPUT_MATERIAL) is None:
        compat.modifier_input_set(modifier, INPUT_MATERIAL, grain_material())
    obj.rotation_euler = (np.pi / 2, 0.0, 0.0) if up_axis.upper() == "Y" else (0.0, 0.0, 0.0)
    apply_display_settings(scene)
    visibility.hide_sources(scene)
    visibility.show_converted_playback(obj)
    obj.update_tag()
    return obj


def set_last_frame(obj: bpy.types.Object, last_frame: int) -> None:
    """Let playback show cache frames up to ``last_frame`` (called as frames are written); a playback
    hidden by Convert Frame to Mesh shows again, as the new frames are there to be seen."""
    visibility.show_converted_playback(obj)
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
    # Packed in world space where the source stands now; parented so that it moves, turns and scales with it.
    preview.parent = source
    preview.matrix_parent_inverse = source.matrix_world.inverted()
    modifier = preview.modifiers.new("Mochi Points", "NODES")
    modifier.node_group = _group(POINTS_GROUP, build_points_group)
    compat.modifier_input_set(modifier, INPUT_MATERIAL, preview_material())
    source.mochi.pack_preview = preview
    visibility.set_hidden(source, True)  # the preview replaces the mesh it was packed from
    return preview


def preview_material() -> bpy.types.Material:
    """The pack previews' material (created once per .blend): pale blue, unlike any baked grain's."""
    material = bpy.data.materials.get(PREVIEW_MATERIAL_NAME)
    if material is None:
        material = bpy.data.materials.new(PREVIEW_MATERIAL_NAME)
        material.diffuse_color = PREVIEW_COLOUR
        if compat.needs_use_nodes():
            material.use_nodes = True
        bsdf = material.node_tree.nodes.get("Principled BSDF") if material.node_tree else None
        if bsdf is not None:
            bsdf.inputs["Base Color"].default_value = PREVIEW_COLOUR
    return material


PREVIEW_COLOUR = (0.35, 0.6, 0.95, 1.0)
