"""The LAMMPS and LIGGGHTS inputs of benchmarks/peers reproduce Mochi's contact law.

The coefficient maps are checked exactly; where a peer is installed (benchmarks/peers/setup.sh, never
the test suite) a head-on collision of two grains and a grain dropped on the floor run in the peer and
in Mochi's CPU backend must end with the same velocities (the integrators differ at O(dt): velocity
Verlet against semi-implicit Euler, measured ≤ 2e-4 relative at 230 steps per collision; a damping
coefficient off by 5% moves the exit speed by ~1.5e-2).
"""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "benchmarks"))

from engine.backends.cpu import BackendCpu  # noqa: E402
from engine.contact_law import damping_ratio  # noqa: E402
from engine.errors import MochiError  # noqa: E402
from engine.model import Domain, Gravity, Material  # noqa: E402
from engine.scene import setup_from_arrays  # noqa: E402
from peers.lammps_input import tsuji_alpha, tsuji_input_for, write_lammps_run  # noqa: E402
from peers.liggghts_input import (gamman_table, max_damping_error, radius_types, type_masses,  # noqa: E402
                                  write_liggghts_run)
from peers.physics import peer_physics  # noqa: E402
from peers.runner import run_peer  # noqa: E402


def _scene(positions, radius, velocities, *, friction=0.0, gravity=(0.0, 0.0, 0.0), dt=1e-5):
    return setup_from_arrays(
        positions=np.asarray(positions, np.float32), radius=np.asarray(radius, np.float32),
        velocities=np.asarray(velocities, np.float32),
        materials=(Material(name="g", density=2500.0, restitution=0.5, friction=friction),),
        domain=Domain(lo=(0.0, 0.0, 0.0), hi=(0.2, 0.2, 0.2), wall_restitution=0.5, wall_friction=friction),
        gravity=Gravity(vector=gravity), dt=dt, stiffness=1.0e4, friction_model="damper")


@pytest.mark.parametrize("e", [0.1, 0.3, 0.5, 0.7, 0.9])
def test_tsuji_input_gives_mochis_damping(e):
    target = 2.0 * damping_ratio(e)
    assert abs(tsuji_alpha(tsuji_input_for(target)) - target) < 1e-12 * target


def test_liggghts_gamman_is_mochis_damping_at_the_type_masses(rng=np.random.default_rng(3)):
    radius = rng.uniform(0.005, 0.006, 5000)
    setup = _scene(rng.uniform(0.02, 0.18, (5000, 3)), radius, np.zeros((5000, 3)))
    physics = peer_physics(setup.model)
    types, _ = radius_types(setup.model.radius)
    masses = type_masses(setup.model.radius, setup.model.mass, types, 16)
    table = gamman_table(physics, masses)
    m_eff = masses[3] * masses[7] / (masses[3] + masses[7])
    assert table[3, 7] * m_eff == pytest.approx(physics.damping(m_eff), rel=1e-12)
    assert table[5, 16] * masses[5] == pytest.approx(physics.damping(masses[5], wall=True), rel=1e-12)
    assert max_damping_error(np.asarray(setup.model.mass, np.float64), types, masses) < 0.01


def test_peer_physics_refuses_friction():
    setup = _scene([[0.05, 0.05, 0.05]], [0.01], [[0.0, 0.0, 0.0]], friction=0.3)
    with pytest.raises(MochiError, match="friction"):
        peer_physics(setup.model)


def _mochi_final(setup, steps):
    backend = BackendCpu(setup.model)
    backend.set_state(setup.state)
    backend.step(steps)
    return backend.get_state().velocities.astype(np.float64)


def _peer_kinetic_energy(name, setup, steps, folder):
    writer = write_lammps_run if name == "lammps" else (lambda *a, **k: write_liggghts_run(*a, **k)[0])
    script = writer(folder, setup.model, setup.state.positions, setup.state.velocities, steps=steps, skin=0.002)
    run = run_peer(name, script, folder)
    columns, rows = run.thermo[-1]
    return rows[-1][columns.index("c_ke" if "c_ke" in columns else "ke")]


@pytest.mark.parametrize("name,exe", [("lammps", "lmp"), ("liggghts", "liggghts")])
def test_peer_collisions_end_like_mochi(name, exe, tmp_path):
    if shutil.which(exe) is None:
        pytest.skip(f"{exe} is not installed (benchmarks/peers/setup.sh)")
    steps = 1000  # 10 ms: each collision (~2.3 ms) is over
    head_on = _scene([[0.0885, 0.1, 0.1], [0.1115, 0.1, 0.1]], [0.01, 0.012], [[1.0, 0, 0], [-1.0, 0, 0]])
    floor = _scene([[0.1, 0.0115, 0.1]], [0.011], [[0.0, -1.0, 0.0]], gravity=(0.0, -9.81, 0.0))
    for label, setup in (("head-on", head_on), ("floor", floor)):
        v = _mochi_final(setup, steps)
        ke = 0.5 * float((setup.model.mass * (v ** 2).sum(axis=1)).sum())
        peer = _peer_kinetic_energy(name, setup, steps, tmp_path / label)
        assert peer == pytest.approx(ke, rel=1e-3), label
