"""Blender's force fields in a Mochi bake (addon/force_fields.py, engine/fields.py): a field moves Mochi
grains the way it moves Blender particles, unsupported fields are named, the panel's fields and a
preset's fields reach the scene and come back out of Save Preset, and gravity cannot be keyframed.

The comparison runs Blender's own particle system (1 kg Newtonian particles, gravity off, RK4 with ten
substeps per frame) and Mochi's CPU backend from the same points (no contacts: the grains are 0.4 m
apart and 2 mm wide); both trajectories are sampled every frame for one second.
"""

from __future__ import annotations

import math

import bpy
import numpy as np
import pytest

from .conftest import REPO, add_domain, add_source, mochi_module

FPS = 25
FRAMES = 26  # one second after the birth frame
#: Largest distance between a Blender particle and its Mochi grain, over one second [m]: Mochi steps
#: with semi-implicit Euler at dt = 1e-4 s, Blender with RK4 at 4 ms; both errors are well under 1 mm for
#: these fields, whose grains travel 0.3–1.5 m.
TOLERANCE = 2.0e-3


def _blender_particles(scene):
    """An emitter of 1 kg particles at 9 points, born at frame 1 at rest, gravity off; returns it."""
    scene.render.fps = FPS
    points = [(0.4 * x + 0.05, 0.4 * y, 0.3 + 0.1 * (x + 1)) for x in range(-1, 2) for y in range(-1, 2)]
    mesh = bpy.data.meshes.new("Points")
    mesh.from_pydata(points, [], [])
    emitter = bpy.data.objects.new("Emitter", mesh)
    scene.collection.objects.link(emitter)
    part = emitter.modifiers.new("Particles", "PARTICLE_SYSTEM").particle_system.settings
    part.count, part.frame_start, part.frame_end, part.lifetime = len(points), 1, 1, 500
    part.emit_from, part.use_emit_random, part.normal_factor = "VERT", False, 0.0
    part.mass, part.integrator, part.subframes = 1.0, "RK4", 9
    part.effector_weights.gravity = 0.0
    scene.frame_end = FRAMES
    return emitter


def _blender_trajectories(scene, emitter) -> np.ndarray:
    """Particle locations [m] per frame, (FRAMES, n, 3), stepping the frames in order."""
    frames = []
    for frame in range(1, FRAMES + 1):
        scene.frame_set(frame)
        system = emitter.evaluated_get(bpy.context.evaluated_depsgraph_get()).particle_systems[0]
        location = np.empty(len(system.particles) * 3, np.float32)
        system.particles.foreach_get("location", location)
        frames.append(location.reshape(-1, 3).astype(np.float64))
    return np.array(frames)


def _mochi_trajectories(start: np.ndarray, fields) -> np.ndarray:
    """Mochi grains from ``start`` [m] at rest under ``fields``, positions per frame (FRAMES, n, 3)."""
    from_arrays = mochi_module("engine.scene").setup_from_arrays
    model = mochi_module("engine.model")
    backend_cpu = mochi_module("engine.backends.cpu").BackendCpu
    dt = 1.0e-4
    setup = from_arrays(positions=start.astype(np.float32), radius=np.full(len(start), 1e-3, np.float32),
                        materials=(model.Material(),), domain=model.Domain(lo=(-20.0,) * 3, hi=(20.0,) * 3),
                        gravity=model.Gravity(vector=(0.0, 0.0, 0.0)), fields=tuple(fields), dt=dt, stiffness=1.0,
                        fps=FPS)
    backend = backend_cpu(setup.model)
    backend.set_state(setup.state)
    steps = round(1.0 / FPS / dt)
    frames = [start]
    for _ in range(FRAMES - 1):
        backend.step(steps)
        frames.append(backend.get_state().positions.astype(np.float64))
    return np.array(frames)


def _add_field(kind: str, *, location=(0.0, 0.0, 0.0), rotation=(0.0, 0.0, 0.0), **settings):
    bpy.ops.object.effector_add(type=kind, location=location, rotation=rotation)
    obj = bpy.context.object
    for name, value in settings.items():
        setattr(obj.field, name, value)
    return obj


CASES = {
    "force": dict(kind="FORCE", location=(0.3, 0.1, -0.2), strength=3.0, falloff_power=1.0,
                  use_min_distance=True, distance_min=0.2),
    "force plane +z": dict(kind="FORCE", location=(0.0, 0.0, 0.35), rotation=(0.3, 0.0, 0.0), shape="PLANE",
                           strength=2.0, z_direction="POSITIVE"),
    "wind": dict(kind="WIND", location=(0.0, 0.0, -0.5), rotation=(0.0, 1.2, 0.4), strength=2.5,
                 falloff_power=1.0, flow=0.5),
    "vortex point": dict(kind="VORTEX", location=(0.1, 0.0, 0.0), shape="POINT", strength=2.0,
                         use_max_distance=True, distance_max=0.6),
    "vortex plane": dict(kind="VORTEX", location=(0.0, 0.1, 0.0), rotation=(0.2, 0.0, 0.0), strength=3.0,
                         falloff_power=0.5, flow=0.2),
}


@pytest.mark.parametrize("case", list(CASES), ids=list(CASES))
def test_a_field_moves_grains_as_it_moves_blender_particles(empty_scene, case):
    settings = dict(CASES[case])
    emitter = _blender_particles(empty_scene)
    _add_field(settings.pop("kind"), location=settings.pop("location"), rotation=settings.pop("rotation", (0, 0, 0)),
               **settings)
    blender = _blender_trajectories(empty_scene, emitter)
    empty_scene.frame_set(1)
    translation = mochi_module("addon.force_fields").scene_fields_blender_to_engine(empty_scene)
    assert len(translation.fields) == 1 and translation.notes == ()
    mochi = _mochi_trajectories(blender[0], translation.fields)
    travelled = np.linalg.norm(blender[-1] - blender[0], axis=1)
    assert travelled.max() > 0.1, "the field must move the particles for the comparison to mean anything"
    per_frame = np.linalg.norm(mochi - blender, axis=2).max(axis=1)
    error = per_frame.max()
    assert error < TOLERANCE, f"{case}: Mochi and Blender differ by {error * 1000:.2f} mm"


def test_unsupported_fields_are_named_in_one_sentence(empty_scene):
    _add_field("MAGNET")
    _add_field("HARMONIC")
    _add_field("FORCE", falloff_type="TUBE", noise=0.5)
    translation = mochi_module("addon.force_fields").scene_fields_blender_to_engine(empty_scene)
    assert [f.kind for f in translation.fields] == ["force"]
    assert len(translation.notes) == 2
    assert "'Harmonic' (Harmonic), 'Magnet' (Magnet)" in translation.notes[0]
    assert "'Force' (Tube falloff, noise)" in translation.notes[1]


def test_bake_settings_carry_the_fields_and_the_bake_warns(empty_scene, tmp_path):
    add_source("cube", location=(0.0, 0.0, 1.0), radius=0.1, size=0.4)
    add_domain()
    empty_scene.mochi.cache_directory = str(tmp_path / "cache")
    _add_field("WIND", strength=1.5)
    _add_field("TEXTURE")
    bpy.ops.mochi.field_add()
    item = empty_scene.mochi.fields[0]
    item.kind, item.vector = "UNIFORM", (0.5, 0.0, 0.0)
    settings = mochi_module("addon.snapshot").scene_blender_to_settings(bpy.context)
    assert [f.kind for f in settings.simulation.fields] == ["uniform", "wind"]
    assert len(settings.notes) == 1 and "'TextureField' (Texture)" in settings.notes[0]
    setup = mochi_module("addon.settings").setup_from_settings(settings)
    assert [f.kind for f in setup.model.physics.fields] == ["uniform", "wind"]
    bpy.ops.mochi.field_remove()
    assert len(empty_scene.mochi.fields) == 0


def test_candy_vortex_keeps_its_vortex_in_blender_and_in_a_saved_preset(empty_scene, tmp_path):
    add_domain()
    assert bpy.ops.mochi.preset_apply(filepath=str(REPO / "presets" / "candy_vortex.toml")) == {"FINISHED"}
    (item,) = empty_scene.mochi.fields
    assert item.kind == "VORTEX" and item.strength == pytest.approx(6.0) and item.core_radius == pytest.approx(0.2)
    assert tuple(item.axis) == pytest.approx((0.0, 0.0, 1.0))  # the preset's +Y turned to Blender's +Z
    add_source("cube", location=(0.0, 0.0, 1.0), radius=0.05, size=0.3)
    empty_scene.mochi.cache_directory = str(tmp_path / "cache")
    _add_field("TURBULENCE", strength=2.0, size=0.3, seed=7)
    path = mochi_module("addon.operators.presets").save_scene_preset(bpy.context, tmp_path / "saved" / "saved.toml",
                                                                     name="saved")
    preset = mochi_module("engine.preset").load_preset(path)
    fields = [mochi_module("engine.fields").ForceField(**f) for f in preset.fields]
    assert [(f.kind, f.profile) for f in fields] == [("vortex", "rankine"), ("turbulence", "rankine")]
    assert fields[0].strength == 6.0 and fields[0].axis == pytest.approx((0.0, 0.0, 1.0))
    assert (fields[1].size, fields[1].seed, fields[1].strength) == pytest.approx((0.3, 7, 2.0))
    # Applying the saved (Z-up) preset gives the panel field back and the turbulence as a field object.
    bpy.ops.object.select_all(action="DESELECT")
    assert bpy.ops.mochi.preset_apply(filepath=str(path)) == {"FINISHED"}
    assert [i.kind for i in empty_scene.mochi.fields] == ["VORTEX"]
    made = [o for o in empty_scene.objects if o.get("mochi_preset_field")]
    assert [o.field.type for o in made] == ["TURBULENCE"] and made[0].field.size == pytest.approx(0.3)
    assert tuple(empty_scene.mochi.fields[0].axis) == pytest.approx((0.0, 0.0, 1.0))


def test_gravity_is_not_animatable(empty_scene):
    with pytest.raises(TypeError, match="not animatable|animat"):
        empty_scene.keyframe_insert(data_path="mochi.gravity")
    assert not empty_scene.mochi.bl_rna.properties["gravity"].is_animatable
    assert math.isclose(empty_scene.mochi.gravity[2], -9.81, rel_tol=1e-6)
