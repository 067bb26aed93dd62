"""A pile settled under 'auto' stiffness and time step keeps every overlap at rest within 5% of a radius
(engine.timestep.REST_OVERLAP): 200 grains dropped as a block, 1.6 s on the CPU backend."""

from __future__ import annotations

import numpy as np
from scipy.spatial import cKDTree

from engine.backends.cpu import BackendCpu
from engine.model import Domain, Gravity, Material
from engine.scene import setup_from_arrays
from engine.timestep import REST_OVERLAP

R = 0.01


def test_settled_pile_overlaps_at_most_five_percent():
    rng = np.random.default_rng(3)
    grid = np.stack(np.meshgrid(np.arange(5), np.arange(5), np.arange(8), indexing="ij"), -1).reshape(-1, 3)
    positions = grid * 2.1 * R + (0.03, 0.03, 0.2) + rng.uniform(-0.02 * R, 0.02 * R, grid.shape)
    radius = np.full(len(positions), R, np.float32)
    domain = Domain(lo=(0.0, 0.0, 0.0), hi=(0.16, 0.16, 0.5))
    setup = setup_from_arrays(positions=positions.astype(np.float32), radius=radius, materials=(Material(),),
                              domain=domain, gravity=Gravity(vector=(0.0, 0.0, -9.81)), fps=25)
    assert setup.time_step.rest_overlap <= REST_OVERLAP
    backend = BackendCpu(setup.model)
    backend.set_state(setup.state)
    for _ in range(40):  # 1.6 s: the block lands at ~0.2 s and settles
        backend.step(setup.model.physics.steps_per_frame)
    state = backend.get_state()
    p = state.positions.astype(np.float64)
    # At rest: nearly every grain still (a few on top may roll on, without friction against rolling).
    speed = np.linalg.norm(state.velocities.astype(np.float64), axis=1)
    resting = speed < 0.02
    assert resting.mean() > 0.9, "the pile must have settled"
    pairs = cKDTree(p).query_pairs(2 * R, output_type="ndarray")
    pairs = pairs[resting[pairs[:, 0]] & resting[pairs[:, 1]]]
    between = 2 * R - np.linalg.norm(p[pairs[:, 0]] - p[pairs[:, 1]], axis=1)
    walls = (R - np.minimum(p - domain.lo, np.asarray(domain.hi) - p))[resting]
    worst = max(between.max(initial=0.0), walls.max()) / R
    print(f"largest overlap at rest: {worst:.2%} of a radius; {resting.mean():.0%} of the grains at rest")
    assert 0.0 < worst <= REST_OVERLAP, f"largest overlap at rest {worst:.1%} of a radius"
