"""Every preset loads, and bakes a frame at a tiny particle count (presets double as smoke tests)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from engine.bake import bake
from engine.cache import read_frame
from engine.preset import load_preset
from engine.scene import setup_from_preset

PRESETS = sorted((Path(__file__).resolve().parents[2] / "presets").glob("*.toml"))


def test_there_are_presets():
    names = {p.stem for p in PRESETS}
    assert {"freefall", "rotating_gravity", "changing_radii_small", "changing_radii_large"} <= names


@pytest.mark.parametrize("path", PRESETS, ids=lambda p: p.stem)
def test_preset_bakes_two_frames(path, tmp_path):
    preset = load_preset(path)
    setup = setup_from_preset(preset, particles=300)
    n = setup.model.particle_count
    assert 150 <= n <= 600
    assert (setup.model.radius > 0).all()
    lo, hi = np.array(preset.domain_lo), np.array(preset.domain_hi)
    inside = ((setup.state.positions >= lo) & (setup.state.positions <= hi)).all(axis=1)
    assert inside.all(), "emitters must place particles inside the domain"
    bake(setup, tmp_path, frames=2)
    frame = read_frame(tmp_path, 2)
    assert len(frame["x"]) == n and np.isfinite(frame["x"]).all()


def test_particles_knob_scales_box_emitters():
    preset = load_preset(Path(PRESETS[0]).parent / "freefall.toml")
    assert setup_from_preset(preset, particles=1234).model.particle_count == 1234


def test_box_emitter_never_overlaps():
    preset = load_preset(Path(PRESETS[0]).parent / "changing_radii_large.toml")
    setup = setup_from_preset(preset, particles=3000)
    from .conftest import brute_force_pairs

    assert brute_force_pairs(setup.state.positions, setup.model.radius) == set()


def test_friction_model_comes_from_the_preset(tmp_path):
    text = (Path(PRESETS[0]).parent / "sand_pile.toml").read_text() + '\n[contact]\nfriction_model = "damper"\n'
    (tmp_path / "p.toml").write_text(text)
    setup = setup_from_preset(load_preset(tmp_path / "p.toml"), particles=50)
    assert setup.model.physics.friction_model == "damper"
    assert setup_from_preset(load_preset(PRESETS[0]), particles=50).model.physics.friction_model == "spring"
