"""A cache imported from LAMMPS (`mochi export-lammps`, Debian's `lmp`, `mochi import-lammps`) plays back in
Blender like any bake: Load Cache shows its frames' grains where the cache has them."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import bpy
import numpy as np
import pytest

from .conftest import mochi_module, needs_bpy_module

pytestmark = needs_bpy_module

REPO = Path(__file__).resolve().parents[2]


def _mochi(*args) -> None:
    result = subprocess.run([sys.executable, "-m", "engine.cli.main", *map(str, args)], capture_output=True,
                            text=True, cwd=REPO)
    assert result.returncode == 0, result.stderr


def test_a_lammps_import_plays_back_like_a_bake(empty_scene, tmp_path):
    if shutil.which("lmp") is None:
        pytest.skip("LAMMPS (lmp) is not installed; `bash benchmarks/peers/setup.sh` installs Debian's lammps")
    deck, cache = tmp_path / "deck", tmp_path / "cache"
    _mochi("export-lammps", REPO / "presets" / "settling_bed.toml", deck, "--particles", "200", "--frames", "3")
    run = subprocess.run(["lmp", "-in", "in.mochi", "-log", "none"], cwd=deck, capture_output=True, text=True)
    assert run.returncode == 0, run.stdout[-2000:]
    _mochi("import-lammps", *sorted((deck / "dumps").glob("*.lammpstrj")), "--out", cache)
    assert bpy.ops.mochi.load_cache(directory=str(cache)) == {"FINISHED"}
    scene = bpy.context.scene
    obj = scene.mochi.playback_object
    scene.frame_set(scene.mochi.frame_start + 2)
    geometry = obj.evaluated_get(bpy.context.evaluated_depsgraph_get()).evaluated_geometry()
    cloud = geometry.pointcloud
    points = np.empty(len(cloud.points) * 3, np.float32)
    cloud.attributes["position"].data.foreach_get("vector", points)
    points = points.reshape(-1, 3)
    frame = mochi_module("engine.cache").read_frame(cache, 3)
    expected = np.stack([frame["x"], frame["y"], frame["z"]], axis=1)
    assert len(points) == len(expected) == 200
    assert not np.allclose(expected, np.stack([mochi_module("engine.cache").read_frame(cache, 1)[k]
                                               for k in ("x", "y", "z")], axis=1))  # the grains fell
    order, ref = np.lexsort(points.T), np.lexsort(expected.T)
    np.testing.assert_allclose(points[order], expected[ref], atol=1e-6)
