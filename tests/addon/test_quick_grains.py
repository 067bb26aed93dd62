"""Quick Grains, Add › Mochi Bunny, domains drawn as wire boxes, and the Looks menu, in the real Blender."""

from __future__ import annotations

import bpy
import numpy as np
import pytest

from .conftest import add_domain, mochi_module, select_only


def _monkey(location=(0.0, 0.0, 1.0)):
    bpy.ops.mesh.primitive_monkey_add(size=1.0, location=location)
    return bpy.context.object


def _domain_box(domain):
    settings = mochi_module("addon.snapshot").domain_blender_to_settings(domain)
    return settings.lo, settings.hi


def test_quick_grains_makes_a_scene_that_is_ready_to_bake(empty_scene):
    monkey = _monkey()
    select_only(monkey)
    assert bpy.ops.mochi.quick_grains() == {"FINISHED"}
    assert monkey.mochi.role == "SOURCE"
    sand = mochi_module("engine.looks").look("sand")
    assert monkey.mochi.rolling_friction == pytest.approx(sand.material.rolling_friction)
    assert monkey.mochi.friction == pytest.approx(sand.material.friction)
    assert monkey.mochi.radius >= sand.radius  # the look's, raised to stay within the grain budget
    domains = [o for o in empty_scene.objects if o.mochi.role == "DOMAIN"]
    assert len(domains) == 1
    domain = domains[0]
    assert domain.display_type in {"WIRE", "BOUNDS"} and domain.hide_render
    assert "-z" not in domain.mochi.open_sides  # the bottom wall is the floor
    lo, hi = _domain_box(domain)
    mlo, mhi = mochi_module("addon.quick_setup").world_bounds([monkey])
    footprint = max(mhi[0] - mlo[0], mhi[1] - mlo[1])
    assert hi[0] - lo[0] >= 2.0 * footprint and hi[1] - lo[1] >= 2.0 * footprint  # room to spread
    assert mlo[2] - 0.5 < lo[2] < mlo[2]  # the floor a little below the mesh
    assert hi[2] > mhi[2]
    assert all(lo[i] < mlo[i] and mhi[i] < hi[i] for i in range(2))
    assert empty_scene.mochi.cache_directory == ""  # the per-file default folder
    # The scene snapshots as a bake would take it: one source inside one domain.
    settings = mochi_module("addon.snapshot").scene_blender_to_settings(bpy.context, frame_count=2) \
        if bpy.data.filepath else None
    assert settings is None or len(settings.sources) == 1


def test_quick_grains_keeps_domains_and_colliders_and_refits_the_domain(empty_scene):
    domain = add_domain(size=1.0, location=(5.0, 5.0, 5.0))
    bpy.ops.mesh.primitive_plane_add(size=4.0)
    ground = bpy.context.object
    ground.mochi.role = "COLLIDER"
    monkey = _monkey()
    select_only(monkey, domain, ground)
    assert bpy.ops.mochi.quick_grains(look="gravel") == {"FINISHED"}
    assert domain.mochi.role == "DOMAIN" and ground.mochi.role == "COLLIDER"
    assert monkey.mochi.role == "SOURCE"
    assert [o for o in empty_scene.objects if o.mochi.role == "DOMAIN"] == [domain]  # refitted, not added
    lo, hi = _domain_box(domain)
    assert lo[0] < 0.0 < hi[0] and lo[2] < 0.5  # moved around the monkey
    gravel = mochi_module("engine.looks").look("gravel")
    assert monkey.mochi.friction == pytest.approx(gravel.material.friction)


def test_quick_grains_without_a_mesh_says_so(empty_scene):
    bpy.ops.object.empty_add()
    select_only(bpy.context.object)
    with pytest.raises(RuntimeError, match="Select one or more mesh objects"):
        bpy.ops.mochi.quick_grains()


def test_quick_grains_is_in_the_quick_effects_menu(mochi):
    draw_funcs = [f.__name__ for f in bpy.types.VIEW3D_MT_object_quick_effects._dyn_ui_initialize()]
    assert "_quick_effects_entry" in draw_funcs
    assert "_add_mesh_entry" in [f.__name__ for f in bpy.types.VIEW3D_MT_mesh_add._dyn_ui_initialize()]


def test_a_domain_draws_as_wire_and_never_renders(empty_scene):
    bpy.ops.mesh.primitive_cube_add()
    cube = bpy.context.object
    assert cube.display_type == "TEXTURED" and not cube.hide_render
    cube.mochi.role = "DOMAIN"
    assert cube.display_type == "WIRE" and cube.hide_render


def test_the_bunny_reader_reads_what_the_engine_reads(mochi):
    """Add › Mochi Bunny reads the bundled OBJ without trimesh (no 2 s of imports in the window): the same
    vertices and triangles as the engine's reader."""
    quick = mochi_module("addon.quick_setup")
    path = mochi_module("engine.resources").data_dir("presets") / "bunny.obj"
    vertices, triangles = quick.read_plain_obj(path)
    arrays = mochi_module("engine.packing.mesh").load_mesh_file(path)
    assert np.array_equal(vertices, np.asarray(arrays.vertices, np.float64))
    assert np.array_equal(triangles, np.asarray(arrays.triangles))


def test_add_bunny_is_thirty_centimetres_tall_at_the_cursor(empty_scene):
    empty_scene.cursor.location = (1.0, 2.0, 0.5)
    assert bpy.ops.mochi.add_bunny() == {"FINISHED"}
    bunny = bpy.context.object
    assert bunny.type == "MESH" and len(bunny.data.polygons) == 3674
    lo, hi = mochi_module("addon.quick_setup").world_bounds([bunny])
    assert hi[2] - lo[2] == pytest.approx(0.30, rel=1e-3)
    assert lo[2] == pytest.approx(0.5, abs=1e-4)  # standing on the cursor
    assert (lo[0] + hi[0]) / 2 == pytest.approx(1.0, abs=1e-4)
    # Watertight, so it packs: Quick Grains on it gives grains.
    select_only(bunny)
    assert bpy.ops.mochi.quick_grains() == {"FINISHED"}
    assert bunny.mochi.role == "SOURCE"


def test_a_look_applies_to_every_selected_source(empty_scene):
    a, b = _monkey((0, 0, 1)), _monkey((3, 0, 1))
    for obj in (a, b):
        obj.mochi.role = "SOURCE"
    select_only(a, b)
    assert bpy.ops.mochi.look_apply(look="beads") == {"FINISHED"}
    beads = mochi_module("engine.looks").look("beads")
    for obj in (a, b):
        assert obj.mochi.radius == pytest.approx(beads.radius)
        assert obj.mochi.restitution == pytest.approx(beads.material.restitution)
        assert obj.mochi.rolling_friction == pytest.approx(beads.material.rolling_friction)
    with pytest.raises(RuntimeError, match="no look 'marble'"):
        bpy.ops.mochi.look_apply(look="marble")


def test_the_looks_menu_lists_every_look(mochi):
    keys = [entry.key for entry in mochi_module("engine.looks").list_looks()]
    assert keys[0] == "sand" and {"gravel", "beads"} <= set(keys)
    assert hasattr(bpy.types, "MOCHI_MT_looks")


def test_a_preset_never_changes_the_frame_rate(empty_scene):
    from pathlib import Path

    empty_scene.render.fps, empty_scene.render.fps_base = 24, 1.0
    presets = Path(mochi_module("engine.resources").data_dir("presets"))
    assert bpy.ops.mochi.preset_apply(filepath=str(presets / "sand_pile.toml")) == {"FINISHED"}
    assert (empty_scene.render.fps, empty_scene.render.fps_base) == (24, 1.0)
