"""Render-ready playback (addon/playback.py): a bake hides its sources from renders (Free Bake shows
them again), grains carry a stable random value and the grain material colours them per source object,
a collection can be instanced on the grains, and the viewport can show a share of them while renders
show all (the render depsgraph is read in frame_change_post during a tiny Cycles render)."""

from __future__ import annotations

import bpy
import numpy as np
import pytest

from .conftest import mochi_module


def _count(obj, frame: int = 2) -> int:
    geometry = _geometry(obj, frame)
    return len(geometry.pointcloud.points) if geometry.pointcloud is not None else 0


def _geometry(obj, frame: int = 2):
    bpy.context.scene.frame_set(frame)
    return obj.evaluated_get(bpy.context.evaluated_depsgraph_get()).evaluated_geometry()


def _attribute(cloud, name: str) -> np.ndarray:
    values = np.empty(len(cloud.points), np.float32)
    cloud.attributes[name].data.foreach_get("value", values)
    return values


def _ids(cloud) -> np.ndarray:
    """The grains' keys: particle ids (rows where Blender 4.5's PLY import drops 'id')."""
    values = np.empty(len(cloud.points), np.int32)
    cloud.attributes[mochi_module("addon.playback").KEY_ATTRIBUTE].data.foreach_get("value", values)
    return values


@pytest.fixture
def baked_scene(small_scene):
    small_scene.mochi.frame_end = 2
    assert bpy.ops.mochi.bake() == {"FINISHED"}
    return small_scene


def test_bake_hides_sources_from_renders_and_free_bake_shows_them(small_scene):
    sources = [o for o in small_scene.objects if o.mochi.role == "SOURCE"]
    sources[1].hide_render = True  # hidden by the user: stays hidden after Free Bake
    small_scene.mochi.frame_end = 2
    assert bpy.ops.mochi.bake() == {"FINISHED"}
    assert all(o.hide_render for o in sources)
    assert bpy.ops.mochi.free_bake() == {"FINISHED"}
    assert [o.hide_render for o in sources] == [False, True]


def test_grains_carry_a_stable_random_value_and_the_material_colours_by_object(baked_scene):
    playback = mochi_module("addon.playback")
    obj = baked_scene.mochi.playback_object
    modifier = obj.modifiers[playback.MODIFIER_NAME]
    material = mochi_module("addon.compat").modifier_input_get(modifier, playback.INPUT_MATERIAL)
    assert material is not None and material.name == playback.MATERIAL_NAME
    names = {n.attribute_name for n in material.node_tree.nodes if n.bl_idname == "ShaderNodeAttribute"}
    assert names == {"object_id", playback.RANDOM_ATTRIBUTE}
    geometry = _geometry(obj, 1)
    cloud = geometry.pointcloud  # valid while ``geometry`` is held
    first = dict(zip(_ids(cloud), _attribute(cloud, playback.RANDOM_ATTRIBUTE)))
    assert [m.name for m in cloud.materials] == [playback.MATERIAL_NAME]
    assert set(np.unique(_attribute(cloud, "object_id"))) == {0.0, 1.0}
    geometry = _geometry(obj, 2)
    cloud = geometry.pointcloud
    again = dict(zip(_ids(cloud), _attribute(cloud, playback.RANDOM_ATTRIBUTE)))
    assert again == first  # keyed by the particle id: the same on every frame
    values = np.array(list(first.values()))
    assert values.min() >= 0.0 and values.max() <= 1.0 and values.std() > 0.15


def test_instance_collection_puts_a_collection_object_on_every_grain(baked_scene):
    rocks = bpy.data.collections.new("Rocks")
    for kind in ("cube", "ico"):
        mesh = bpy.data.meshes.new(kind)
        mesh.from_pydata([(0, 0, 0), (1, 0, 0), (0, 1, 0)], [], [(0, 1, 2)])
        rocks.objects.link(bpy.data.objects.new(kind, mesh))
    obj = baked_scene.mochi.playback_object
    grains = _count(obj)
    s = baked_scene.mochi
    s.instance_collection, s.use_instances = rocks, True
    instanced = _geometry(obj)
    assert len(instanced.instances_pointcloud().points) == grains
    assert instanced.pointcloud is None or len(instanced.pointcloud.points) == 0
    assert len(instanced.instance_references()) == 2
    s.use_instances = False
    assert _count(obj) == grains


def test_viewport_display_percentage_thins_the_viewport_not_the_render(baked_scene):
    obj = baked_scene.mochi.playback_object
    grains = _count(obj)
    baked_scene.mochi.viewport_display_percentage = 30.0
    shown = _count(obj)
    assert 0.15 * grains < shown < 0.45 * grains
    counts = {}

    def count(scene, depsgraph):
        geometry = obj.evaluated_get(depsgraph).evaluated_geometry()
        counts[depsgraph.mode] = len(geometry.pointcloud.points)

    scene = baked_scene
    scene.render.engine = "CYCLES"
    scene.cycles.samples = 1
    scene.render.resolution_x = scene.render.resolution_y = 8
    camera = bpy.data.objects.new("Camera", bpy.data.cameras.new("Camera"))
    scene.collection.objects.link(camera)
    scene.camera = camera
    bpy.app.handlers.frame_change_post.append(count)
    try:
        bpy.ops.render.render()
    finally:
        bpy.app.handlers.frame_change_post.remove(count)
    assert counts.get("RENDER") == grains


def test_grains_that_left_the_box_are_not_drawn(baked_scene):
    """Grains that left through an open side stay in the cache as inactive (active = 0) where they
    left; playback draws only the active ones, in the viewport and in renders alike."""
    import time

    from plyfile import PlyData, PlyElement

    folder = mochi_module("addon.snapshot").cache_folder(baked_scene)
    obj = baked_scene.mochi.playback_object
    grains = _count(obj, 2)
    vertex = PlyData.read(str(folder / "frame_0002.ply"))["vertex"].data.copy()
    vertex["active"][::3] = 0
    time.sleep(1.1)  # Blender reloads an imported file when its date changes, to the second
    PlyData([PlyElement.describe(vertex, "vertex")], byte_order="<").write(str(folder / "frame_0002.ply"))
    assert _count(obj, 2) == grains - len(vertex[::3]) > 0
    geometry = _geometry(obj, 2)  # what is left keeps the grain material (deleting points drops it)
    assert [m.name for m in geometry.pointcloud.materials] == [mochi_module("addon.playback").MATERIAL_NAME]


def test_instances_turn_with_the_cache_orientation_where_it_has_one(baked_scene, tmp_path):
    """A frame whose PLY carries qw qx qy qz (cache format 2) turns every instance by it; a frame without
    (format 1) turns each grain at random."""
    import time

    from numpy.lib import recfunctions
    from plyfile import PlyData, PlyElement

    playback = mochi_module("addon.playback")
    folder = mochi_module("addon.snapshot").cache_folder(baked_scene)
    half = np.sqrt(0.5)  # 90° about Z
    turned_frame = PlyData.read(str(folder / "frame_0002.ply"))["vertex"].data.copy()
    for name, value in zip(("qw", "qx", "qy", "qz"), (half, 0.0, 0.0, half)):
        turned_frame[name] = value
    format_1_frame = recfunctions.drop_fields(PlyData.read(str(folder / "frame_0001.ply"))["vertex"].data,
                                              ["qw", "qx", "qy", "qz"], usemask=False)
    time.sleep(1.1)  # Blender reloads an imported file when its date changes, to the second
    for name, vertex in (("frame_0002.ply", turned_frame), ("frame_0001.ply", format_1_frame)):
        PlyData([PlyElement.describe(vertex, "vertex")], byte_order="<").write(str(folder / name))
    mesh = bpy.data.meshes.new("Bean")
    mesh.from_pydata([(0, 0, 0), (1, 0, 0), (0, 1, 0)], [], [(0, 1, 2)])
    beans = bpy.data.collections.new("Beans")
    beans.objects.link(bpy.data.objects.new("Bean", mesh))
    s = baked_scene.mochi
    s.instance_collection, s.use_instances = beans, True
    obj = s.playback_object

    def rotations(frame):
        geometry = _geometry(obj, frame)
        cloud = geometry.instances_pointcloud()
        matrices = np.empty(len(cloud.points) * 16, np.float32)
        cloud.attributes["instance_transform"].data.foreach_get("value", matrices)
        matrices = matrices.reshape(-1, 4, 4)[:, :3, :3].astype(np.float64)
        return matrices / np.linalg.norm(matrices[:, 0, :], axis=1)[:, None, None]  # scale = radius

    turned = rotations(2)
    quarter = np.array([[0.0, 1.0, 0.0], [-1.0, 0.0, 0.0], [0.0, 0.0, 1.0]])  # Blender's row-major storage
    np.testing.assert_allclose(turned, np.broadcast_to(quarter, turned.shape), atol=1e-5)
    random = rotations(1)
    assert np.abs(random - random[0]).max() > 0.5, "without an orientation every grain turns its own way"
    assert playback.INPUT_COLLECTION in obj.modifiers[playback.MODIFIER_NAME].node_group.interface.items_tree


def test_instances_take_the_colour_of_their_grain(baked_scene, tmp_path):
    """Instanced objects wear the grain material and carry the grain's object_id and mochi_random, so a
    render colours each source's instances as its spheres: one source's orange (hue 0.07), the other's
    violet (hue 0.69). The instanced mesh itself has no material and no attribute of those names."""
    playback = mochi_module("addon.playback")
    mesh = bpy.data.meshes.new("Block")
    mesh.from_pydata([(x, y, z) for x in (-0.8, 0.8) for y in (-0.8, 0.8) for z in (-0.8, 0.8)], [],
                     [(0, 1, 3, 2), (4, 6, 7, 5), (0, 4, 5, 1), (2, 3, 7, 6), (0, 2, 6, 4), (1, 5, 7, 3)])
    blocks = bpy.data.collections.new("Blocks")
    blocks.objects.link(bpy.data.objects.new("Block", mesh))
    scene = baked_scene
    s = scene.mochi
    s.instance_collection, s.use_instances = blocks, True
    geometry = _geometry(s.playback_object)
    cloud = geometry.instances_pointcloud()
    assert set(np.unique(_attribute(cloud, "object_id"))) == {0.0, 1.0}
    assert _attribute(cloud, playback.RANDOM_ATTRIBUTE).std() > 0.15
    (reference,) = geometry.instance_references()
    assert [m.name for m in reference.mesh.materials] == [playback.MATERIAL_NAME]
    # Grain Material off: the instanced objects keep their own materials (rocks with rock materials).
    rock = bpy.data.materials.new("Rock")
    mesh.materials.append(rock)
    s.instance_grain_material = False
    (reference,) = _geometry(s.playback_object).instance_references()  # the object itself, untouched
    assert reference.name == "Block" and [m.name for m in reference.data.materials] == ["Rock"]
    s.instance_grain_material = True
    mesh.materials.clear()
    (reference,) = _geometry(s.playback_object).instance_references()
    assert [m.name for m in reference.mesh.materials] == [playback.MATERIAL_NAME]

    scene.objects["Domain"].hide_render = True  # the box would hide the grains from the camera
    camera = bpy.data.objects.new("Camera", bpy.data.cameras.new("Camera"))
    camera.location, camera.rotation_euler = (0.0, -6.0, 1.0), (np.pi / 2, 0.0, 0.0)
    sun = bpy.data.objects.new("Sun", bpy.data.lights.new("Sun", "SUN"))
    sun.rotation_euler, sun.data.energy = (0.6, 0.0, 0.3), 4.0
    for obj in (camera, sun):
        scene.collection.objects.link(obj)
    scene.camera = camera
    scene.render.engine = "CYCLES"
    scene.cycles.samples, scene.cycles.device = 4, "CPU"
    scene.render.resolution_x, scene.render.resolution_y, scene.render.resolution_percentage = 60, 40, 100
    scene.view_settings.view_transform = "Standard"  # hues as the material makes them
    scene.render.filepath = str(tmp_path / "instances.png")
    scene.frame_set(2)
    bpy.ops.render.render(write_still=True)
    image = bpy.data.images.load(scene.render.filepath)
    pixels = np.empty(len(image.pixels), np.float32)
    image.pixels.foreach_get(pixels)
    red, green, blue = pixels.reshape(-1, 4)[:, :3].T
    orange = np.count_nonzero(red > blue + 0.1)  # each source covers about 80 of the 2400 pixels
    violet = np.count_nonzero(blue > red + 0.1)
    assert orange > 30 and violet > 30, (orange, violet)
