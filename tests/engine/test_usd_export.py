"""USD export: what usd-core reads back from the stage equals the PLY frames, frame by frame."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from engine.bake import bake
from engine.cache import read_frame, read_manifest
from engine.cli.main import main
from engine.export.usd import (POINTS_PRIM, UsdFollower, export_cache_to_usd, frame_layer_path,
                               frames_folder)
from engine.preset import load_preset
from engine.scene import setup_from_preset

pxr = pytest.importorskip("pxr")
from pxr import Usd, UsdGeom  # noqa: E402

PRESET = Path(__file__).resolve().parents[2] / "presets" / "sand_pile.toml"
PARTICLES = 300


def _bake(folder: Path, frames: int, *, info=None, resume=False, on_frame=None):
    setup = None if resume else setup_from_preset(load_preset(PRESET), particles=PARTICLES)
    return bake(setup, folder, frames=frames, resume=resume, on_frame=on_frame,
                info={"up_axis": "Y"} | (info or {}))


@pytest.fixture(scope="module")
def cache(tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("usd") / "cache"
    _bake(folder, 4)
    return folder


def _points(stage) -> UsdGeom.Points:
    prim = stage.GetPrimAtPath(POINTS_PRIM)
    assert prim.IsValid() and prim.IsA(UsdGeom.Points)
    return UsdGeom.Points(prim)


def test_stage_matches_every_ply_frame(cache, tmp_path):
    result = export_cache_to_usd(cache, tmp_path / "grains.usda")
    assert (result.frames, result.written) == (4, 4)
    stage = Usd.Stage.Open(str(tmp_path / "grains.usda"))
    assert UsdGeom.GetStageMetersPerUnit(stage) == 1.0
    assert UsdGeom.GetStageUpAxis(stage) == UsdGeom.Tokens.y  # a preset: gravity along −y
    assert stage.GetTimeCodesPerSecond() == stage.GetFramesPerSecond() == read_manifest(cache)["fps"] == 24
    assert (stage.GetStartTimeCode(), stage.GetEndTimeCode()) == (1, 4)
    assert stage.GetDefaultPrim().GetPath() == "/Mochi"
    points = _points(stage)
    primvars = UsdGeom.PrimvarsAPI(points)
    assert points.GetPointsAttr().GetTimeSamples() == [1.0, 2.0, 3.0, 4.0]
    for frame in (1, 2, 4):
        ply = read_frame(cache, frame)
        positions = np.asarray(points.GetPointsAttr().Get(frame))
        assert positions.shape == (PARTICLES, 3)
        assert np.array_equal(positions, np.stack([ply["x"], ply["y"], ply["z"]], axis=1))
        assert np.array_equal(np.asarray(points.GetWidthsAttr().Get(frame)), 2 * ply["radius"])
        assert np.array_equal(np.asarray(points.GetVelocitiesAttr().Get(frame)),
                              np.stack([ply["vx"], ply["vy"], ply["vz"]], axis=1))
        assert np.array_equal(np.asarray(points.GetIdsAttr().Get(frame)), ply["id"])
        for name in ("object_id", "material", "active"):
            primvar = primvars.GetPrimvar(name)
            assert primvar.GetInterpolation() == UsdGeom.Tokens.vertex
            assert np.array_equal(np.asarray(primvar.Get(frame)), ply[name])
        lo, hi = np.asarray(points.GetExtentAttr().Get(frame))
        assert np.all(lo <= positions.min(axis=0)) and np.all(hi >= positions.max(axis=0))
    # Frames differ (the grains fall), so each time code reads its own layer.
    assert not np.array_equal(points.GetPointsAttr().Get(1), points.GetPointsAttr().Get(4))


def test_binary_stage_and_blender_timeline_offset(tmp_path):
    folder = tmp_path / "cache"
    _bake(folder, 2, info={"up_axis": "Z", "frame_start_scene": 10})  # as the add-on's manifest says
    export_cache_to_usd(folder, tmp_path / "grains.usdc")
    assert (tmp_path / "grains.usdc").read_bytes()[:8] == b"PXR-USDC"
    stage = Usd.Stage.Open(str(tmp_path / "grains.usdc"))
    assert UsdGeom.GetStageUpAxis(stage) == UsdGeom.Tokens.z
    assert (stage.GetStartTimeCode(), stage.GetEndTimeCode()) == (10, 11)
    ply = read_frame(folder, 2)
    assert np.array_equal(np.asarray(_points(stage).GetPointsAttr().Get(11))[:, 0], ply["x"])


def test_export_is_incremental_and_the_stage_does_not_grow(tmp_path):
    folder, stage_path = tmp_path / "cache", tmp_path / "grains.usda"
    _bake(folder, 3)
    export_cache_to_usd(folder, stage_path)
    kept = {f: frame_layer_path(stage_path, f).stat().st_mtime_ns for f in (1, 2, 3)}
    size_at_3 = stage_path.stat().st_size
    _bake(folder, 5, resume=True)
    result = export_cache_to_usd(folder, stage_path)
    assert (result.frames, result.written) == (5, 2)
    assert {f: frame_layer_path(stage_path, f).stat().st_mtime_ns for f in (1, 2, 3)} == kept
    assert stage_path.stat().st_size == size_at_3  # only the end time changed
    stage = Usd.Stage.Open(str(stage_path))
    assert stage.GetEndTimeCode() == 5
    assert np.array_equal(np.asarray(_points(stage).GetPointsAttr().Get(5))[:, 1], read_frame(folder, 5)["y"])
    assert not list(frames_folder(stage_path).glob(".*tmp*"))


def test_follower_exports_each_frame_as_it_lands(tmp_path):
    folder, stage_path = tmp_path / "cache", tmp_path / "live.usda"
    follower = UsdFollower(folder, stage_path)
    seen = []

    def on_frame(progress):
        follower.on_frame(progress)
        seen.append(Usd.Stage.Open(str(stage_path)).GetEndTimeCode())

    _bake(folder, 3, on_frame=on_frame)
    assert seen == [1, 2, 3]


def test_rebaked_shorter_cache_drops_old_layers(tmp_path):
    folder, stage_path = tmp_path / "cache", tmp_path / "grains.usda"
    _bake(folder, 3)
    export_cache_to_usd(folder, stage_path)
    setup = setup_from_preset(load_preset(PRESET), particles=PARTICLES)
    bake(setup, folder, frames=2, overwrite=True, info={"up_axis": "Y"})
    result = export_cache_to_usd(folder, stage_path)
    assert (result.frames, result.written) == (2, 2)
    assert not frame_layer_path(stage_path, 3).exists()


def test_cli_export_and_its_errors(cache, tmp_path, capsys):
    assert main(["export", str(cache), "--usd", str(tmp_path / "a.usda")]) == 0
    assert "frames 1–4" in capsys.readouterr().out
    foreign = tmp_path / "foreign.usda"
    foreign.write_text("#usda 1.0\n")
    cases = [
        (["export", str(cache)], "Say what to write"),
        (["export", str(tmp_path / "missing"), "--usd", str(tmp_path / "b.usda")], "not a Mochi cache folder"),
        (["export", str(cache), "--usd", str(tmp_path / "b.txt")], "must end in .usda, .usdc or .usd"),
        (["export", str(cache), "--usd", str(foreign)], "exists and Mochi cannot prove it wrote it"),
    ]
    for argv, expected in cases:
        assert main(argv) == 2
        err = capsys.readouterr().err
        assert expected in err and "Traceback" not in err
    assert foreign.read_text() == "#usda 1.0\n"  # refused, so untouched
    assert main(["export", str(cache), "--usd", str(foreign), "--overwrite"]) == 0


def test_another_cache_exported_to_the_same_stage_replaces_every_layer(cache, tmp_path):
    other = tmp_path / "other"  # baked before the first export, so the first export's layers are newer
    bake(setup_from_preset(load_preset(PRESET), particles=PARTICLES // 2), other, frames=2, info={"up_axis": "Y"})
    stage_path = tmp_path / "grains.usda"
    export_cache_to_usd(cache, stage_path)
    result = export_cache_to_usd(other, stage_path)
    assert (result.frames, result.written) == (2, 2)
    stage = Usd.Stage.Open(str(stage_path))
    for frame in (1, 2):
        assert len(_points(stage).GetPointsAttr().Get(frame)) == PARTICLES // 2
    assert not frame_layer_path(stage_path, 3).exists()


def test_progress_reports_every_frame(cache, tmp_path):
    calls = []
    export_cache_to_usd(cache, tmp_path / "p.usda", on_frame=lambda frame, frames: calls.append((frame, frames)))
    export_cache_to_usd(cache, tmp_path / "p.usda", on_frame=lambda frame, frames: calls.append((frame, frames)))
    assert calls == [(f, 4) for f in range(1, 5)] * 2  # frames already current count too


def test_cli_follow_exports_a_bake_running_elsewhere(tmp_path):
    """`mochi export --follow` in another process picks frames up while this one bakes them."""
    import subprocess
    import sys
    import time

    folder, stage_path = tmp_path / "cache", tmp_path / "live.usda"
    follower = subprocess.Popen([sys.executable, "-m", "engine.cli.main", "export", str(folder), "--usd",
                                 str(stage_path), "--follow", "--until", "4", "--idle", "120"],
                                stderr=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
                                cwd=Path(__file__).resolve().parents[2])
    _bake(folder, 4, on_frame=lambda progress: time.sleep(1.0))  # slow enough for the 0.5 s polls
    out, err = follower.communicate(timeout=120)
    assert follower.returncode == 0, err
    exported = [line for line in err.splitlines() if line.startswith("USD: frames 1–")]
    assert len(exported) >= 2 and exported[-1].startswith("USD: frames 1–4 ")  # frame by frame, not once
    assert Usd.Stage.Open(str(stage_path)).GetEndTimeCode() == 4
