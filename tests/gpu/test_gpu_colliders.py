"""Mesh colliders on the GPU backends (kernels/colliders.cu) against the CPU reference and physics.

The per-grain collider code is checked against the CPU bit for bit without a GPU
(tests/engine/test_collider_device_math.py); these tests run the launches, the hooks in the backends'
step loops and whole scenes, on a GPU.
"""

from __future__ import annotations

import numpy as np
import pytest

from engine.backends import make_backend
from engine.colliders import Collider

from ..engine.test_colliders import (PRESETS, bowl_scene, lattice, lift_scene, make_scene, paddle_scene,
                                     throw_scene)
from .conftest import make_gpu_backend


def run_gpu(name, setup, seconds):
    backend = make_gpu_backend(name, setup.model)
    backend.set_state(setup.state)
    backend.step(int(round(seconds / setup.model.physics.dt)))
    return backend, backend.get_state()


def stairs_scene(rng):
    """Grains 3 radii apart (no grain–grain contacts) pressed onto the stairs mesh, moving."""
    import trimesh

    mesh = trimesh.load(PRESETS / "meshes" / "stairs.obj", force="mesh", process=False)
    stairs = Collider("stairs", mesh.vertices, mesh.faces, thickness=0.004, friction=0.5)
    points = lattice((0.0, 0.0, 0.05), (0.5, 0.45, 0.35), 0.03, rng, jitter=0.0)
    velocities = rng.normal(0.0, 0.3, points.shape).astype(np.float32)
    return make_scene(points, 0.01, [stairs], velocities=velocities, lo=(-0.2, -0.2, -0.2), hi=(0.8, 0.8, 0.6),
                      stiffness=2.0e3, dt=1e-4, friction_model="damper")


def test_first_steps_match_cpu(gpu_name, rng):
    """Same contacts and forces as the CPU: after 20 steps the states agree to float32 rounding (the GPU
    adds the collider force to a float32 force, the CPU to a float64 one)."""
    setup = stairs_scene(rng)
    _, gpu_state = run_gpu(gpu_name, setup, 20 * setup.model.physics.dt)
    cpu = make_backend("cpu", setup.model)
    cpu.set_state(setup.state)
    cpu.step(20)
    cpu_state = cpu.get_state()
    free = setup.state.velocities + 20 * setup.model.physics.dt * np.asarray(setup.model.physics.gravity.vector,
                                                                              np.float32)
    touched = np.abs(cpu_state.velocities - free).max(axis=1) > 1e-3
    assert touched.sum() > 20, "the scene must have collider contacts"
    # The sides differ by float32 roundings (the GPU's force and gravity). A last-bit difference can end a contact one step earlier on one side
    # (the normal force jumps by the dashpot term there): ~5e-3 m/s for that grain, 1e-5 m after the
    # remaining steps. Most grains agree far closer (medians).
    np.testing.assert_allclose(gpu_state.positions, cpu_state.positions, rtol=0, atol=2e-5)
    np.testing.assert_allclose(gpu_state.velocities, cpu_state.velocities, rtol=0, atol=1e-2)
    assert np.median(np.abs(gpu_state.positions - cpu_state.positions)[touched]) < 1e-7
    assert np.median(np.abs(gpu_state.velocities - cpu_state.velocities)[touched]) < 1e-5


@pytest.mark.parametrize("shape, thickness", [("box", 0.0), ("sphere", 0.004)])
def test_fast_throws_never_pass_through_a_closed_collider(gpu_name, shape, thickness, rng):
    setup, check = throw_scene(shape, thickness, rng, friction_model="damper")
    backend, state = run_gpu(gpu_name, setup, 0.1)
    check(state, backend.colliders.swept_corrections)


def test_rotating_paddle_stirs_a_pile(gpu_name, rng):
    setup, check = paddle_scene(rng, friction_model="damper")
    check(run_gpu(gpu_name, setup, 0.4)[1])


def test_open_bowl_holds_grains(gpu_name, rng):
    setup, check = bowl_scene(rng, friction_model="damper")
    check(run_gpu(gpu_name, setup, 0.6)[1])


def test_deforming_plane_pushes_grains_up(gpu_name, rng):
    setup, check = lift_scene(rng, friction_model="damper")
    check(run_gpu(gpu_name, setup, 0.5)[1])


def test_open_bowl_holds_grains_with_static_friction(gpu_name, rng):
    """friction_model 'spring' with a frictional collider runs on the GPU (it was refused): the grains
    settle in the bowl and come to rest, as on the CPU (tests/engine/test_colliders.py)."""
    setup, check = bowl_scene(rng, friction_model="spring")
    check(run_gpu(gpu_name, setup, 0.6)[1])


def test_collider_springs_survive_a_history_round_trip(gpu_name, rng):
    """The grain–collider springs a GPU backend hands out (the CPU's history format) resume on the CPU
    backend and on a fresh GPU backend, and the next steps agree with the run that went on (not run:
    no GPU where this was written)."""
    setup, _ = bowl_scene(rng, friction_model="spring")
    backend, _ = run_gpu(gpu_name, setup, 0.3)
    state = backend.get_state()
    history = backend.get_contact_history()
    assert len(history["collider_index"]) > 20 and np.abs(history["collider_spring"]).max() > 0.0
    backend.step(200)
    went_on = backend.get_state()
    for name in ("cpu", gpu_name):
        other = make_gpu_backend(name, setup.model) if name != "cpu" else make_backend("cpu", setup.model)
        other.set_state(state)
        other.set_contact_history(history)
        other.step(200)
        # Not bit for bit (another backend, or the same one from model order: other float32 sums), but the
        # restored springs keep the resting grains where they were: a grain diameter at most, most far closer.
        moved = np.abs(other.get_state().positions - went_on.positions).max(axis=1)
        assert moved.max() < 1e-2 and np.median(moved) < 1e-4, (name, moved.max(), np.median(moved))


def test_mesh_slope_and_ceiling_as_on_the_cpu(gpu_name):
    """Rolling resistance and cohesion against a mesh on the GPU: a grain holds on a 10° mesh slope with
    μ_r > tan θ, rolls at 5/7 g (sin θ − μ_r cos θ) below it, hangs under a mesh ceiling against 0.3 of
    the cohesive strength and falls at 1.5 of it (tests/engine/test_collider_rolling_cohesion.py)."""
    import math

    from ..engine.test_collider_rolling_cohesion import G, R, THETA, _hanging_grain, _slope

    def make(model):
        return make_gpu_backend(gpu_name, model)

    mu_r = 0.5 * math.tan(THETA)
    t, x = _slope("mesh", mu_r, make=make)
    late = t > 0.02
    acceleration = 2.0 * np.polyfit(t[late], x[late], 2)[0]
    assert acceleration == pytest.approx(5.0 / 7.0 * G * (math.sin(THETA) - mu_r * math.cos(THETA)), rel=0.02)
    t, x = _slope("mesh", 1.5 * math.tan(THETA), make=make)
    held = x[t > 0.1]
    assert np.abs(held - held[0]).max() < 1e-3 * R
    assert _hanging_grain("mesh", 0.3, make=make) < R
    assert _hanging_grain("mesh", 1.5, make=make) > R + 0.05
