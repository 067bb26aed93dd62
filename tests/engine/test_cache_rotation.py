"""Cache format version 2 (rotation columns), exact resume with rotation, rolling and cohesion, and
version-1 caches that still load."""

from __future__ import annotations

import json

import numpy as np

from engine.bake import BakeProgress, bake
from engine.cache import (FRAME_PROPERTIES, FRAME_PROPERTIES_V1, MANIFEST_NAME, frame_path, load_resume, read_frame,
                          read_manifest)
from engine.cache_integrity import with_manifest_digest
from engine.digest import file_digest
from engine.ply import read_points, write_points

from .conftest import scene


def _setup(rng, n=250):
    positions = rng.uniform([-0.08, 0.0, -0.08], [0.08, 0.25, 0.08], (n, 3))
    positions[:, 1] += 0.012
    return scene(positions, rng.uniform(0.008, 0.012, n), gravity=(0, -9.81, 0), lo=(-0.1, 0, -0.1),
                 hi=(0.1, 1, 0.1), friction=0.5, stiffness=1.0e4, dt=1.0e-4, fps=50.0, rolling_friction=0.2,
                 cohesion=1.0e5)


def _frame_bytes(folder):
    return {p.name: p.read_bytes() for p in sorted(folder.glob("frame_*.ply"))}


def test_resume_with_rotation_rolling_and_cohesion_is_bit_exact(tmp_path, rng):
    setup = _setup(rng)
    assert setup.model.physics.rotation and setup.model.physics.integrator == "verlet"
    full = tmp_path / "full"
    bake(setup, full, frames=6)
    frame = read_frame(full, 6)
    assert read_manifest(full)["attributes"] == list(FRAME_PROPERTIES)
    assert np.abs(frame["wx"]).max() > 0.5  # the grains spin ...
    q = np.stack([frame[c] for c in ("qw", "qx", "qy", "qz")], 1)
    assert np.abs(q[:, 0]).min() < 0.999  # ... and have turned
    np.testing.assert_allclose(np.linalg.norm(q, axis=1), 1.0, atol=1e-6)
    part = tmp_path / "part"
    progress = BakeProgress()

    def cancel_after_frame_3(p):
        if p.frames_done == 3:
            p.request_cancel()

    bake(setup, part, frames=6, progress=progress, on_frame=cancel_after_frame_3)
    assert progress.cancelled and read_manifest(part)["frames_completed"] == 3
    bake(None, part, frames=6, resume=True)
    assert _frame_bytes(part) == _frame_bytes(full)


def _as_version_1(folder):
    """Rewrite a bake as the engine before rotation wrote it: no rotation columns, no rotation keys."""
    manifest = json.loads((folder / MANIFEST_NAME).read_text())
    for frame in range(1, manifest["frames_completed"] + 1):
        columns = read_points(frame_path(folder, frame))
        write_points(frame_path(folder, frame), {name: columns[name] for name in FRAME_PROPERTIES_V1})
        manifest["file_digests"][frame_path(folder, frame).name] = file_digest(frame_path(folder, frame))
    physics = manifest["physics"]
    for key in ("rotation", "integrator", "bodies"):
        del physics[key]
    for material in physics["materials"]:
        del material["rolling_friction"], material["cohesion"]
    del physics["domain"]["wall_rolling_friction"], physics["domain"]["wall_cohesion"]
    manifest["format_version"] = 1
    manifest["attributes"] = list(FRAME_PROPERTIES_V1)
    from engine.digest import digest

    manifest["physics_digest"] = digest(physics)
    manifest.pop("manifest_digest", None)
    (folder / MANIFEST_NAME).write_text(json.dumps(with_manifest_digest(manifest), indent=2))


def test_version_1_cache_loads_and_resumes_as_the_non_rotating_model(tmp_path, rng):
    setup = _setup(rng, 120)
    folder = tmp_path / "old"
    bake(setup, folder, frames=2)
    _as_version_1(folder)
    assert "wx" not in read_points(frame_path(folder, 2))
    frame = read_frame(folder, 2)
    assert np.all(frame["wx"] == 0) and np.all(frame["qw"] == 1)
    model, state, manifest = load_resume(folder)
    assert manifest["format_version"] == 1
    assert not model.physics.rotation and model.physics.integrator == "euler"
    assert np.all(state.angular_velocities == 0) and np.all(state.orientations[:, 0] == 1)
    bake(None, folder, frames=3, resume=True)
    assert read_manifest(folder)["frames_completed"] == 3
    assert np.all(read_frame(folder, 3)["wx"] == 0)  # the resumed bake kept the non-rotating model
