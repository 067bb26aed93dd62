"""Exports seen from Blender: its own USD importer and Alembic round trip give back the PLY frames."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import numpy as np
import pytest

from .conftest import bpy, mochi_module, needs_bpy_module

#: Distribution builds may leave USD or Alembic out (Debian's Blender 5.2 has neither): the exports are
#: then refused in one sentence (tested below), and the round trips cannot run.
HAS_USD = importlib.util.find_spec("pxr") is not None
HAS_ALEMBIC = "alembic_export" in dir(bpy.ops.wm)
needs_usd = pytest.mark.skipif(not HAS_USD, reason="this Blender was built without USD")
needs_alembic = pytest.mark.skipif(not HAS_ALEMBIC, reason="this Blender was built without Alembic")

PRESET = Path(__file__).resolve().parents[2] / "presets" / "sand_pile.toml"
FRAMES = 4


@pytest.fixture(scope="module")
def cache(mochi, tmp_path_factory) -> Path:
    """A preset bake (Y up, 300 grains, 4 frames), made by the engine as the command line makes it."""
    bake = mochi_module("engine.bake").bake
    load_preset = mochi_module("engine.preset").load_preset
    setup_from_preset = mochi_module("engine.scene").setup_from_preset

    folder = tmp_path_factory.mktemp("export") / "cache"
    bake(setup_from_preset(load_preset(PRESET), particles=300), folder, frames=FRAMES, info={"up_axis": "Y"})
    return folder


def ply_in_blender_world(cache: Path, frame: int) -> dict[str, np.ndarray]:
    """A PLY frame's centres in Blender's Z-up world (a Y-up cache is turned +90° about X, as playback
    does: (x, y, z) → (x, −z, y)), its radii and object ids."""
    ply = mochi_module("engine.cache").read_frame(cache, frame)
    return {"position": np.stack([ply["x"], -ply["z"], ply["y"]], axis=1), "radius": ply["radius"],
            "object_id": ply["object_id"], "velocity": np.stack([ply["vx"], -ply["vz"], ply["vy"]], axis=1)}


def world_attributes(obj, frame: int, names: dict[str, int]) -> dict[str, np.ndarray]:
    """Attributes of ``obj``'s evaluated geometry at ``frame`` (point cloud or mesh), positions and
    velocities in world space."""
    bpy.context.scene.frame_set(frame)
    evaluated = obj.evaluated_get(bpy.context.evaluated_depsgraph_get())
    data = evaluated.data
    count = len(data.points) if obj.type == "POINTCLOUD" else len(data.vertices)
    matrix = np.array(evaluated.matrix_world)
    out = {}
    for name, width in names.items():
        attribute = data.attributes[name]
        key = "vector" if width == 3 else "value"
        values = np.empty(count * width, np.int32 if attribute.data_type == "INT" else np.float32)
        attribute.data.foreach_get(key, values)
        out[name] = values.reshape(count, width) if width == 3 else values
    out["position"] = out["position"] @ matrix[:3, :3].T + matrix[:3, 3]
    if "velocity" in out:
        out["velocity"] = out["velocity"] @ matrix[:3, :3].T
    return out


@needs_usd
def test_blender_usd_importer_gives_back_the_ply_frames(mochi, empty_scene, cache, tmp_path):
    export_cache_to_usd = mochi_module("engine.export.usd").export_cache_to_usd

    export_cache_to_usd(cache, tmp_path / "grains.usda")
    assert bpy.ops.wm.usd_import(filepath=str(tmp_path / "grains.usda")) == {"FINISHED"}
    (grains,) = [obj for obj in bpy.data.objects if obj.type == "POINTCLOUD"]
    for frame in (1, 2, FRAMES):
        got = world_attributes(grains, frame, {"position": 3, "radius": 1, "velocity": 3, "object_id": 1})
        want = ply_in_blender_world(cache, frame)
        assert got["position"].shape == (300, 3)
        np.testing.assert_allclose(got["position"], want["position"], atol=1e-6)
        np.testing.assert_allclose(got["velocity"], want["velocity"], atol=1e-6)
        np.testing.assert_array_equal(got["radius"], want["radius"])
        np.testing.assert_array_equal(got["object_id"], want["object_id"])


@needs_usd
def test_export_usd_operator(mochi, empty_scene, cache, tmp_path):
    from pxr import Usd

    empty_scene.mochi.cache_directory = str(cache)
    assert bpy.ops.mochi.export_usd(filepath=str(tmp_path / "op.usdc"), file_format="USDC") == {"FINISHED"}
    assert Usd.Stage.Open(str(tmp_path / "op.usdc")).GetEndTimeCode() == FRAMES
    empty_scene.mochi.cache_directory = str(tmp_path / "no_cache")
    with pytest.raises(RuntimeError, match="is not a Mochi cache folder"):
        bpy.ops.mochi.export_usd(filepath=str(tmp_path / "none.usda"))
    assert not (tmp_path / "none.usda").exists()


@needs_alembic
def test_alembic_export_of_the_playback_object_round_trips(mochi, empty_scene, cache, tmp_path):
    playback = mochi_module("addon.playback")
    scene = empty_scene
    scene.frame_start, scene.frame_end = 1, FRAMES
    playback.ensure_playback_object(scene, str(cache), start_frame=1, last_frame=FRAMES, up_axis="Y")
    objects_before = sorted(o.name for o in bpy.data.objects)
    groups_before = sorted(g.name for g in bpy.data.node_groups)
    assert bpy.ops.mochi.export_alembic(filepath=str(tmp_path / "grains.abc")) == {"FINISHED"}
    assert sorted(o.name for o in bpy.data.objects) == objects_before  # the export copy is gone
    assert sorted(g.name for g in bpy.data.node_groups) == groups_before

    bpy.ops.wm.read_homefile(use_empty=True, use_factory_startup=True)
    assert bpy.ops.wm.alembic_import(filepath=str(tmp_path / "grains.abc")) == {"FINISHED"}
    (imported,) = bpy.data.objects
    for frame in (1, 2, FRAMES):
        got = world_attributes(imported, frame, {"position": 3, "velocity": 3})
        want = ply_in_blender_world(cache, frame)
        np.testing.assert_allclose(got["position"], want["position"], atol=1e-6)
        np.testing.assert_allclose(got["velocity"], want["velocity"], atol=1e-6)


@needs_alembic
def test_alembic_export_without_playback_object(mochi, empty_scene, tmp_path):
    with pytest.raises(RuntimeError, match="no Mochi playback object"):
        bpy.ops.mochi.export_alembic(filepath=str(tmp_path / "none.abc"))
    assert not (tmp_path / "none.abc").exists()


@needs_bpy_module
def test_cli_alembic_export_through_the_bpy_module(mochi, empty_scene, cache, tmp_path, capsys):
    """`mochi export CACHE --abc OUT` builds the playback object in a child Python with bpy."""
    from engine.cli.main import main

    assert main(["export", str(cache), "--abc", str(tmp_path / "cli.abc")]) == 0
    bpy.ops.wm.read_homefile(use_empty=True, use_factory_startup=True)
    assert bpy.ops.wm.alembic_import(filepath=str(tmp_path / "cli.abc")) == {"FINISHED"}
    (imported,) = bpy.data.objects
    got = world_attributes(imported, FRAMES, {"position": 3})
    np.testing.assert_allclose(got["position"], ply_in_blender_world(cache, FRAMES)["position"], atol=1e-6)
    assert main(["export", str(tmp_path / "missing"), "--abc", str(tmp_path / "none.abc")]) == 2
    assert "not a Mochi cache folder" in capsys.readouterr().err


USER = b"the user's own file"


@needs_usd
def test_export_usd_operator_replaces_only_its_own_files(mochi, empty_scene, cache, tmp_path):
    """A user's layer under a name the export writes is reported (naming the option), kept, and replaced
    only with Overwrite ticked; the operator's own earlier export is replaced without it."""
    empty_scene.mochi.cache_directory = str(cache)
    stage = tmp_path / "op.usda"
    (tmp_path / "op_frames").mkdir()
    layer = tmp_path / "op_frames" / "frame.0002.usdc"
    layer.write_bytes(USER)
    with pytest.raises(RuntimeError, match="frame.0002.usdc' exists and Mochi cannot prove it wrote it.*tick Overwrite"):
        bpy.ops.mochi.export_usd(filepath=str(stage))
    assert layer.read_bytes() == USER and not stage.exists()
    assert bpy.ops.mochi.export_usd(filepath=str(stage), overwrite=True) == {"FINISHED"}
    assert layer.read_bytes() != USER
    assert bpy.ops.mochi.export_usd(filepath=str(stage)) == {"FINISHED"}  # its own files now


@needs_alembic
def test_alembic_export_replaces_only_its_own_file(mochi, empty_scene, cache, tmp_path):
    playback = mochi_module("addon.playback")
    empty_scene.frame_start, empty_scene.frame_end = 1, FRAMES
    playback.ensure_playback_object(empty_scene, str(cache), start_frame=1, last_frame=FRAMES, up_axis="Y")
    out = tmp_path / "grains.abc"
    out.write_bytes(USER)
    with pytest.raises(RuntimeError, match="exists and Mochi cannot prove it wrote it.*tick Overwrite"):
        bpy.ops.mochi.export_alembic(filepath=str(out))
    assert out.read_bytes() == USER
    precious = tmp_path / "precious.abc"
    precious.write_bytes(USER)
    out.unlink()
    out.symlink_to(precious)
    assert bpy.ops.mochi.export_alembic(filepath=str(out), overwrite=True) == {"FINISHED"}
    assert precious.read_bytes() == USER and not out.is_symlink()  # the link replaced, its target untouched
    assert bpy.ops.mochi.export_alembic(filepath=str(out)) == {"FINISHED"}  # its own file now
    assert not [p for p in tmp_path.iterdir() if ".tmp-" in p.name]


@pytest.mark.skipif(HAS_USD and HAS_ALEMBIC, reason="this Blender has USD and Alembic")
def test_a_blender_without_usd_or_alembic_refuses_in_one_sentence(mochi, empty_scene, cache, tmp_path):
    mochi_module("addon.playback").ensure_playback_object(bpy.context.scene, str(cache), start_frame=1,
                                                          last_frame=FRAMES, up_axis="Y")
    bpy.context.scene.mochi.cache_directory = str(cache)
    if not HAS_USD:
        with pytest.raises(RuntimeError, match="built without USD"):
            bpy.ops.mochi.export_usd(filepath=str(tmp_path / "out.usda"))
    if not HAS_ALEMBIC:
        with pytest.raises(RuntimeError, match="built without Alembic"):
            bpy.ops.mochi.export_alembic(filepath=str(tmp_path / "out.abc"))


def test_flamenco_job_types_are_saved_again_only_over_their_own(mochi, empty_scene, tmp_path):
    """Render › Save Mochi Flamenco Job Types writes outside any bake folder too: same rule as the exports."""
    assert bpy.ops.mochi.save_flamenco_job_types(directory=str(tmp_path)) == {"FINISHED"}
    assert bpy.ops.mochi.save_flamenco_job_types(directory=str(tmp_path)) == {"FINISHED"}  # its own copies
    (tmp_path / "mochi_wedge.js").write_bytes(USER)  # the studio's own edit of the job type
    with pytest.raises(RuntimeError, match="mochi_wedge.js' exists and Mochi cannot prove it wrote it"):
        bpy.ops.mochi.save_flamenco_job_types(directory=str(tmp_path))
    assert (tmp_path / "mochi_wedge.js").read_bytes() == USER
    assert bpy.ops.mochi.save_flamenco_job_types(directory=str(tmp_path), overwrite=True) == {"FINISHED"}
    assert (tmp_path / "mochi_wedge.js").read_bytes() != USER
