"""The issue's two artist scenes with every setting at its default (addon snapshot → engine setup): a
bunny and Suzanne packed at r = 1 cm over a bowl collider in a 2.4 m domain, and a 10,000-grain Suzanne
in a 2 m domain. Automatic stiffness and time step must give at most 2,000 steps per frame there and
predict overlaps within the targets of engine/timestep.py (packing only, no bake: seconds)."""

from __future__ import annotations

import bpy
import pytest

from .conftest import REPO, add_domain, mochi_module

MAX_STEPS_PER_FRAME = 2000


def _bowl(location, radius: float):
    """The lower half of a UV sphere, open at the top: a bowl collider."""
    bpy.ops.mesh.primitive_uv_sphere_add(radius=radius, location=location, segments=32, ring_count=16)
    bowl = bpy.context.object
    bowl.name = "Bowl"
    mesh = bowl.data
    import bmesh

    editable = bmesh.new()
    editable.from_mesh(mesh)
    bmesh.ops.delete(editable, geom=[v for v in editable.verts if v.co.z > 1e-6], context="VERTS")
    editable.to_mesh(mesh)
    editable.free()
    bowl.mochi.role = "COLLIDER"
    return bowl


def _bunny(location, height: float):
    bpy.ops.wm.obj_import(filepath=str(REPO / "presets" / "bunny.obj"), forward_axis="NEGATIVE_Z", up_axis="Y")
    bunny = bpy.context.selected_objects[0]
    bunny.dimensions = tuple(d * height / bunny.dimensions.z for d in bunny.dimensions)
    bpy.ops.object.transform_apply(location=False, rotation=True, scale=True)
    bunny.location = location
    return bunny


def _resolved(context):
    settings = mochi_module("addon.snapshot").scene_blender_to_settings(context)
    return mochi_module("addon.settings").setup_from_settings(settings)


def test_bunny_and_suzanne_over_a_bowl(empty_scene, tmp_path):
    empty_scene.mochi.cache_directory = str(tmp_path / "cache")
    add_domain(size=2.4, location=(0.0, 0.0, 1.2))
    _bowl((0.0, 0.0, 0.8), 0.75)
    bunny = _bunny((-0.3, 0.0, 1.3), 0.45)
    bpy.ops.mesh.primitive_monkey_add(size=0.5, location=(0.35, 0.0, 1.45))
    suzanne = bpy.context.object
    for source in (bunny, suzanne):
        source.mochi.role, source.mochi.radius = "SOURCE", 0.01
    setup = _resolved(bpy.context)
    _check(setup, particles=(30_000, 50_000))


def _check(setup, *, particles):
    """Steps per frame within the target, predicted overlaps within engine.timestep's targets."""
    timestep = mochi_module("engine.timestep")
    choice = setup.time_step
    assert particles[0] <= setup.model.particle_count <= particles[1]
    assert choice.steps_per_frame <= MAX_STEPS_PER_FRAME, choice
    assert choice.expected_overlap <= timestep.MAX_OVERLAP and choice.rest_overlap <= timestep.REST_OVERLAP
    assert choice.contact_duration / choice.dt == pytest.approx(timestep.STEPS_PER_CONTACT, rel=0.2)
    assert not choice.notes


def test_ten_thousand_grain_suzanne(empty_scene, tmp_path):
    empty_scene.mochi.cache_directory = str(tmp_path / "cache")
    add_domain(size=2.0, location=(0.0, 0.0, 1.0))
    bpy.ops.mesh.primitive_monkey_add(size=1.0, location=(0.0, 0.0, 1.2))
    suzanne = bpy.context.object
    suzanne.mochi.role, suzanne.mochi.size_mode, suzanne.mochi.count = "SOURCE", "COUNT", 10000
    setup = _resolved(bpy.context)
    _check(setup, particles=(9_000, 11_000))
