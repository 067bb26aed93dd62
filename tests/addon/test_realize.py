"""Convert Frame to Mesh (addon/operators/realize.py, addon/realize.py): the playback's current frame
becomes an independent mesh object, a sphere per grain or the instanced objects, in the grain material,
with every grain even where the viewport shows a share."""

from __future__ import annotations

import bpy
import numpy as np
import pytest

from .conftest import mochi_module


@pytest.fixture
def baked_scene(small_scene):
    small_scene.mochi.frame_end = 2
    assert bpy.ops.mochi.bake() == {"FINISHED"}
    return small_scene


def _grains(obj, frame: int = 2):
    """Centres [m] (n, 3) and radii [m] (n,) of the grains the playback shows at ``frame`` (object space)."""
    bpy.context.scene.frame_set(frame)
    geometry = obj.evaluated_get(bpy.context.evaluated_depsgraph_get()).evaluated_geometry()
    cloud = geometry.pointcloud  # valid while ``geometry`` is held
    centres = np.empty(len(cloud.points) * 3, np.float32)
    cloud.attributes["position"].data.foreach_get("vector", centres)
    radii = np.empty(len(cloud.points), np.float32)
    cloud.attributes["radius"].data.foreach_get("value", radii)
    return centres.reshape(-1, 3), radii


def _vertices(mesh) -> np.ndarray:
    values = np.empty(len(mesh.vertices) * 3, np.float32)
    mesh.vertices.foreach_get("co", values)
    return values.reshape(-1, 3)


def _nearest(points: np.ndarray, targets: np.ndarray) -> np.ndarray:
    """For each of ``points`` (n, 3) the index of the nearest of ``targets`` (m, 3)."""
    return np.linalg.norm(points[:, None, :] - targets[None, :, :], axis=2).argmin(axis=1)


def test_without_a_bake_there_is_nothing_to_convert(small_scene):
    objects = set(bpy.data.objects)
    with pytest.raises(RuntimeError, match="no baked grains to convert"):
        bpy.ops.mochi.realize_frame()
    assert set(bpy.data.objects) == objects


def test_the_frame_becomes_a_sphere_per_grain_in_the_grain_material(baked_scene):
    playback = mochi_module("addon.playback")
    source = baked_scene.mochi.playback_object
    centres, radii = _grains(source)
    baked_scene.mochi.viewport_display_percentage = 25.0  # the viewport's share; the mesh gets every grain
    groups = set(bpy.data.node_groups)
    assert bpy.ops.mochi.realize_frame(subdivisions=2) == {"FINISHED"}
    obj = bpy.context.view_layer.objects.active
    assert obj is not source and obj.type == "MESH" and not obj.modifiers
    assert obj.name == obj.data.name == f"{source.name} Frame 2" and obj.select_get()
    assert set(bpy.data.node_groups) == groups  # the converter's node group is gone
    assert [m.name for m in obj.data.materials] == [playback.MATERIAL_NAME]
    vertices = _vertices(obj.data).reshape(len(radii), 42, 3)  # an icosphere of 2 subdivisions a grain
    made_centres = vertices.mean(axis=1)
    made_radii = np.linalg.norm(vertices - made_centres[:, None], axis=2)
    grain = _nearest(made_centres, centres)  # the grain each sphere stands for: one each
    assert sorted(grain) == list(range(len(radii)))
    np.testing.assert_allclose(made_centres, centres[grain], atol=1e-5)
    np.testing.assert_allclose(made_radii, np.broadcast_to(radii[grain, None], made_radii.shape), rtol=1e-4)
    # The material's attributes are on the vertices: each sphere keeps its grain's source and random value.
    object_id = np.empty(len(obj.data.vertices), np.float32)
    obj.data.attributes["object_id"].data.foreach_get("value", object_id)
    assert set(np.unique(object_id)) == {0.0, 1.0}
    assert np.all(object_id.reshape(-1, 42) == object_id.reshape(-1, 42)[:, :1])
    assert playback.RANDOM_ATTRIBUTE in obj.data.attributes
    # Independent of the bake: deleting the cache and the playback leaves the mesh as it was.
    count = len(obj.data.vertices)
    assert bpy.ops.mochi.free_bake() == {"FINISHED"}
    bpy.context.scene.frame_set(1)
    assert len(obj.data.vertices) == count
    np.testing.assert_allclose(_vertices(obj.data).reshape(-1, 42, 3).mean(axis=1), centres[grain], atol=1e-5)


def test_instances_become_real_copies_of_their_objects(baked_scene):
    mesh = bpy.data.meshes.new("Chip")
    mesh.from_pydata([(0, 0, 0), (1, 0, 0), (0, 1, 0)], [], [(0, 1, 2)])
    chips = bpy.data.collections.new("Chips")
    chips.objects.link(bpy.data.objects.new("Chip", mesh))
    s = baked_scene.mochi
    grains = len(_grains(s.playback_object)[1])
    s.instance_collection, s.use_instances = chips, True
    assert bpy.ops.mochi.realize_frame() == {"FINISHED"}
    made = bpy.context.view_layer.objects.active.data
    assert len(made.vertices) == 3 * grains and len(made.polygons) == grains
    assert [m.name for m in made.materials] == [mochi_module("addon.playback").MATERIAL_NAME]
    assert mochi_module("addon.operators.realize").MOCHI_OT_realize_frame.bl_options == {"REGISTER", "UNDO"}



def test_the_playback_hides_until_new_frames_or_a_cache_load(baked_scene):
    """Its grains would be drawn and rendered twice, where the mesh stands; resuming the bake (new frames)
    or loading the cache shows them again; the artist may keep it shown."""
    source = baked_scene.mochi.playback_object
    grains = len(_grains(source)[1])
    assert bpy.ops.mochi.realize_frame() == {"FINISHED"}
    made = bpy.context.view_layer.objects.active
    assert len(made.data.vertices) == 12 * grains  # by default an icosphere of 12 vertices a grain
    assert source.hide_get() and source.hide_render
    baked_scene.mochi.frame_end = 3
    assert bpy.ops.mochi.bake_resume() == {"FINISHED"}
    assert baked_scene.mochi.playback_object == source
    assert not source.hide_get() and not source.hide_render
    assert bpy.ops.mochi.realize_frame() == {"FINISHED"}
    assert source.hide_get() and source.hide_render
    folder = mochi_module("addon.snapshot").cache_folder(baked_scene)
    assert bpy.ops.mochi.load_cache(directory=str(folder)) == {"FINISHED"}
    assert not source.hide_get() and not source.hide_render
    assert bpy.ops.mochi.realize_frame(hide_playback=False) == {"FINISHED"}
    assert not source.hide_get() and not source.hide_render


def test_what_the_artist_hid_stays_hidden(baked_scene):
    """Only what Convert Frame to Mesh hid is shown again: here the viewport, not the render the artist
    had turned off."""
    source = baked_scene.mochi.playback_object
    source.hide_render = True
    assert bpy.ops.mochi.realize_frame() == {"FINISHED"}
    assert source.hide_get() and source.hide_render
    folder = mochi_module("addon.snapshot").cache_folder(baked_scene)
    assert bpy.ops.mochi.load_cache(directory=str(folder)) == {"FINISHED"}
    assert not source.hide_get() and source.hide_render
