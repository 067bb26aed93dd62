"""What a bake will cost, told before it starts (engine.estimate) and refreshed while it runs."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from engine.bake import bake
from engine.cli.main import main
from engine.estimate import estimate_bake, format_duration
from engine.preset import load_preset
from engine.scene import setup_from_preset

SAND = Path(__file__).resolve().parents[2] / "presets" / "sand_pile.toml"


def _frames(folder: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(folder.glob("frame_*.ply"))}


def test_probe_reports_the_scene_and_leaves_the_bake_bit_identical(tmp_path):
    setup = setup_from_preset(load_preset(SAND), particles=300)
    positions = setup.state.positions.copy()
    estimate = estimate_bake(setup, frames=4)
    physics, choice = setup.model.physics, setup.time_step
    assert estimate.particle_count == 300 and estimate.steps_per_frame == physics.steps_per_frame
    assert (estimate.dt, estimate.stiffness) == (physics.dt, physics.stiffness)
    assert estimate.expected_overlap == choice.expected_overlap <= 0.1
    assert estimate.seconds_per_step > 0 and estimate.frames == 3
    assert estimate.bake_seconds == pytest.approx(estimate.seconds_per_step * physics.steps_per_frame * 3)
    assert np.array_equal(setup.state.positions, positions)  # the probe stepped a copy
    bake(setup, tmp_path / "probed", frames=3)
    bake(setup_from_preset(load_preset(SAND), particles=300), tmp_path / "plain", frames=3)
    assert _frames(tmp_path / "probed") == _frames(tmp_path / "plain")


def test_progress_moves_within_a_frame_and_counts_down(tmp_path):
    seen = []

    def on_step(progress):
        seen.append((progress.frames_exact, progress.remaining_seconds))

    setup = setup_from_preset(load_preset(SAND), particles=300)
    bake(setup, tmp_path / "c", frames=3, on_step=on_step)
    exact = [f for f, _ in seen]
    assert exact == sorted(exact) and any(not float(f).is_integer() for f in exact)
    assert exact[-1] == pytest.approx(3.0)
    remaining = [r for _, r in seen]
    assert all(r is not None and r >= 0 for r in remaining) and remaining[-1] == pytest.approx(0.0, abs=1e-9)


def test_cli_prints_the_figures_before_baking(tmp_path, capsys):
    assert main(["bake", str(SAND), "--particles", "300", "--frames", "2", "--out", str(tmp_path / "c")]) == 0
    err = capsys.readouterr().err
    for words in ("300 particles", "steps per frame", "stiffness", "expected overlap", "estimated bake time"):
        assert words in err
    assert main(["bake", str(SAND), "--particles", "300", "--frames", "2", "--out", str(tmp_path / "d"),
                 "--no-estimate"]) == 0
    assert "estimated bake time" not in capsys.readouterr().err


@pytest.mark.parametrize("seconds,text", [(42.4, "42 s"), (200, "3 min 20 s"), (7500, "2 h 05 min")])
def test_durations_read_like_a_person_writes_them(seconds, text):
    assert format_duration(seconds) == text
