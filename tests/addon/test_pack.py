"""Pack: point-cloud previews of the selected meshes, and the inputs it refuses."""

from __future__ import annotations

import numpy as np
import pytest

from .conftest import add_source, bpy, mochi_module, scene_state, select_only


def test_pack_suzanne_and_a_cube(empty_scene):
    monkey = add_source("monkey", location=(0.0, 0.0, 1.0), radius=0.1)
    cube = add_source("cube", location=(2.0, 0.0, 1.0), radius=0.1, size=1.0)
    select_only(monkey, cube)
    assert bpy.ops.mochi.pack() == {"FINISHED"}
    for obj, lo, hi in ((monkey, (-0.7, -0.5, 0.5), (0.7, 0.5, 1.5)), (cube, (1.5, -0.5, 0.5), (2.5, 0.5, 1.5))):
        preview = obj.mochi.pack_preview
        assert preview is not None and preview.name in bpy.context.scene.objects
        mesh = preview.data
        n = len(mesh.vertices)
        assert n > 20
        co = np.empty(n * 3, np.float32)
        mesh.vertices.foreach_get("co", co)
        co = co.reshape(-1, 3)
        radius = np.empty(n, np.float32)
        mesh.attributes["radius"].data.foreach_get("value", radius)
        # World-space spheres inside the object's bounds; radii r and small_ratio·r.
        assert np.all(co >= np.array(lo) - 1e-4) and np.all(co <= np.array(hi) + 1e-4)
        assert np.all(np.isclose(radius, 0.1, rtol=1e-5) | np.isclose(radius, 0.05, rtol=1e-5))
        geometry = preview.evaluated_get(bpy.context.evaluated_depsgraph_get()).evaluated_geometry()
        assert len(geometry.pointcloud.points) == n
    # A cube of 1 m³ packed with 0.1 m spheres holds a few hundred; packing again replaces the preview.
    count = len(cube.mochi.pack_preview.data.vertices)
    select_only(cube)
    assert bpy.ops.mochi.pack() == {"FINISHED"}
    assert len(cube.mochi.pack_preview.data.vertices) == count
    assert len([o for o in bpy.data.objects if o.name.startswith("Cube Mochi Pack")]) == 1


def _refused(match: str):
    before = scene_state()
    with pytest.raises(RuntimeError, match=match):
        bpy.ops.mochi.pack()
    assert scene_state() == before


def test_pack_with_nothing_selected(empty_scene):
    add_source("cube", location=(0, 0, 0), radius=0.1)
    select_only()
    _refused("Select the mesh objects to pack first")


def test_pack_a_non_mesh_object(empty_scene):
    bpy.ops.object.empty_add(location=(0, 0, 0))
    empty = bpy.context.object
    empty.mochi.role = "SOURCE"  # a source that cannot be packed: what it is, in one sentence
    select_only(empty)
    _refused("'Empty' is not a mesh object")


def test_pack_a_zero_volume_mesh(empty_scene):
    bpy.ops.mesh.primitive_plane_add(size=2.0)
    plane = bpy.context.object
    plane.mochi.role = "SOURCE"
    select_only(plane)
    _refused("Plane")


def test_sphere_count_estimate_is_close_enough_to_ask_before_millions(empty_scene):
    """Pack asks before packing millions of spheres; its estimate must be near what packing gives."""
    from .conftest import add_source, mochi_module

    cube = add_source("cube", location=(0.0, 0.0, 1.0), radius=0.05, size=1.0)
    scene = bpy.context.scene
    source = mochi_module("addon.snapshot").source_blender_to_settings(
        cube, bpy.context, frame_start=scene.mochi.frame_start, fps=24.0)
    estimate = mochi_module("addon.operators.pack").estimated_sphere_count(source)
    packed = len(mochi_module("addon.settings").pack_source(source, seed=0).radius)
    assert 0.6 * packed <= estimate <= 1.4 * packed


def test_pack_leaves_out_domains_and_colliders_and_hides_the_source(empty_scene):
    from .conftest import add_domain, mochi_module

    monkey = add_source("monkey", location=(0.0, 0.0, 1.0), radius=0.1)
    domain = add_domain()
    bpy.ops.mesh.primitive_plane_add(size=4.0)
    floor = bpy.context.object
    floor.mochi.role = "COLLIDER"
    select_only(monkey, domain, floor)
    assert bpy.ops.mochi.pack() == {"FINISHED"}
    assert monkey.mochi.pack_preview is not None
    assert domain.mochi.pack_preview is None and floor.mochi.pack_preview is None
    assert not [o for o in bpy.data.objects if o.name.startswith(("Domain Mochi", "Plane Mochi"))]
    assert monkey.hide_get() and not monkey.mochi.pack_preview.hide_get()  # the preview replaces it
    playback = mochi_module("addon.playback")
    modifier = monkey.mochi.pack_preview.modifiers[0]
    material = mochi_module("addon.compat").modifier_input_get(modifier, playback.INPUT_MATERIAL)
    assert material is not None and material.name == playback.PREVIEW_MATERIAL_NAME != playback.MATERIAL_NAME
    select_only(domain, floor)
    _refused("only domains, colliders")


def test_a_bake_hides_sources_and_previews_and_delete_bake_shows_them(small_scene):
    sources = [o for o in small_scene.objects if o.mochi.role == "SOURCE"]
    select_only(sources[0])
    assert bpy.ops.mochi.pack() == {"FINISHED"}
    preview = sources[0].mochi.pack_preview
    assert bpy.ops.mochi.bake() == {"FINISHED"}
    assert all(o.hide_get() for o in (*sources, preview))
    assert all(o.hide_render for o in (*sources, preview))
    assert bpy.ops.mochi.free_bake() == {"FINISHED"}
    assert not preview.hide_get() and not sources[1].hide_get()
    assert sources[0].hide_get()  # hidden by Pack, before the bake: its preview stands in for it
    assert not any(o.hide_render for o in sources)


def test_the_background_pack_gives_the_same_spheres_and_cancels_or_fails_in_one_sentence(empty_scene):
    """What the Pack button runs in a worker thread (addon.pack_job) packs exactly what a script's Pack
    packs; a cancel requested before it starts packs nothing; a source that cannot be packed ends it with
    the sentence the synchronous Pack reports."""
    monkey = add_source("monkey", location=(0.0, 0.0, 1.0), radius=0.1)
    bpy.ops.mesh.primitive_plane_add(size=2.0, location=(3.0, 0.0, 1.0))  # no volume: cannot be packed
    flat = bpy.context.object
    flat.mochi.role, flat.mochi.radius = "SOURCE", 0.1
    scene = bpy.context.scene
    fps = scene.render.fps / scene.render.fps_base
    capture = mochi_module("addon.snapshot").source_blender_to_settings
    pack_job = mochi_module("addon.pack_job")
    sources = {"Suzanne": capture(monkey, bpy.context, frame_start=1, fps=fps)}
    job = pack_job.PackJob(sources=sources, seed=scene.mochi.seed).start()
    assert job.join(timeout=300) and job.error is None and not job.cancelled
    expected = mochi_module("addon.settings").pack_source(sources["Suzanne"], seed=scene.mochi.seed)
    np.testing.assert_array_equal(job.results["Suzanne"].positions, expected.positions)
    np.testing.assert_array_equal(job.results["Suzanne"].radius, expected.radius)

    cancelled = pack_job.PackJob(sources=sources, seed=0)
    cancelled.request_cancel()
    assert cancelled.start().join(timeout=60) and cancelled.cancelled and cancelled.results == {}

    failing = pack_job.PackJob(sources={"Plane": capture(flat, bpy.context, frame_start=1, fps=fps)}, seed=0).start()
    assert failing.join(timeout=60) and failing.results == {}
    select_only(flat)
    with pytest.raises(RuntimeError) as refused:
        bpy.ops.mochi.pack()
    assert failing.error and failing.error in str(refused.value)


def test_esc_stops_a_background_pack_at_its_next_chunk_and_the_status_says_how_far(empty_scene):
    """A source of about three million grains: Esc (request_cancel) while it packs stops the packing at
    its next chunk of ~0.1 s (engine/packing/progress.py), keeps nothing, and the status line named the
    stage and its share while it packed."""
    from .conftest import wait_for

    monkey = add_source("monkey", location=(0.0, 0.0, 1.0), radius=0.004)
    scene = bpy.context.scene
    fps = scene.render.fps / scene.render.fps_base
    sources = {"Suzanne": mochi_module("addon.snapshot").source_blender_to_settings(monkey, bpy.context,
                                                                                   frame_start=1, fps=fps)}
    job = mochi_module("addon.pack_job").PackJob(sources=sources, seed=0).start()
    try:  # (generous: the first packing in a fresh install compiles its kernels)
        wait_for(lambda: job.progress.chunks >= 3 or job.finished, timeout=900)
        assert not job.finished, "the packing ended before it could be cancelled"
        line = job.progress_line()
        assert line.startswith("Mochi: packing 'Suzanne' (1 of 1): ") and "%" in line and line.endswith("Esc cancels.")
        at_request = job.progress.chunks
    finally:
        job.request_cancel()
    assert job.join(timeout=120) and job.cancelled and job.error is None and job.results == {}
    assert job.progress.chunks <= at_request + 1  # the chunk under way, then it stopped


def test_a_plain_mesh_is_never_packed(empty_scene):
    """Only particle sources are packed: a plain mesh would show grains that Bake never simulates. A
    selection mixing both packs the source and says what it left out."""
    source = add_source("cube", location=(0.0, 0.0, 1.0), radius=0.1)
    bpy.ops.mesh.primitive_cube_add(size=1.0, location=(3.0, 0.0, 1.0))
    plain = bpy.context.object
    select_only(plain)
    _refused("plain meshes")
    assert plain.mochi.pack_preview is None
    select_only(source, plain)
    assert bpy.ops.mochi.pack() == {"FINISHED"}
    assert source.mochi.pack_preview is not None and plain.mochi.pack_preview is None
    report = mochi_module("addon.operators.pack").pack_report(bpy.context.scene, [("Cube", 10)], left_out=1)
    assert "1 object that is not a particle source left out" in report
