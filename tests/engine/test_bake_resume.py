"""Caches: atomic frames, the manifest, and resume bit-identical to an uninterrupted bake."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from engine.bake import BakeProgress, bake
from engine.cache import FRAME_PROPERTIES, read_frame, read_manifest
from engine.cli.main import main
from engine.errors import MochiError
from engine.preset import load_preset
from engine.scene import setup_from_preset

PRESET = Path(__file__).resolve().parents[2] / "presets" / "sand_pile.toml"


def _setup(particles=400):
    return setup_from_preset(load_preset(PRESET), particles=particles)


def _frame_bytes(folder: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(folder.glob("frame_*.ply"))}


def test_cache_layout_and_manifest(tmp_path):
    progress = bake(_setup(), tmp_path / "c", frames=3)
    assert progress.finished and progress.error is None and progress.frames_done == 3
    manifest = read_manifest(tmp_path / "c")
    assert manifest["frames_completed"] == 3 and manifest["particle_count"] == 400
    assert manifest["attributes"] == list(FRAME_PROPERTIES)
    frame = read_frame(tmp_path / "c", 3)
    assert frame["x"].dtype == np.float32 and frame["id"].dtype == np.int32
    assert np.array_equal(np.sort(frame["id"]), np.arange(400))
    assert (tmp_path / "c" / "frame_0003.ply").read_bytes()[:60].startswith(b"ply\nformat binary_little_endian 1.0")
    assert not list((tmp_path / "c").glob(".*tmp*"))


def test_resume_after_cancel_equals_uninterrupted(tmp_path):
    full = tmp_path / "full"
    bake(_setup(), full, frames=5)
    part = tmp_path / "part"
    progress = BakeProgress()

    def cancel_after_frame_3(p):
        if p.frames_done == 3:
            p.request_cancel()

    bake(_setup(), part, frames=5, progress=progress, on_frame=cancel_after_frame_3)
    assert progress.cancelled and read_manifest(part)["frames_completed"] == 3
    assert sorted(p.name for p in part.glob("frame_*.ply")) == [f"frame_{i:04d}.ply" for i in (1, 2, 3)]
    bake(None, part, frames=5, resume=True)
    assert _frame_bytes(part) == _frame_bytes(full)


def test_killed_bake_resumes_bit_identical(tmp_path):
    """SIGKILL a real `mochi bake` mid-run; only complete frames remain and --resume finishes it."""
    env = dict(os.environ, PYTHONUNBUFFERED="1")
    args = [sys.executable, "-m", "engine.cli.main", "bake", str(PRESET), "--particles", "400", "--frames", "6"]
    full = subprocess.run(args + ["--out", str(tmp_path / "full")], env=env, capture_output=True, text=True)
    assert full.returncode == 0, full.stderr
    out = tmp_path / "killed"
    proc = subprocess.Popen(args + ["--out", str(out)], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.time() + 120
    while time.time() < deadline:
        manifest = out / "manifest.json"
        if manifest.exists() and json.loads(manifest.read_text())["frames_completed"] >= 3:
            break
        time.sleep(0.02)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    done = read_manifest(out)["frames_completed"]
    assert 3 <= done <= 6
    for f in range(1, done + 1):
        read_frame(out, f)  # every recorded frame is complete
    result = subprocess.run(args + ["--out", str(out), "--resume"], env=env, capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    assert _frame_bytes(out) == _frame_bytes(tmp_path / "full")
    assert not list(out.glob(".*tmp*"))


def test_existing_cache_is_never_overwritten_silently(tmp_path):
    bake(_setup(), tmp_path, frames=2)
    before = _frame_bytes(tmp_path)
    with pytest.raises(MochiError, match="already holds a bake of 2 frames"):
        bake(_setup(particles=300), tmp_path, frames=2)
    assert _frame_bytes(tmp_path) == before
    bake(_setup(particles=300), tmp_path, frames=2, overwrite=True)
    assert read_manifest(tmp_path)["particle_count"] == 300


def test_same_seed_same_bits(tmp_path):
    bake(_setup(), tmp_path / "a", frames=3)
    bake(_setup(), tmp_path / "b", frames=3)
    assert _frame_bytes(tmp_path / "a") == _frame_bytes(tmp_path / "b")


def test_divergence_stops_with_the_step_and_keeps_frames(tmp_path, capsys):
    """A stiffness far above what dt resolves blows up; the error names the step, frames stay."""
    from .conftest import scene

    rng = np.random.default_rng(3)
    setup = scene(rng.uniform(0.2, 0.8, (200, 3)), np.full(200, 0.02), velocities=rng.normal(0, 3, (200, 3)),
                  lo=(0, 0, 0), hi=(1, 1, 1), stiffness=1e3, dt=2e-4)
    # Force an unstable run: same model, stiffness raised after the stability check.
    import dataclasses

    physics = dataclasses.replace(setup.model.physics, stiffness=1e8)
    setup = dataclasses.replace(setup, model=dataclasses.replace(setup.model, physics=physics))
    with pytest.raises(MochiError, match=r"(NaN|Runaway energy) at step \d+"):
        bake(setup, tmp_path, frames=20)
    done = read_manifest(tmp_path)["frames_completed"]
    assert done >= 1
    for f in range(1, done + 1):
        assert np.isfinite(read_frame(tmp_path, f)["x"]).all()


def test_bake_cli_summary(tmp_path, capsys):
    assert main(["bake", str(PRESET), "--out", str(tmp_path), "--frames", "2", "--particles", "200"]) == 0
    out = capsys.readouterr().out
    assert "Baked frames 1–2 of 'Sand pile' (200 particles" in out


def test_the_cancel_check_sizes_chunks_by_time_and_never_changes_the_bits(tmp_path, monkeypatch):
    """Esc answers within ~0.1 s of stepping however slow a step is, and chunks of any size give the
    bits of single steps (the chunk size follows the measured step time, so it differs run to run)."""
    import engine.bake as bake_module

    assert bake_module.cancel_check_steps(0.2) == 1  # a 70,000-grain step on two busy cores
    assert bake_module.cancel_check_steps(0.01) == 10
    assert bake_module.cancel_check_steps(1e-6) == bake_module.CANCEL_CHECK_STEPS
    assert bake_module.cancel_check_steps(0.0) == bake_module.CANCEL_CHECK_STEPS
    outputs = {}
    for chunk in (1, 7, bake_module.CANCEL_CHECK_STEPS):
        monkeypatch.setattr(bake_module, "cancel_check_steps", lambda seconds_per_step, chunk=chunk: chunk)
        bake(_setup(), tmp_path / f"c{chunk}", frames=3)
        outputs[chunk] = _frame_bytes(tmp_path / f"c{chunk}")
    assert outputs[1] == outputs[7] == outputs[bake_module.CANCEL_CHECK_STEPS]
