"""The collider role: mesh objects captured per frame in the main thread (rigid, deforming, static) and baked
with the grains; bad colliders are refused and change nothing."""

from __future__ import annotations


import numpy as np
import pytest

from .conftest import add_domain, add_source, bpy, mochi_module, scene_state, select_only
from .test_headless import HEADLESS, needs_bpy_module, run_python

PLANE_Z = 0.5
RISE = 0.4
FRAMES = 14


def add_collider_plane(*, size: float = 2.0, z: float = PLANE_Z):
    bpy.ops.mesh.primitive_plane_add(size=size, location=(0.0, 0.0, z))
    plane = bpy.context.object
    plane.name = "Floor"
    plane.mochi.role = "COLLIDER"
    return plane


@pytest.fixture
def grains_over_a_plane(empty_scene, tmp_path):
    """A cube of ~60 grains just above a plane collider; the domain's floor is 3.5 m further down."""
    scene = empty_scene
    scene.render.fps, scene.render.fps_base = 24, 1.0
    add_source("cube", location=(0.0, 0.0, 0.82), radius=0.05, size=0.4)
    add_domain(size=6.0, location=(0.0, 0.0, 0.0))
    plane = add_collider_plane()
    s = scene.mochi
    s.timestep_mode, s.substeps = "SUBSTEPS", 20
    s.use_auto_stiffness, s.stiffness = False, 1e4  # what 20 steps a frame resolve for these grains
    s.frame_start, s.frame_end = 1, FRAMES
    s.backend = "cpu"
    bpy.ops.wm.save_as_mainfile(filepath=str(tmp_path / "scene.blend"))
    return scene, plane


def bake_last_frame(scene) -> dict:
    assert bpy.ops.mochi.bake() == {"FINISHED"}
    folder = mochi_module("addon.snapshot").cache_folder(scene)
    manifest = mochi_module("engine.cache").read_manifest(folder)
    assert manifest["frames_completed"] == scene.mochi.frame_count() and manifest["colliders"]
    assert manifest["collider_objects"] == ["Floor"]
    return mochi_module("engine.cache").read_frame(folder, manifest["frames_completed"])


def capture(scene):
    return mochi_module("addon.snapshot").scene_blender_to_settings(bpy.context).colliders


def test_grains_rest_on_a_plane_collider(grains_over_a_plane):
    scene, _plane = grains_over_a_plane
    (collider,) = capture(scene)
    assert collider.kind == "static" and collider.triangles.shape == (2, 3)
    np.testing.assert_allclose(collider.vertices[:, 2], PLANE_Z, atol=1e-6)
    last = bake_last_frame(scene)
    bottom = last["z"] - last["radius"]
    assert bottom.min() > PLANE_Z - 0.2 * last["radius"].max()  # nothing below the plane
    assert bottom.min() < PLANE_Z + 0.1 * last["radius"].max()  # the lowest grains touch it
    # Held, not falling towards the floor: after 0.54 s a free fall would be at -5.3 m/s.
    assert last["z"].min() > PLANE_Z and abs(float(last["vz"].mean())) < 0.3


def test_collider_rolling_and_stickiness_reach_the_engine(grains_over_a_plane):
    """The collider panel's Rolling and Stickiness (defaults 0) become the engine collider's μ_r and c."""
    scene, plane = grains_over_a_plane
    (collider,) = capture(scene)
    assert (collider.rolling_friction, collider.cohesion) == (0.0, 0.0)
    plane.mochi.collider_rolling_friction, plane.mochi.collider_cohesion = 0.3, 4.0e4
    (collider,) = capture(scene)
    engine_collider = mochi_module("addon.settings").collider_settings_to_engine(collider)
    assert engine_collider.rolling_friction == pytest.approx(0.3)
    assert engine_collider.cohesion == pytest.approx(4.0e4)
    properties = type(plane.mochi).bl_rna.properties
    assert "Pa" in properties["collider_cohesion"].description
    assert "Rolling" in properties["collider_rolling_friction"].description


def _keyframe_rise(struct, data_path: str, start, end):
    """Keyframe ``data_path`` of an object or modifier from ``start`` at the first frame to ``end`` at the last."""
    for frame, value in ((1, start), (FRAMES, end)):
        setattr(struct, data_path, value)
        struct.keyframe_insert(data_path, frame=frame)


@pytest.mark.parametrize("how", ["rigid", "deforming"])
def test_a_rising_collider_pushes_grains_up(grains_over_a_plane, how):
    scene, plane = grains_over_a_plane
    if how == "rigid":  # keyframed location
        _keyframe_rise(plane, "location", (0.0, 0.0, PLANE_Z), (0.0, 0.0, PLANE_Z + RISE))
    else:  # a subdivided plane displaced along its normal by an animated Displace modifier
        plane.modifiers.new("Subdivision", "SUBSURF").levels = 1
        displace = plane.modifiers.new("Displace", "DISPLACE")
        displace.mid_level = 0.0  # no texture: every vertex moves by the strength
        _keyframe_rise(displace, "strength", 0.0, RISE)
    scene.frame_set(5)
    (collider,) = capture(scene)
    assert scene.frame_current == 5  # the capture put the frame back
    assert collider.kind == how
    np.testing.assert_allclose(collider.times, np.arange(FRAMES) / 24.0)
    if how == "rigid":
        np.testing.assert_allclose(collider.translations[[0, -1], 2], (PLANE_Z, PLANE_Z + RISE), atol=1e-6)
        np.testing.assert_allclose(collider.rotations, np.broadcast_to(np.eye(3), (FRAMES, 3, 3)), atol=1e-7)
    else:
        assert collider.key_vertices.shape == (FRAMES, 9, 3)  # one quad subdivided once
        np.testing.assert_allclose(collider.key_vertices[-1, :, 2], PLANE_Z + RISE, atol=1e-5)
    last = bake_last_frame(scene)
    # The grains started below the plane's final height, so those resting on it were lifted.
    lifted = (last["z"] - last["radius"]) > PLANE_Z + RISE - 0.2 * last["radius"].max()
    # Rotating grains with no rolling resistance roll freely: a few from the collapsing cube roll off the
    # plane's edge (|y| > 1 m) and fall; every grain still over the plane was lifted with it.
    over = (np.abs(last["x"]) < 1.0) & (np.abs(last["y"]) < 1.0)
    assert over.sum() > 0.95 * over.size
    assert lifted[over].all(), f"{(~lifted[over]).sum()} of {over.sum()} grains were left below the risen plane"


def test_a_scaling_collider_is_captured_as_deforming(grains_over_a_plane):
    scene, plane = grains_over_a_plane
    _keyframe_rise(plane, "scale", (1.0, 1.0, 1.0), (2.0, 1.0, 1.0))
    plane.rotation_euler = (0.1, 0.0, 0.3)
    (collider,) = capture(scene)
    assert collider.kind == "deforming"
    assert np.ptp(collider.key_vertices[-1, :, 0]) > 1.5 * np.ptp(collider.key_vertices[0, :, 0])
    plane.animation_data_clear()
    plane.scale = (2.0, 1.0, 0.5)  # a constant scale and shear stay rigid, baked into the body vertices
    _keyframe_rise(plane, "rotation_euler", (0.1, 0.0, 0.3), (0.1, 0.0, 1.3))
    (collider,) = capture(scene)
    assert collider.kind == "rigid"
    scene.frame_set(FRAMES)
    world = np.array([plane.matrix_world @ v.co for v in plane.data.vertices])
    np.testing.assert_allclose(collider.vertices @ collider.rotations[-1].T + collider.translations[-1], world,
                               atol=1e-5)


def test_a_collider_whose_topology_changes_is_refused(grains_over_a_plane):
    scene, plane = grains_over_a_plane
    subdivision = plane.modifiers.new("Subdivision", "SUBSURF")
    subdivision.levels = 1
    subdivision.keyframe_insert("levels", frame=1)
    subdivision.levels = 2
    subdivision.keyframe_insert("levels", frame=6)
    scene.frame_set(3)
    before = scene_state()
    with pytest.raises(RuntimeError, match=r"The collider 'Floor' changes its topology between frames 1 and \d+ "
                       r"\(9 vertices and 8 triangles, then 25 and 32\)"):
        bpy.ops.mochi.bake()
    assert scene_state() == before and scene.frame_current == 3
    assert not (mochi_module("addon.snapshot").cache_folder(scene) / "manifest.json").exists()


def test_a_collider_is_never_packed(grains_over_a_plane):
    _scene, plane = grains_over_a_plane
    select_only(plane)
    before = scene_state()
    with pytest.raises(RuntimeError, match="only domains, colliders"):
        bpy.ops.mochi.pack()
    assert scene_state() == before and plane.mochi.pack_preview is None


def test_a_non_mesh_collider_is_refused(grains_over_a_plane):
    bpy.ops.object.empty_add(location=(0, 0, 0))
    bpy.context.object.mochi.role = "COLLIDER"
    before = scene_state()
    with pytest.raises(RuntimeError, match="has the collider role but is not a mesh"):
        bpy.ops.mochi.bake()
    assert scene_state() == before


def test_command_line_bake_of_a_blend_with_a_collider(grains_over_a_plane, tmp_path, capsys):
    """What `blender -b scene.blend -c mochi bake` and `mochi bake scene.blend` run once the file is open."""
    scene, plane = grains_over_a_plane
    _keyframe_rise(plane, "location", (0.0, 0.0, PLANE_Z), (0.0, 0.0, PLANE_Z + RISE))
    bpy.ops.wm.save_mainfile()
    assert mochi_module("addon.cli").cli_command(["bake", "--frames", "3"]) == 0
    assert "Mochi: frame 3 of 3 written" in capsys.readouterr().out
    folder = tmp_path / "mochi_scene_Scene"
    colliders = mochi_module("engine.colliders").load_colliders(folder)
    (collider,) = colliders.colliders
    assert collider.kind == "rigid_keyframes" and len(collider.key_times()) == 3


@needs_bpy_module
def test_headless_bake_of_a_blend_with_a_collider(grains_over_a_plane, tmp_path):
    """`mochi bake scene.blend`: a fresh Python with the bpy module captures the collider and bakes."""
    scene, _plane = grains_over_a_plane
    scene.mochi.frame_end = 2
    bpy.ops.wm.save_mainfile()
    result = run_python(str(HEADLESS), "bake", str(tmp_path / "scene.blend"), "--backend", "cpu")
    assert result.returncode == 0, result.stderr[-2000:]
    manifest = mochi_module("engine.cache").read_manifest(tmp_path / "mochi_scene_Scene")
    assert manifest["frames_completed"] == 2 and manifest["colliders"] and manifest["collider_objects"] == ["Floor"]
