"""Initial spin (issue 30, point 2): every emitter kind takes ``angular_velocity`` and the grains start
spinning with it (a PLY through its wx wy wz columns); a mesh object turns as a rigid body whose grains
spin with it; where grains do not rotate a spin is refused, never accepted and dropped."""

from __future__ import annotations

import tomllib
from pathlib import Path

import numpy as np
import pytest

from engine.backends.cpu import BackendCpu
from engine.errors import MochiError
from engine.ply import write_points
from engine.preset import parse_preset
from engine.scene import setup_from_preset

PRESETS = Path(__file__).resolve().parents[2] / "presets"
SPIN = (0.0, 0.0, 40.0)  # [rad/s]

SCENE = """
[scene]
name = "Spin"
frames = 3
fps = 25

[time]
substeps = 200
stiffness = 2000.0

[domain]
lo = [0.0, 0.0, 0.0]
hi = [1.0, 1.0, 1.0]

[gravity]
vector = [0.0, 0.0, 0.0]

[contact]
rotation = {rotation}

[[materials]]
name = "grain"
friction = 0.5
"""

BOX = """
[[emitters]]
type = "box"
count = 8
lo = [0.3, 0.3, 0.3]
hi = [0.7, 0.7, 0.7]
radius = 0.01
angular_velocity = [0.0, 0.0, 40.0]
"""


def _setup(emitters: str, *, rotation: bool = True, folder: Path = PRESETS):
    text = SCENE.format(rotation=str(rotation).lower()) + emitters
    return setup_from_preset(parse_preset(tomllib.loads(text), str(folder / "spin.toml")))


def _stepped(setup, seconds: float):
    backend = BackendCpu(setup.model)
    backend.set_state(setup.state)
    backend.step(int(round(seconds / setup.model.physics.dt)))
    return backend.get_state()


def test_box_grains_start_spinning_and_keep_their_spin_with_nothing_touching():
    setup = _setup(BOX)
    np.testing.assert_array_equal(setup.state.angular_velocities, np.tile(SPIN, (8, 1)).astype(np.float32))
    # Sparse grains in zero gravity touch nothing: no torque, so ω stays (and the orientation turns).
    state = _stepped(setup, 0.05)
    np.testing.assert_allclose(state.angular_velocities, setup.state.angular_velocities, rtol=1e-6)
    half_angle = 0.5 * SPIN[2] * state.step * setup.model.physics.dt  # q = (cos θ/2, 0, 0, sin θ/2)
    np.testing.assert_allclose(state.orientations[:, 3], np.sin(half_angle), atol=1e-4)


def test_a_ply_emitter_reads_its_spin_columns(tmp_path):
    positions = np.array([[0.3, 0.5, 0.5], [0.5, 0.5, 0.5], [0.7, 0.5, 0.5]], np.float32)
    spin = np.array([[1.0, 2.0, 3.0], [0.0, -5.0, 0.0], [7.0, 0.0, 0.5]], np.float32)
    write_points(tmp_path / "grains.ply", {"x": positions[:, 0], "y": positions[:, 1], "z": positions[:, 2],
                                           "radius": np.full(3, 0.01, np.float32),
                                           "wx": spin[:, 0], "wy": spin[:, 1], "wz": spin[:, 2]})
    setup = _setup('[[emitters]]\ntype = "file"\npath = "grains.ply"\n', folder=tmp_path)
    np.testing.assert_array_equal(setup.state.angular_velocities, spin)
    # Without spin columns, the emitter's angular_velocity is every grain's spin.
    write_points(tmp_path / "plain.ply", {"x": positions[:, 0], "y": positions[:, 1], "z": positions[:, 2],
                                          "radius": np.full(3, 0.01, np.float32)})
    setup = _setup('[[emitters]]\ntype = "file"\npath = "plain.ply"\nangular_velocity = [0.0, 0.0, 40.0]\n',
                   folder=tmp_path)
    np.testing.assert_array_equal(setup.state.angular_velocities, np.tile(SPIN, (3, 1)).astype(np.float32))


MESH = """
[[emitters]]
type = "mesh"
path = "bunny.obj"
radius = 0.03
small_ratio = 1.0
fit = 0.4
center = [0.5, 0.5, 0.5]
angular_velocity = [0.0, 0.0, 4.0]
body = "{body}"
"""


def _angular_momentum(setup, state) -> np.ndarray:
    """Angular momentum about the centre of mass [kg m²/s]: orbits plus the grains' own spins (2/5 m r² ω)."""
    m = setup.model.mass.astype(np.float64)[:, None]
    x = state.positions.astype(np.float64)
    v = state.velocities.astype(np.float64)
    centre = (m * x).sum(axis=0) / m.sum()
    spin = 0.4 * m * setup.model.radius.astype(np.float64)[:, None] ** 2 * state.angular_velocities
    return (np.cross(x - centre, m * v) + spin).sum(axis=0)


@pytest.mark.parametrize("body", ["loose", "rigid"])
def test_a_turning_mesh_object_turns_as_one_body_its_grains_spinning_with_it(body):
    setup = _setup(MESH.format(body=body))
    n = setup.model.particle_count
    turning = np.tile((0.0, 0.0, 4.0), (n, 1)).astype(np.float32)
    np.testing.assert_array_equal(setup.state.angular_velocities, turning)
    # A rigid turn: at every contact the two grains' surfaces move together, so nothing slips and, in
    # zero gravity, the object keeps turning at 4 rad/s with its angular momentum.
    before = _angular_momentum(setup, setup.state)
    state = _stepped(setup, 0.1)
    after = _angular_momentum(setup, state)
    np.testing.assert_allclose(after, before, rtol=1e-3, atol=1e-3 * np.abs(before).max())
    assert np.abs(state.angular_velocities[:, 2] - 4.0).max() < 0.05


def test_a_spin_is_refused_where_grains_do_not_rotate():
    with pytest.raises(MochiError, match="spin .*rotation"):
        _setup(BOX, rotation=False)
    # A mesh object still turns (its grains' velocities), and a note says its grains do not spin.
    setup = _setup(MESH.format(body="loose"), rotation=False)
    assert not setup.state.angular_velocities.any()
    assert np.abs(setup.state.velocities).max() > 0.1
    assert any("do not spin" in note for note in setup.notes)
